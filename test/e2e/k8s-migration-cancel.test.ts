import { afterEach, describe, expect, it } from 'vitest';
import { EVACUATION_ANNOTATION, MIGRATION_JOB_LABEL, type K8sObject, type K8sSim } from '../../simulators/kubernetes/index.ts';
import { eventually, kubevirtApp, type KubevirtTestApp } from '../support/kubevirt-app.ts';
import type { OperationSettings } from '../../src/config/schema.ts';
import { VirtualClock } from '../support/virtual-clock.ts';
import { drive } from '../support/virtual-drive.ts';

// Literals, not imported from the code under test: a changed value must fail here (issue 26).
const MANAGED_BY = 'lockkeeper';
const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';

/** k8s:scenario-5 through GraphQL: Lockkeeper cancels its own migrations, and only those (k8s:C1–C5, k8s:C9). */
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
const DISABLE = `mutation { r: disableMaintenanceMode(nodeId: "n1") { __typename
  ... on DisableMaintenanceResult { cancelledMigrations { vmId migration nodeId } node { cordoned } } ... on Error { message } } }`;
const migrationsOf = (name: string) => t.sim.migrations('default').filter((m) => m.spec?.vmiName === name);
const deletes = () => t.sim.calls.filter((c) => c.resource === 'virtualmachineinstancemigrations' && c.verb === 'delete');

function nodes(sim: K8sSim): void {
  for (const n of ['n1', 'n2', 'n3']) sim.addNode(n, { roles: ['worker'] });
}

/** VM `a` on n1 of three nodes, its migrations held as `holds`, on one virtual clock; the plugin's timeouts an hour unless given. */
async function heldApp(
  clock: VirtualClock,
  holds: Parameters<K8sSim['holdMigrations']>[0],
  { memory, settings = {}, migrationBackstopMs = 3_600_000 }: { memory?: string; settings?: Partial<OperationSettings>; migrationBackstopMs?: number } = {},
): Promise<void> {
  t = await kubevirtApp(
    (sim) => {
      nodes(sim);
      sim.addVm({ name: 'a', nodeName: 'n1', ...(memory !== undefined && { memory }) });
      sim.holdMigrations(holds);
    },
    settings,
    {},
    { clock, plugin: { vmActionTimeoutMs: 3_600_000, migrationBackstopMs } },
  );
}

/** Every migration and when it failed (with KubeVirt's reason), in simulated time. */
function recordMigrations(clock: VirtualClock) {
  const created: { uid: string; at: number }[] = [];
  const failed = new Map<string, { at: number; reason: string }>();
  t.sim.store.subscribe((e) => {
    if (e.resource.kind !== 'VirtualMachineInstanceMigration') return;
    if (e.type === 'ADDED') created.push({ uid: e.object.metadata.uid!, at: clock.now() });
    if (e.object.status?.phase === 'Failed' && !failed.has(e.object.metadata.uid!))
      failed.set(e.object.metadata.uid!, { at: clock.now(), reason: e.object.status.migrationState?.failureReason });
  });
  return { created, failed };
}

describe('k8s:scenario-5: migration cancel', () => {
  it("disable during EVACUATING deletes only Lockkeeper's Pending VMIM: it ends Failed with migrationAbortRequested, target pod gone, VM on the source; KubeVirt's evacuation VMIM stays", async () => {
    t = await kubevirtApp((sim) => {
      nodes(sim);
      sim.addVm({ name: 'a', nodeName: 'n1' });
      sim.addVm({ name: 'b', nodeName: 'n1' });
      // Every migration stays Pending (its target pod unschedulable, as far as anyone can tell).
      sim.holdMigrations({ pending: () => true });
      sim.controller.createMigration('default', 'b', { generateName: 'kubevirt-evacuation-', annotations: { [EVACUATION_ANNOTATION]: 'n1' } });
    });
    const op = (await gql(`mutation { r: enableMaintenanceMode(nodeId: "n1") { ... on Operation { id } } }`)).r;
    await eventually(() => phase() === 'EVACUATING' && migrationsOf('a').length === 1);
    const [ours] = migrationsOf('a');
    const [evacuation] = migrationsOf('b');
    // k8s:C9 (c): the migration Lockkeeper did not create shows in waitingOn as someone else's.
    const waiting = async () => (await gql(`{ operation(id: "${op.id}") { ... on Operation { waitingOn { description } } } }`)).operation.waitingOn;
    await eventually(async () => ((await waiting())?.description ?? '').includes('default/b: migrating by'));
    expect((await waiting()).description).toContain(
      `default/b: migrating by default/${evacuation!.metadata.name}, which Lockkeeper did not create (it waits for it and never cancels it)`,
    );
    expect(ours!.metadata.labels).toMatchObject({ [MANAGED_BY_LABEL]: MANAGED_BY, 'kubevirt.io/vmi-name': 'a' });
    expect(ours!.metadata.finalizers).toEqual(['kubevirt.io/migrationJobFinalize']);
    // k8s:C5: b's migration was joined, not doubled.
    expect(migrationsOf('b')).toHaveLength(1);
    await eventually(() => t.sim.store.list(t.sim.def('pods')).some((p) => p.metadata.labels?.[MIGRATION_JOB_LABEL] === ours!.metadata.uid));
    const history: K8sObject[] = [];
    t.sim.store.subscribe((e) => {
      if (e.object.metadata.uid === ours!.metadata.uid) history.push(structuredClone(e.object));
    });

    const result = (await gql(DISABLE)).r;
    expect(result).toMatchObject({ __typename: 'DisableMaintenanceResult', node: { cordoned: false } });
    expect(result.cancelledMigrations).toEqual([{ vmId: 'default/a', migration: `default/${ours!.metadata.name}`, nodeId: 'n1' }]);
    // Only ours was deleted; it went through Failed with the abort condition, then its finalizer went and so did it.
    expect(deletes().map((c) => c.name)).toEqual([ours!.metadata.name]);
    const failed = history.find((m) => m.status?.phase === 'Failed');
    expect(failed?.status.conditions).toEqual(expect.arrayContaining([{ type: 'migrationAbortRequested', status: 'True' }]));
    expect(history.at(-1)?.metadata.deletionTimestamp).toBeDefined();
    expect(migrationsOf('a')).toEqual([]);
    expect(t.sim.store.list(t.sim.def('pods')).filter((p) => p.metadata.labels?.[MIGRATION_JOB_LABEL] === ours!.metadata.uid)).toEqual([]);
    expect(t.sim.vmi('default', 'a')!.status.nodeName).toBe('n1');
    // k8s:C2: a FailedMigration event says it was canceled.
    expect(t.sim.store.list(t.sim.def('events'), 'default').some((e) => e.reason === 'FailedMigration' && String(e.message).includes('canceled'))).toBe(true);
    // k8s:C9 (c), k8s:C6: KubeVirt's evacuation migration is left alone.
    expect(migrationsOf('b')).toEqual([expect.objectContaining({ metadata: expect.objectContaining({ uid: evacuation!.metadata.uid }) })]);
    expect(migrationsOf('b')[0]!.metadata.deletionTimestamp).toBeUndefined();
    // k8s:C7: Lockkeeper writes none of Harvester's migration annotations.
    for (const v of ['a', 'b'])
      expect(Object.keys(t.sim.vmi('default', v)!.metadata.annotations ?? {}).filter((k) => k.startsWith('harvesterhci.io/migration'))).toEqual([]);
  });

  it('k8s:C3: a Running cancel whose abort ends Failed (the migration won the race) reports the VM on the target', async () => {
    t = await kubevirtApp((sim) => {
      nodes(sim);
      sim.addVm({ name: 'a', nodeName: 'n1' });
      sim.holdMigrations({ running: () => true, abortOutcome: 'Failed' });
    });
    await gql(`mutation { enableMaintenanceMode(nodeId: "n1") { __typename } }`);
    await eventually(() => migrationsOf('a')[0]?.status?.phase === 'Running');
    const target = migrationsOf('a')[0]!.status.migrationState.targetNode;
    const result = (await gql(DISABLE)).r;
    expect(result.cancelledMigrations).toEqual([expect.objectContaining({ vmId: 'default/a', nodeId: target })]);
    expect(target).not.toBe('n1');
    expect(t.sim.vmi('default', 'a')!.status.nodeName).toBe(target);
    expect(t.sim.vmi('default', 'a')!.status.migrationState).toMatchObject({ abortRequested: true, abortStatus: 'Failed', completed: true });
  });

  it("a migration KubeVirt fails to end is cancelled only migrationBackstopMs past KubeVirt's bound, counted from KubeVirt's start, not from its time in the queue", async () => {
    const clock = new VirtualClock();
    let queued = true;
    // 1 GiB: KubeVirt's completion bound is 150 s; its monitor is off, so nothing of KubeVirt's ends the migration.
    await heldApp(
      clock,
      { pending: () => queued, running: () => true, monitor: false },
      { settings: { migrationRetryDelayMs: 600_000 }, migrationBackstopMs: 30_000 },
    );
    let startedAt = 0;
    t.sim.store.subscribe((e) => {
      if (e.resource.kind === 'VirtualMachineInstanceMigration' && e.object.status?.phase === 'Running' && !startedAt) startedAt = clock.now();
    });
    const op = (await gql(`mutation { r: enableMaintenanceMode(nodeId: "n1") { ... on Operation { id } } }`)).r;
    await drive(clock, () => migrationsOf('a').length === 1);
    const first = migrationsOf('a')[0]!;
    const created = clock.now();
    // 200 s in KubeVirt's queue (Pending), then KubeVirt starts it.
    await drive(clock, () => clock.now() >= created + 200_000, { stepMs: 1000 });
    queued = false;
    t.sim.releaseMigrations();
    await drive(clock, () => startedAt > 0, { stepMs: 1000 });
    await drive(clock, () => deletes().length === 1, { stepMs: 1000, maxMs: 900_000 });
    expect(deletes()[0]!.name).toBe(first.metadata.name);
    // 150 s (KubeVirt's bound) + 30 s (the backstop) after KubeVirt's start: the 200 s in the queue do not count.
    expect(deletes()[0]!.at - startedAt).toBeGreaterThanOrEqual(180_000);
    expect(deletes()[0]!.at - startedAt).toBeLessThan(185_000);
    // The abort of a Running migration takes simulated time.
    await drive(clock, () => !migrationsOf('a').some((m) => m.metadata.uid === first.metadata.uid), { stepMs: 100 });
    const step = async () =>
      (await gql(`{ operation(id: "${op.id}") { ... on Operation { steps(first: 5) { edges { node { workloadId state error } } } } } }`)).operation.steps
        .edges[0].node;
    await drive(clock, async () => ((await step()).error ?? '').includes('cancelled'), { stepMs: 100 });
    const s = await step();
    expect(s).toMatchObject({ workloadId: 'default/a', state: 'MOVING' });
    expect(s.error).toMatch(
      /not done 30000 ms past KubeVirt's own bound: migration default\/a-lockkeeper-\w+ cancelled \(deleted\); VM default\/a is on node n1/,
    );
  }, 120_000);

  it('clearMaintenanceError after the deadline deletes the migration Lockkeeper left in flight, and the VM stays on the source (k8s:C9 a)', async () => {
    const clock = new VirtualClock();
    await heldApp(clock, { pending: () => true });
    await gql(`mutation { r: enableMaintenanceMode(nodeId: "n1", deadlineSeconds: 10) { __typename } }`);
    await drive(clock, () => phase() === 'ERROR', { stepMs: 1000 });
    const [ours] = migrationsOf('a');
    expect(ours!.status.phase).toBe('Pending');
    expect(deletes()).toEqual([]);
    const cleared = (await gql(`mutation { r: clearMaintenanceError(nodeId: "n1") { __typename ... on ClusterNode { cordoned } } }`)).r;
    expect(cleared).toEqual({ __typename: 'ClusterNode', cordoned: false });
    expect(deletes().map((c) => c.name)).toEqual([ours!.metadata.name]);
    expect(migrationsOf('a')).toEqual([]);
    expect(t.sim.vmi('default', 'a')!.status.nodeName).toBe('n1');
  });
});

/**
 * k8s:C10 at the engine: a maintenance whose migrate step meets one of KubeVirt's own bounds
 * (here `progressTimeout`, 150 s without transfer progress), on one virtual clock for the
 * simulator, the plugin and the engine.
 */
describe('k8s:C10: a migration KubeVirt fails by its own bound, seen from the maintenance', () => {
  it('the transient failure is retried migrationRetryDelayMs later with a new migration, until the deadline; the operation then ends FAILED, and the step FAILED with TRANSIENT once the attempt in flight fails', async () => {
    const clock = new VirtualClock();
    // 4 GiB: the completion bound (600 s) is far off, so only the progress bound (150 s) fires.
    await heldApp(clock, { running: () => true, transfer: 'stalled' }, { memory: '4Gi', settings: { migrationRetryDelayMs: 10_000 } });
    const { created, failed } = recordMigrations(clock);
    const t0 = clock.now();
    const op = (await gql(`mutation { r: enableMaintenanceMode(nodeId: "n1", deadlineSeconds: 400) { ... on Operation { id } } }`)).r;
    const step = async () =>
      (
        await gql(
          `{ operation(id: "${op.id}") { ... on Operation { state error steps(first: 5) { edges { node { workloadId action state reason error } } } } } }`,
        )
      ).operation;

    // The first failure: the step stays MOVING and says it retries.
    await drive(clock, () => failed.size === 1, { stepMs: 1000, maxMs: 600_000 });
    const first = failed.get(created[0]!.uid)!;
    expect(first.reason).toBe('Live migration stuck for 150 sec and has been aborted');
    await drive(clock, async () => ((await step()).steps.edges[0].node.error ?? '').includes('stuck for 150 sec'), { stepMs: 1000, maxMs: 600_000 });
    expect((await step()).steps.edges[0].node).toMatchObject({ workloadId: 'default/a', action: 'MIGRATE', state: 'MOVING' });
    expect(phase()).toBe('EVACUATING');

    // Retried with a new migration, migrationRetryDelayMs after the failure, and that one fails by the same bound.
    await drive(clock, () => failed.size === 2, { stepMs: 1000, maxMs: 600_000 });
    expect(created).toHaveLength(2);
    expect(failed.get(created[1]!.uid)!.at - created[1]!.at).toBeGreaterThanOrEqual(150_000);

    // The deadline (400 s): the maintenance ends, naming the VM and its transient failure.
    // The node's phase turns ERROR just before the operation's end is committed: wait for both.
    await drive(clock, async () => phase() === 'ERROR' && (await step()).state === 'FAILED', { stepMs: 1000, maxMs: 600_000 });
    const end = await step();
    expect(end.error).toMatch(/^DEADLINE_EXCEEDED: still on the node: default\/a \(migration failed \(.*Live migration stuck for 150 sec/);

    // An attempt still in flight then is left to KubeVirt (clearMaintenanceError would delete it, k8s:C9 a); once it
    // fails by the same bound, past the deadline, it is not retried: the step ends FAILED with TRANSIENT.
    await drive(clock, async () => (await step()).steps.edges[0].node.state === 'FAILED', { stepMs: 1000, maxMs: 200_000 });
    const last = (await step()).steps.edges[0].node;
    expect(last).toMatchObject({ workloadId: 'default/a', state: 'FAILED', reason: 'TRANSIENT' });
    expect(last.error).toMatch(/Live migration stuck for 150 sec and has been aborted \(ended by KubeVirt's progressTimeout \(no progress for that long\)\)$/);
    // Every retry came migrationRetryDelayMs or more after the failure before it, none at or after the deadline.
    expect(created.length).toBeGreaterThanOrEqual(2);
    for (let i = 1; i < created.length; i++) expect(created[i]!.at - failed.get(created[i - 1]!.uid)!.at).toBeGreaterThanOrEqual(10_000);
    expect(created.every((c) => c.at < t0 + 400_000)).toBe(true);
    expect(created.every((c) => failed.has(c.uid))).toBe(true);
    expect(t.sim.vmi('default', 'a')!.status.nodeName).toBe('n1');
  }, 120_000);
});

/** k8s:C10's other two bounds at the engine: the step names KubeVirt's reason, stays MOVING and retries with a new migration. */
describe('k8s:C10: the catch-all pending bound and the per-GiB completion bound, seen from the maintenance', () => {
  const CASES = [
    {
      bound: 'a target pod pending for another reason than unschedulable (900 s)',
      holds: { pending: () => true, pendingCause: 'ContainerCreating' } as Parameters<K8sSim['holdMigrations']>[0],
      memory: '1Gi',
      boundMs: 900_000,
      reason: 'timeout period exceeded',
    },
    {
      bound: 'still copying after 150 s per GiB (2 GiB: 300 s)',
      holds: { running: () => true, transfer: 'progressing' } as Parameters<K8sSim['holdMigrations']>[0],
      memory: '2Gi',
      boundMs: 300_000,
      reason: 'Live migration is not completed after 300 sec and has been aborted',
    },
  ];
  for (const { bound, holds, memory, boundMs, reason } of CASES)
    it(`${bound}: the migration fails at the bound, not before; the step says why and a new migration follows`, async () => {
      const clock = new VirtualClock();
      await heldApp(clock, holds, { memory, settings: { migrationRetryDelayMs: 10_000 } });
      const { created, failed } = recordMigrations(clock);
      const op = (await gql(`mutation { r: enableMaintenanceMode(nodeId: "n1", deadlineSeconds: 3000) { ... on Operation { id } } }`)).r;
      const step = async () =>
        (await gql(`{ operation(id: "${op.id}") { ... on Operation { steps(first: 1) { edges { node { state error } } } } } }`)).operation.steps.edges[0].node;
      await drive(clock, () => failed.size === 1, { stepMs: 1000, maxMs: 1_200_000 });
      const lasted = failed.get(created[0]!.uid)!.at - created[0]!.at;
      expect(lasted).toBeGreaterThanOrEqual(boundMs);
      expect(lasted).toBeLessThan(boundMs + 5_000);
      await drive(clock, async () => ((await step()).error ?? '').includes(reason), { stepMs: 1000, maxMs: 600_000 });
      expect((await step()).state).toBe('MOVING');
      expect(phase()).toBe('EVACUATING');
      await drive(clock, () => created.length === 2, { stepMs: 1000, maxMs: 600_000 });
      expect(created[1]!.at - failed.get(created[0]!.uid)!.at).toBeGreaterThanOrEqual(10_000);
    }, 120_000);
});
