import { afterEach, describe, expect, it } from 'vitest';
import { createKubevirtBackend, type KubevirtBackend } from '../../../plugins/kubevirt/index.ts';
import { MAINTENANCE_STRATEGY_LABEL } from '../../../src/domain/labels.ts';
import { clusterRoleRules } from '../../support/deploy-rbac.ts';
import { K8sSim, type PolicyRule } from '../../../simulators/kubernetes/index.ts';

const triples = (rules: PolicyRule[]) =>
  new Set(rules.flatMap((r) => r.apiGroups.flatMap((g) => r.resources.flatMap((res) => r.verbs.map((v) => `${v} ${res}.${g}`)))));

let sim: K8sSim;
let backend: KubevirtBackend | null = null;
afterEach(async () => {
  await backend?.close();
  await sim?.close();
  backend = null;
});

describe('deploy/rbac.yaml: least privilege', () => {
  it('the ClusterRole grants exactly what the plugin calls, with the API server enforcing it', async () => {
    const rules = clusterRoleRules();
    expect(rules.flatMap((r) => [...r.apiGroups, ...r.resources, ...r.verbs])).not.toContain('*');
    sim = await K8sSim.start();
    sim.setRules(rules);
    sim.addNode('node-1');
    sim.addNode('node-2');
    sim.addPvc('default', 'disk');
    sim.addReplica('pvc-disk', 'node-1', true);
    sim.addVm({ name: 'vm', nodeName: 'node-1', claims: ['disk'] });
    backend = await createKubevirtBackend({ kubeconfigPath: sim.kubeconfigFile() });

    // Every method the maintenance engine uses, each path that calls the API.
    await backend.listNodes();
    await backend.getNode('node-1');
    await backend.getNodes(['node-1']);
    await backend.listVms();
    await backend.getVm('default/vm');
    await backend.getVms(['default/vm']);
    await backend.cordonNode('node-2');
    await backend.uncordonNode('node-2');
    await backend.setVmMaintenanceStrategyLabel('default/vm', 'Shutdown');
    await backend.setVmTracking('default/vm', { nodeName: 'node-1', strategy: 'ShutdownAndRestartAfterDisable', savedRunStrategy: 'Always' });
    await backend.setVmTracking('default/vm', null);
    await backend.migrateVm('default/vm', { fromNodeId: 'node-1', toNodeId: 'node-2' });
    await backend.stopVm('default/vm');
    await backend.startVm('default/vm', { runStrategy: 'Always', nodeId: 'node-1' });
    await backend.setVmMaintenanceStrategyLabel('default/vm', null);
    expect(sim.vm('default', 'vm')!.metadata.labels?.[MAINTENANCE_STRATEGY_LABEL]).toBeUndefined();

    const called = new Set(sim.calls.map((c) => `${c.verb} ${c.resource}.${c.group}`));
    // Nothing was refused (the calls above all succeeded), and nothing granted goes unused.
    expect([...called].sort()).toEqual([...triples(rules)].sort());
  });
});
