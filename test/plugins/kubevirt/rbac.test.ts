import { afterEach, describe, expect, it } from 'vitest';
import { createKubevirtBackend, type KubevirtBackend } from '../../../plugins/kubevirt/index.ts';

import { clusterRoleRules } from '../../support/deploy-rbac.ts';
import { K8sSim, type PolicyRule } from '../../../simulators/kubernetes/index.ts';
import { eventually } from '../../support/kubevirt-app.ts';

// Literals, not imported from the code under test: a changed value must fail here (issue 26).
const MAINTENANCE_STRATEGY_LABEL = 'harvesterhci.io/maintain-mode-strategy';

const triples = (rules: PolicyRule[]) =>
  new Set(rules.flatMap((r) => r.apiGroups.flatMap((g) => r.resources.flatMap((res) => r.verbs.map((v) => `${v} ${res}.${g}`)))));

let sim: K8sSim;
let backend: KubevirtBackend | null = null;
let harvesterSim: K8sSim | null = null;
let harvesterBackend: KubevirtBackend | null = null;
afterEach(async () => {
  await backend?.close();
  await sim?.close();
  await harvesterBackend?.close();
  await harvesterSim?.close();
  backend = null;
  harvesterBackend = null;
  harvesterSim = null;
});

describe('deploy/rbac.yaml: least privilege', () => {
  it('the ClusterRole grants exactly what the plugin calls, with the API server enforcing it', async () => {
    const rules = clusterRoleRules();
    expect(rules.flatMap((r) => [...r.apiGroups, ...r.resources, ...r.verbs])).not.toContain('*');
    sim = await K8sSim.start({ msPerGraceSecond: 1 });
    sim.setRules(rules);
    sim.addNode('node-1');
    sim.addNode('node-2');
    sim.addNode('node-3');
    sim.addPvc('default', 'disk');
    sim.addReplica('pvc-disk', 'node-1', true);
    sim.addVm({ name: 'vm', nodeName: 'node-1', claims: ['disk'] });
    sim.addVm({ name: 'evicted', nodeName: 'node-2', evictionStrategy: 'None' });
    sim.addVm({ name: 'held', nodeName: 'node-2' });
    sim.addPod({ name: 'agent', nodeName: 'node-2', owner: { kind: 'DaemonSet', name: 'agent' } });
    sim.addPod({ name: 'web', nodeName: 'node-2', owner: { kind: 'ReplicaSet', name: 'web' } });
    // A completion bound of 1 s per GiB: the held migration's backstop (0.5 s past it) comes soon.
    sim.setKubevirtConfig({ evictionStrategy: 'LiveMigrate', migrations: { completionTimeoutPerGiB: 1 } });
    sim.setHarvesterUpgrade(false);
    sim.setHarvesterUpgradePlan('Succeeded');
    sim.holdMigrations({ running: (m) => m.spec?.vmiName === 'held', monitor: false });
    backend = await createKubevirtBackend({
      kubeconfigPath: sim.kubeconfigFile(),
      migrationBackstopMs: 500,
      nodeDown: { enable: true, period: 1, vmMigrationTimeout: 1 },
    });

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
    // The pod drain (k8s:K1, k8s:K5, k8s:K8) and a None VM's eviction (k8s:E5).
    const pods = await backend.podDrain.listNodePods('node-2', '');
    expect(pods.find((p) => p.name === 'agent')?.controllerFound).toBe(true);
    expect(await backend.podDrain.evictPod({ namespace: 'default', name: 'web' }, 0)).toEqual({ kind: 'EVICTED' });
    await backend.podDrain.podGone({ namespace: 'default', name: 'web', uid: pods.find((p) => p.name === 'web')!.uid });
    expect(await backend.podDrain.evictVmPod('default/evicted', 0)).toEqual({ kind: 'EVICTED' });
    // Harvester's node state (k8s:H3, k8s:H4) and migration cancel (k8s:C9): a held migration times out and is deleted.
    await backend.nodeMaintenance.markMaintenance('node-2', 'REQUESTED', { forced: false });
    await backend.nodeMaintenance.clearMaintenance('node-2');
    await expect(backend.migrateVm('default/held', { fromNodeId: 'node-2' })).rejects.toThrow(/cancelled \(deleted\)/);
    expect(await backend.nodeMaintenance.cancelMigrations('node-2')).toEqual([]);
    // Node down (k8s:U3): the drain taint and the Drained condition (nodes/status).
    sim.setNodeReady('node-3', false);
    await eventually(() => (sim.node('node-3')!.status.conditions ?? []).some((c: { type: string }) => c.type === 'Drained'));
    await backend.confirmNodeDown('node-3');
    // A rehearsal's snapshot (issue 33): budgets and MigrationPolicies; Harvester's settings only in Harvester mode, below.
    sim.addPdb('default', 'web', { matchLabels: { app: 'web' }, maxUnavailable: 1 });
    sim.addMigrationPolicy('fast', { bandwidthPerMigration: '1Gi' });
    expect(await backend.snapshot()).toHaveLength(1);

    // Harvester mode: the snapshot reads the allowlisted settings by name, which the role grants and nothing else.
    harvesterSim = await K8sSim.start({ harvester: true });
    harvesterSim.setRules(rules);
    harvesterSim.addNode('node-1');
    harvesterSim.store.create(harvesterSim.def('settings', 'harvesterhci.io'), {
      metadata: { name: 'vm-force-reset-policy' },
      value: '{"enable":true,"period":15}',
    });
    harvesterSim.store.create(harvesterSim.def('settings', 'harvesterhci.io'), { metadata: { name: 'ssl-certificates' }, value: '{"privateKey":"k"}' });
    harvesterBackend = await createKubevirtBackend({ kubeconfigPath: harvesterSim.kubeconfigFile() });
    const [taken] = await harvesterBackend.snapshot();
    expect(JSON.stringify(taken)).toContain('"period\\":15');
    expect(JSON.stringify(taken)).not.toContain('privateKey');
    const refused = [...sim.calls, ...harvesterSim.calls].filter((c) => c.verb === 'get' && c.resource === 'settings' && c.name === 'ssl-certificates');
    expect(refused).toEqual([]);

    const called = new Set([...sim.calls, ...harvesterSim.calls].map((c) => `${c.verb} ${c.resource}.${c.group}`));
    // Nothing was refused (the calls above all succeeded), and nothing granted goes unused.
    expect([...called].sort()).toEqual([...triples(rules)].sort());
  });
});
