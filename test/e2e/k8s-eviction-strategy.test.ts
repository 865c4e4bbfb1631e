import { afterEach, describe, expect, it } from 'vitest';
import type { K8sSim } from '../../simulators/kubernetes/index.ts';
import { kubevirtApp, type KubevirtTestApp } from '../support/kubevirt-app.ts';
import { VirtualClock } from '../support/virtual-clock.ts';
import { drive } from '../support/virtual-drive.ts';

// Literals, not imported from the code under test: a changed value must fail here (issue 26).
const MAINTENANCE_STRATEGY_LABEL = 'harvesterhci.io/maintain-mode-strategy';
const MANAGED_BY = 'lockkeeper';
const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
const TRACKING_NODE_ANNOTATION = 'harvesterhci.io/maintain-mode-strategy-node-name';

/** k8s:scenario-4 through GraphQL: Migrate/unlabelled VMs leave by their KubeVirt eviction strategy (k8s:E1, k8s:E4, k8s:E5). */
let t: KubevirtTestApp;
afterEach(async () => {
  await t?.stop();
});

async function gql(query: string) {
  const res = await t.gql(query);
  if (res.errors) throw new Error(JSON.stringify(res.errors));
  return res.data;
}

function seed(sim: K8sSim): void {
  for (const n of ['n1', 'n2', 'n3']) sim.addNode(n, { roles: ['worker'] });
  sim.addVm({ name: 'lm', nodeName: 'n1', evictionStrategy: 'LiveMigrate' });
  sim.addVm({ name: 'none', nodeName: 'n1', evictionStrategy: 'None' });
  sim.addVm({ name: 'ifp', nodeName: 'n1', evictionStrategy: 'LiveMigrateIfPossible', gpu: true });
  sim.addVm({ name: 'ext', nodeName: 'n1', evictionStrategy: 'External' });
  sim.addVm({ name: 'sd', nodeName: 'n1', evictionStrategy: 'LiveMigrate', labels: { [MAINTENANCE_STRATEGY_LABEL]: 'Shutdown' } });
  sim.addVm({ name: 'plain', nodeName: 'n1' });
}

describe('k8s:scenario-4: eviction strategies', () => {
  it('LiveMigrate → our VMIM; None → launcher pod evicted, run strategy untouched; IfPossible not migratable → refused, halted under force; External → waitingOn, ERROR; Shutdown wins over LiveMigrate', async () => {
    const clock = new VirtualClock();
    t = await kubevirtApp(seed, {}, {}, { clock, plugin: { vmActionTimeoutMs: 3_600_000, migrationBackstopMs: 3_600_000 } });
    const plan = (
      await gql(`{ maintenancePlan(nodeId: "n1") { accepted refusals { code blockers { id } } warnings vms { vmId action evictionStrategy blocksEnable } } }`)
    ).maintenancePlan;
    const byVm = Object.fromEntries(plan.vms.map((v: { vmId: string }) => [v.vmId, v]));
    expect(byVm['default/lm']).toMatchObject({ action: 'MIGRATE', evictionStrategy: 'LiveMigrate', blocksEnable: false });
    expect(byVm['default/none']).toMatchObject({ action: 'EVICT', evictionStrategy: 'None' });
    expect(byVm['default/ifp']).toMatchObject({ action: 'STOP', evictionStrategy: 'LiveMigrateIfPossible', blocksEnable: true });
    expect(byVm['default/ext']).toMatchObject({ action: 'EXTERNAL', evictionStrategy: 'External' });
    expect(byVm['default/sd']).toMatchObject({ action: 'STOP', evictionStrategy: 'LiveMigrate' });
    expect(byVm['default/plain']).toMatchObject({ action: 'MIGRATE', evictionStrategy: null });
    // k8s:E5 Decision: unset anywhere → live migration, and the plan says so.
    expect(plan.warnings.join('\n')).toMatch(/1 VM\(s\) have no eviction strategy .*KubeVirt's default None would evict them.*: default\/plain/);
    expect(plan.refusals).toEqual([{ code: 'NON_MIGRATABLE_VMS', blockers: [{ id: 'default/ifp' }] }]);

    const refused = (await gql(`mutation { r: enableMaintenanceMode(nodeId: "n1") { __typename ... on PreconditionFailedError { reason } } }`)).r;
    expect(refused).toEqual({ __typename: 'PreconditionFailedError', reason: 'NON_MIGRATABLE_VMS' });
    expect(t.sim.migrations('default')).toEqual([]);

    const op = (await gql(`mutation { r: enableMaintenanceMode(nodeId: "n1", force: true, deadlineSeconds: 600) { ... on Operation { id } } }`)).r;
    const opState = async () =>
      (await gql(`{ operation(id: "${op.id}") { ... on Operation { state error waitingOn { description workloadIds } } } }`)).operation;
    await drive(
      clock,
      async () => {
        const w = (await opState()).waitingOn;
        return w !== null && w.workloadIds.length === 1 && w.workloadIds[0] === 'default/ext';
      },
      { stepMs: 1000 },
    );
    expect((await opState()).waitingOn.description).toContain('default/ext: eviction strategy External: waiting for an external controller');
    await drive(clock, async () => (await opState()).state === 'FAILED', { stepMs: 1000 });
    const ended = await opState();
    expect(ended.error).toMatch(/^DEADLINE_EXCEEDED: still on the node: default\/ext \(eviction strategy External/);

    const vm = (name: string) => t.sim.vm('default', name)!;
    const migrationsOf = (name: string) => t.sim.migrations('default').filter((m) => m.spec?.vmiName === name);
    const evictedPods = t.sim.calls.filter((c) => c.resource === 'pods/eviction').map((c) => c.name);
    // LiveMigrate and unset: our own VMIM each.
    for (const name of ['lm', 'plain']) {
      expect(migrationsOf(name)).toHaveLength(1);
      expect(migrationsOf(name)[0]!.metadata.labels?.[MANAGED_BY_LABEL]).toBe(MANAGED_BY);
      expect(t.sim.vmi('default', name)!.status.nodeName).not.toBe('n1');
    }
    // None: its launcher pod evicted (and nothing else), run strategy untouched, no tracking; KubeVirt started it elsewhere.
    expect(evictedPods).toHaveLength(1);
    expect(evictedPods[0]).toMatch(/^virt-launcher-none-/);
    expect(migrationsOf('none')).toEqual([]);
    expect(vm('none').spec.runStrategy).toBe('Always');
    expect(vm('none').metadata.annotations?.[TRACKING_NODE_ANNOTATION]).toBeUndefined();
    // (the launcher pod had the drain's 180 s grace, k8s:K4)
    expect(t.sim.vmi('default', 'none')!.status.nodeName).not.toBe('n1');
    // IfPossible and not migratable: halted under force (k8s:E4), never migrated or evicted.
    expect(vm('ifp').spec.runStrategy).toBe('Halted');
    expect(migrationsOf('ifp')).toEqual([]);
    // Shutdown wins over LiveMigrate: halted, never migrated or evicted.
    expect(vm('sd').spec.runStrategy).toBe('Halted');
    expect(migrationsOf('sd')).toEqual([]);
    // External: untouched, still on n1.
    expect(vm('ext').spec.runStrategy).toBe('Always');
    expect(t.sim.vmi('default', 'ext')!.status.nodeName).toBe('n1');
    expect(migrationsOf('ext')).toEqual([]);
    expect(evictedPods.some((p) => p?.includes('-ext-'))).toBe(false);
    // k8s:C8: Lockkeeper never evicts a launcher pod KubeVirt would mark for evacuation, so no VMI
    // carries status.evacuationNodeName and disable has no evacuation to cancel (README: no evacuate-cancel).
    expect(t.sim.store.list(t.sim.def('virtualmachineinstances', 'kubevirt.io')).filter((v) => v.status?.evacuationNodeName)).toEqual([]);
  }, 120_000);
});
