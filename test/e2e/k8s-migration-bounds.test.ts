import { afterEach, describe, expect, it } from 'vitest';
import { kubevirtApp, type KubevirtTestApp } from '../support/kubevirt-app.ts';
import { VirtualClock } from '../support/virtual-clock.ts';
import { drive } from '../support/virtual-drive.ts';

/**
 * k8s:C10 at the engine: a maintenance whose migrate step meets one of KubeVirt's own bounds
 * (here `progressTimeout`, 150 s without transfer progress), on one virtual clock for the
 * simulator, the plugin and the engine.
 */
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

describe('k8s:C10: a migration KubeVirt fails by its own bound, seen from the maintenance', () => {
  it('the transient failure is retried migrationRetryDelayMs later with a new migration, until the deadline; the operation then ends FAILED, and the step FAILED with TRANSIENT once the attempt in flight fails', async () => {
    const clock = new VirtualClock();
    t = await kubevirtApp(
      (sim) => {
        for (const n of ['n1', 'n2', 'n3']) sim.addNode(n, { roles: ['worker'] });
        // 4 GiB: the completion bound (600 s) is far off, so only the progress bound (150 s) fires.
        sim.addVm({ name: 'a', nodeName: 'n1', memory: '4Gi' });
        sim.holdMigrations({ running: () => true, transfer: 'stalled' });
      },
      { migrationRetryDelayMs: 10_000 },
      {},
      { clock, plugin: { vmActionTimeoutMs: 3_600_000, migrationTimeoutMs: 3_600_000 } },
    );
    // Every migration and when it failed, in simulated time.
    const created: { uid: string; at: number }[] = [];
    const failed = new Map<string, { at: number; reason: string }>();
    t.sim.store.subscribe((e) => {
      if (e.resource.kind !== 'VirtualMachineInstanceMigration') return;
      if (e.type === 'ADDED') created.push({ uid: e.object.metadata.uid!, at: clock.now() });
      if (e.object.status?.phase === 'Failed' && !failed.has(e.object.metadata.uid!))
        failed.set(e.object.metadata.uid!, { at: clock.now(), reason: e.object.status.migrationState?.failureReason });
    });
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
    await drive(clock, () => phase() === 'ERROR', { stepMs: 1000, maxMs: 600_000 });
    const end = await step();
    expect(end.state).toBe('FAILED');
    expect(end.error).toMatch(/^DEADLINE_EXCEEDED: still on the node: default\/a \(migration failed \(.*Live migration stuck for 150 sec/);

    // An attempt still in flight then is left to KubeVirt (clearMaintenanceError would delete it, k8s:C9 a); once it
    // fails by the same bound, past the deadline, it is not retried: the step ends FAILED with TRANSIENT.
    await drive(clock, async () => (await step()).steps.edges[0].node.state === 'FAILED', { stepMs: 1000, maxMs: 200_000 });
    const last = (await step()).steps.edges[0].node;
    expect(last).toMatchObject({ workloadId: 'default/a', state: 'FAILED', reason: 'TRANSIENT' });
    expect(last.error).toMatch(/Live migration stuck for 150 sec and has been aborted$/);
    // Every retry came migrationRetryDelayMs or more after the failure before it, none at or after the deadline.
    expect(created.length).toBeGreaterThanOrEqual(2);
    for (let i = 1; i < created.length; i++) expect(created[i]!.at - failed.get(created[i - 1]!.uid)!.at).toBeGreaterThanOrEqual(10_000);
    expect(created.every((c) => c.at < t0 + 400_000)).toBe(true);
    expect(created.every((c) => failed.has(c.uid))).toBe(true);
    expect(t.sim.vmi('default', 'a')!.status.nodeName).toBe('n1');
  }, 120_000);
});
