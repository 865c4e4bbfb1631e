import { afterEach, describe, expect, it } from 'vitest';
import { DRAIN_REQUESTED, MAINTAIN_STATUS, type K8sSim, type RecordedCall } from '../../simulators/kubernetes/index.ts';
import { eventually, kubevirtApp, type KubevirtTestApp } from '../support/kubevirt-app.ts';
import { VirtualClock } from '../support/virtual-clock.ts';
import { drive } from '../support/virtual-drive.ts';

// Literals, not imported from the code under test: a changed value must fail here (issue 26).
const MAINTENANCE_STRATEGY_LABEL = 'harvesterhci.io/maintain-mode-strategy';
const TRACKING_NODE_ANNOTATION = 'harvesterhci.io/maintain-mode-strategy-node-name';

/** k8s:scenario-9 through GraphQL: on a Harvester cluster Lockkeeper requests and follows; Harvester's controllers act (k8s:H2, k8s:H9). */
let t: KubevirtTestApp;
afterEach(async () => {
  await t?.stop();
});

async function gql(query: string) {
  const res = await t.gql(query);
  if (res.errors) throw new Error(JSON.stringify(res.errors));
  return res.data;
}
const phase = () => t.app.maintenance.stateOf('n1')?.phase ?? null;
/** What Lockkeeper itself wrote (the simulated Harvester and KubeVirt write to the store, not over HTTP). */
const writes = (): RecordedCall[] => t.sim.calls.filter((c) => !['get', 'list', 'watch'].includes(c.verb));

function seed(sim: K8sSim): void {
  for (const n of ['n1', 'n2', 'n3']) sim.addNode(n, { roles: ['worker'] });
  sim.addVm({ name: 'web', nodeName: 'n1', evictionStrategy: 'LiveMigrate' });
  sim.addVm({ name: 'batch', nodeName: 'n1', evictionStrategy: 'LiveMigrate', labels: { [MAINTENANCE_STRATEGY_LABEL]: 'ShutdownAndRestartAfterDisable' } });
  sim.addPod({ name: 'api-1', nodeName: 'n1', owner: { kind: 'ReplicaSet', name: 'api' }, labels: { app: 'api' } });
}

describe('k8s:scenario-9: delegation to Harvester', () => {
  it('enable writes only the request, follows DRAINING → EVACUATING → COMPLETED from Harvester, disable does what Harvester’s API does, Lockkeeper itself halts, migrates and evicts nothing', async () => {
    t = await kubevirtApp(seed, {}, { harvester: true, msPerGraceSecond: 1, harvesterRetryMs: 50 });
    const { port } = await t.app.start(0, '127.0.0.1');
    const health = await (await fetch(`http://127.0.0.1:${port}/healthz`)).json();
    expect(health.maintenance).toEqual({ mode: 'delegate', controller: 'Harvester', reason: 'CRD settings.harvesterhci.io found at start' });
    const plan = (await gql(`{ maintenancePlan(nodeId: "n1") { accepted delegatedTo { controller reason } } }`)).maintenancePlan;
    expect(plan).toEqual({ accepted: true, delegatedTo: { controller: 'Harvester', reason: 'CRD settings.harvesterhci.io found at start' } });

    const from = t.sim.calls.length;
    const op = (await gql(`mutation { r: enableMaintenanceMode(nodeId: "n1") { ... on Operation { id } } }`)).r;
    await eventually(() => phase() === 'COMPLETED');
    const log = (await gql(`{ eventLog(after: 0, first: 100, nodeId: "n1") { events { type payload } } }`)).eventLog.events;
    const phases = log.filter((e: { type: string }) => e.type === 'MAINTENANCE_PHASE_CHANGED').map((e: { payload: { to: string } }) => e.payload.to);
    expect(phases).toEqual(['DRAINING', 'EVACUATING', 'COMPLETED']);
    await eventually(async () => (await gql(`{ operation(id: "${op.id}") { ... on Operation { state } } }`)).operation.state === 'SUCCEEDED');
    // Lockkeeper wrote exactly Harvester's API request; everything else was Harvester's and KubeVirt's doing.
    expect(t.sim.calls.slice(from).filter((c) => !['get', 'list', 'watch'].includes(c.verb))).toEqual([
      expect.objectContaining({ verb: 'patch', resource: 'nodes', name: 'n1', body: { metadata: { annotations: { [DRAIN_REQUESTED]: 'true' } } } }),
    ]);
    expect(t.sim.node('n1')!.metadata.annotations?.[MAINTAIN_STATUS]).toBe('completed');
    expect(t.sim.node('n1')!.spec.unschedulable).toBe(true);
    expect(t.sim.vm('default', 'batch')!.spec.runStrategy).toBe('Halted');
    expect(t.sim.vm('default', 'batch')!.metadata.annotations?.[TRACKING_NODE_ANNOTATION]).toBe('n1');
    expect(t.sim.vmi('default', 'web')!.status.nodeName).not.toBe('n1');
    // KubeVirt evacuated it after Harvester's eviction of its launcher pod (k8s:E2, k8s:E4).
    expect(t.sim.migrations('default').map((m) => m.metadata.generateName)).toEqual(['kubevirt-evacuation-']);
    expect(t.sim.pod('default', 'api-1')).toBeNull();

    // Disable: k8s:H4's node update, and the RestartAfterDisable VM Harvester tracked is started again.
    const before = writes().length;
    const result = (await gql(`mutation { r: disableMaintenanceMode(nodeId: "n1") { ... on DisableMaintenanceResult { restartedVmIds node { cordoned } } } }`))
      .r;
    expect(result).toEqual({ restartedVmIds: ['default/batch'], node: { cordoned: false } });
    expect(writes()[before]).toMatchObject({
      verb: 'patch',
      resource: 'nodes',
      body: { metadata: { annotations: { [MAINTAIN_STATUS]: null } }, spec: { unschedulable: null } },
    });
    expect(t.sim.node('n1')!.metadata.annotations ?? {}).toEqual({});
    expect(t.sim.vm('default', 'batch')!.spec.runStrategy).toBe('Always');
  });

  it('a Harvester failure (its control-plane check refuses two control-plane nodes) shows as ERROR with its message', async () => {
    t = await kubevirtApp(
      (sim) => {
        sim.addNode('n1', { roles: ['control-plane'] });
        sim.addNode('n2', { roles: ['control-plane'] });
        sim.addNode('n3', { roles: ['worker'] });
        sim.addVm({ name: 'web', nodeName: 'n1' });
      },
      {},
      { harvester: true, harvesterRetryMs: 50 },
    );
    // Lockkeeper's own quorum rule (vm:P4) accepts it; Harvester's (k8s:H8) does not.
    expect((await gql(`{ maintenancePlan(nodeId: "n1") { accepted } }`)).maintenancePlan.accepted).toBe(true);
    const op = (await gql(`mutation { r: enableMaintenanceMode(nodeId: "n1") { ... on Operation { id } } }`)).r;
    await eventually(() => phase() === 'ERROR');
    const ended = async () => (await gql(`{ operation(id: "${op.id}") { ... on Operation { state error } } }`)).operation;
    await eventually(async () => (await ended()).state === 'FAILED');
    expect((await ended()).error).toBe(
      "HARVESTER_FAILED: Harvester's controller removed the maintenance request from node n1: draining of this node is not possible: another controlplane is already in maintenance mode, cannot place current node in maintenance mode",
    );
    expect(t.sim.harvester!.lastError.get('n1')).toContain('another controlplane is already in maintenance mode');
    expect(t.sim.node('n1')!.metadata.annotations ?? {}).toEqual({});
    expect(t.sim.migrations('default')).toEqual([]);
  });

  it("Lockkeeper's deadline still applies while Harvester works: waitingOn names the VM Harvester is moving, ERROR at the deadline (k8s:H9, vm:M5)", async () => {
    const clock = new VirtualClock();
    t = await kubevirtApp(
      (sim) => {
        for (const n of ['n1', 'n2', 'n3']) sim.addNode(n, { roles: ['worker'] });
        sim.addVm({ name: 'web', nodeName: 'n1', evictionStrategy: 'LiveMigrate' });
        // KubeVirt's evacuation migration never gets its target pod scheduled.
        sim.holdMigrations({ pending: () => true });
      },
      {},
      { harvester: true, harvesterRetryMs: 1000 },
      { clock, plugin: { vmActionTimeoutMs: 3_600_000, migrationBackstopMs: 3_600_000 } },
    );
    const op = (await gql(`mutation { r: enableMaintenanceMode(nodeId: "n1", deadlineSeconds: 20) { ... on Operation { id } } }`)).r;
    const state = async () => (await gql(`{ operation(id: "${op.id}") { ... on Operation { state error waitingOn { workloadIds description } } } }`)).operation;
    await drive(clock, async () => (await state()).waitingOn?.workloadIds?.includes('default/web') === true, { stepMs: 1000 });
    expect((await state()).waitingOn.description).toContain('handled by Harvester');
    await drive(clock, async () => (await state()).state === 'FAILED', { stepMs: 1000 });
    expect((await state()).error).toBe("DEADLINE_EXCEEDED: Harvester's controllers did not finish (maintain-status not set); still on the node: default/web");
    expect(phase()).toBe('ERROR');
    // Harvester's eviction made KubeVirt try; Lockkeeper itself created no migration.
    expect(t.sim.migrations('default').map((m) => m.metadata.generateName)).toEqual(['kubevirt-evacuation-']);
    expect(t.sim.calls.filter((c) => c.resource === 'virtualmachineinstancemigrations' && c.verb === 'create')).toEqual([]);
  });

  it('under force Harvester halts only the non-migratable VMs and ignores the strategy labels, and the plan says so (k8s:H2 step 3)', async () => {
    t = await kubevirtApp(
      (sim) => {
        for (const n of ['n1', 'n2', 'n3']) sim.addNode(n, { roles: ['worker'] });
        sim.addVm({ name: 'gpu', nodeName: 'n1', gpu: true });
        sim.addVm({
          name: 'later',
          nodeName: 'n1',
          evictionStrategy: 'LiveMigrate',
          labels: { [MAINTENANCE_STRATEGY_LABEL]: 'ShutdownAndRestartAfterDisable' },
        });
      },
      {},
      { harvester: true, msPerGraceSecond: 1, harvesterRetryMs: 50 },
    );
    const plan = (await gql(`{ maintenancePlan(nodeId: "n1", force: true) { accepted warnings } }`)).maintenancePlan;
    expect(plan.accepted).toBe(true);
    expect(plan.warnings).toContain(
      "under force Harvester's controller ignores the maintenance-strategy label (it halts only non-migratable VMs and tracks none): default/later will be evicted by their eviction strategy and not restarted by maintenance",
    );
    expect((await gql(`{ maintenancePlan(nodeId: "n1") { warnings } }`)).maintenancePlan.warnings.join('\n')).not.toContain(
      'ignores the maintenance-strategy label',
    );
    await gql(`mutation { r: enableMaintenanceMode(nodeId: "n1", force: true) { __typename } }`);
    await eventually(() => phase() === 'COMPLETED');
    expect(t.sim.vm('default', 'gpu')!.spec.runStrategy).toBe('Halted');
    // The labelled VM was live-migrated by KubeVirt after Harvester's eviction of its launcher pod, untracked.
    expect(t.sim.vm('default', 'later')!.spec.runStrategy).toBe('Always');
    expect(t.sim.vm('default', 'later')!.metadata.annotations?.[TRACKING_NODE_ANNOTATION]).toBeUndefined();
    expect(t.sim.vmi('default', 'later')!.status.nodeName).not.toBe('n1');
  });
});
