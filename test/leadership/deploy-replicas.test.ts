/**
 * deploy/replicas.yaml (issue 13 §6): a 3-replica Deployment whose database URL comes from a
 * Secret, readiness from /readyz (liveness /healthz), a PodDisruptionBudget for Lockkeeper itself, and a config
 * Lockkeeper accepts. (Validation against Kubernetes' own schema waits for kubernetes-models,
 * which s12's Kubernetes work brings in.)
 */
import { readFileSync } from 'node:fs';
import { loadAllYaml } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { configSchema } from '../../src/config/schema.ts';

const docs = loadAllYaml(readFileSync(new URL('../../deploy/replicas.yaml', import.meta.url), 'utf8')) as { kind: string }[];
const byKind = (kind: string) => docs.find((d) => d.kind === kind) as any;

describe('deploy/replicas.yaml', () => {
  it('holds a ConfigMap, a Deployment and a PodDisruptionBudget of the stable API versions', () => {
    expect(docs.map((d) => `${(d as any).apiVersion} ${d.kind}`)).toEqual(['v1 ConfigMap', 'apps/v1 Deployment', 'policy/v1 PodDisruptionBudget']);
  });

  it('runs three replicas on the database URL from a Secret, ready by /readyz, at most one disrupted at a time', () => {
    const deployment = byKind('Deployment');
    expect(deployment.spec.replicas).toBe(3);
    const container = deployment.spec.template.spec.containers[0];
    const env = Object.fromEntries(container.env.map((e: any) => [e.name, e]));
    expect(env.LOCKKEEPER_DATABASE_URL.valueFrom.secretKeyRef).toEqual({ name: 'lockkeeper-database', key: 'url' });
    expect(env.LOCKKEEPER_ADVERTISE_URL.value).toBe('http://$(POD_IP):4000');
    expect(container.readinessProbe.httpGet.path).toBe('/readyz');
    expect(container.livenessProbe.httpGet.path).toBe('/healthz');
    const pdb = byKind('PodDisruptionBudget');
    expect(pdb.spec.minAvailable).toBe(2);
    expect(pdb.spec.selector.matchLabels).toEqual(deployment.spec.selector.matchLabels);
  });

  it('ships a config Lockkeeper accepts', () => {
    const config = configSchema.parse(JSON.parse(byKind('ConfigMap').data['lockkeeper.json']));
    expect(config.ha).toMatchObject({ leaseTtlMs: 10_000, leaseRenewMs: 2000 });
  });
});
