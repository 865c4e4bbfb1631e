import { readFileSync } from 'node:fs';
import { loadAllYaml } from '@kubernetes/client-node';
import type { PolicyRule } from '../../simulators/kubernetes/index.ts';

const deployDir = new URL('../../deploy/', import.meta.url);

/** The rules of the ClusterRole shipped in deploy/rbac.yaml. */
export function clusterRoleRules(): PolicyRule[] {
  const docs = loadAllYaml(readFileSync(new URL('rbac.yaml', deployDir), 'utf8')) as { kind: string; rules?: PolicyRule[] }[];
  const role = docs.find((d) => d.kind === 'ClusterRole');
  if (!role?.rules) throw new Error('deploy/rbac.yaml has no ClusterRole with rules');
  return role.rules;
}

/** The shipped ClusterRole without one verb on one resource (a cluster whose role lags behind the plugin). */
export function clusterRoleRulesWithout(missing: { group: string; resource: string; verb: string }): PolicyRule[] {
  return clusterRoleRules().flatMap((r) => {
    if (!r.apiGroups.includes(missing.group) || !r.resources.includes(missing.resource)) return [r];
    const rest = r.resources.filter((x) => x !== missing.resource);
    const verbs = r.verbs.filter((v) => v !== missing.verb);
    return [...(rest.length ? [{ ...r, resources: rest }] : []), ...(verbs.length ? [{ ...r, resources: [missing.resource], verbs }] : [])];
  });
}
