import { afterEach, describe, expect, it } from 'vitest';
import { attachedCounts } from '../operations/drive.ts';
import type { TestApp } from '../support/graphql-app.ts';
import { demoTopology } from '../../plugins/fake/index.ts';
import { driveUntil } from '../operations/drive.ts';
import { control, driveRollout, mostOutOfServiceFromLog, rolloutApp, run, startRollout, twoZoneCluster } from './harness.ts';

let t: TestApp | undefined;
afterEach(async () => {
  await t?.stop();
  t = undefined;
});

describe('rollout acceptance scenarios (spec rollouts §4)', () => {
  it('rollout:scenario-1 MAINTENANCE, ZONE_BY_ZONE, maxUnavailable 1, WAIT_FOR_REATTACH: SUCCEEDED, VMs as their strategies say, shards balanced, never two nodes out (from the event log)', async () => {
    t = await rolloutApp(twoZoneCluster());
    const totalBefore = (await t.cluster.listShards()).length;
    const started = await startRollout(
      t,
      'selector: { zones: ["zone-b", "zone-a"] }, action: MAINTENANCE, order: ZONE_BY_ZONE, maxUnavailable: 1, restart: WAIT_FOR_REATTACH, reason: "kernel"',
    );
    expect(started).toMatchObject({ __typename: 'Operation', kind: 'ROLLOUT', nodeId: null, state: 'RUNNING', counts: { total: 4 } });
    const r = run(t, started.id);
    expect(r.waves).toEqual([['1'], ['2'], ['3'], ['4']]);
    const done = await driveRollout(t, started.id, ['SUCCEEDED', 'FAILED', 'CANCELLED', 'PAUSED']);
    expect(done).toMatchObject({ state: 'SUCCEEDED', error: null, counts: { moved: 4, failed: 0, skipped: 0 } });

    // Every VM as its strategy says: Shutdown stays off, every other one runs.
    for (const vm of await t.cluster.listVms()) {
      expect(vm.status, vm.id).toBe(vm.maintenanceStrategyLabel === 'Shutdown' ? 'Stopped' : 'Running');
    }
    // Shards: none lost, each attached once, per-node counts within 2.
    const counts = Object.values(await attachedCounts(t));
    expect(counts.reduce((a, b) => a + b, 0)).toBe(totalBefore);
    expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(2);
    // rollout:O5 from the logged transitions: every node went out, never two at once.
    expect(await mostOutOfServiceFromLog(t)).toEqual({ max: 1, nodesOut: ['1', '2', '3', '4'] });
    // rollout:O4: one maintenance per node, recorded on its step.
    const ops = await t.app.operations.listOperations({ kind: 'MAINTENANCE' });
    expect(ops.map((o) => o.nodeId).sort()).toEqual(['1', '2', '3', '4']);
    for (const step of r.steps) expect(r.detail(step).operations.map((o) => o.kind)).toEqual(['MAINTENANCE', 'FILL']);
  });

  it('rollout:scenario-3 a VM that cannot migrate pauses the rollout on its node, naming the VM and why; resumeRollout after the fix goes on', async () => {
    const topo = twoZoneCluster();
    topo.vms!.push({ namespace: 'prod', name: 'pinned', nodeId: '2', liveMigratable: false, liveMigratableReason: 'HostDeviceNotLiveMigratable' });
    t = await rolloutApp(topo);
    const r = await startRollout(t, 'nodes: ["1", "2", "3"], action: MAINTENANCE');
    const paused = await driveRollout(t, r.id, ['PAUSED', 'SUCCEEDED', 'FAILED']);
    expect(paused!.state).toBe('PAUSED');
    expect(paused!.waitingOn!.description).toContain('prod/pinned');
    expect(paused!.waitingOn!.description).toContain('HostDeviceNotLiveMigratable');
    expect(run(t, r.id).details.get('2')).toMatchObject({ phase: 'FAILED', blockers: [{ id: 'prod/pinned' }] });
    expect(run(t, r.id).details.get('1')!.phase).toBe('DONE');
    expect(run(t, r.id).details.get('3')!.phase).toBe('PENDING');
    // The fix: the VM may be shut down for maintenance.
    await t.gql('mutation { setVmMaintenanceStrategy(vmId: "prod/pinned", strategy: "Shutdown") { __typename } }');
    expect(await control(t, 'resumeRollout', `id: "${r.id}", reason: "pinned may stop"`)).toMatchObject({ state: 'RUNNING' });
    expect(await driveRollout(t, r.id, ['SUCCEEDED', 'FAILED', 'PAUSED'])).toMatchObject({ state: 'SUCCEEDED', counts: { moved: 3, failed: 0 } });
    expect((await t.cluster.getVm('prod/pinned'))!.status).toBe('Stopped');
  });

  it('rollout:scenario-5 cancelRollout during a drain: the draining node is filled back and ACTIVE, later nodes untouched', async () => {
    t = await rolloutApp(twoZoneCluster(), { latenciesMs: { cutOver: 5_000, cordon: 10 }, settings: { maxConcurrentMoves: 1 } });
    const r = await startRollout(t, 'nodes: ["1", "2", "3"], action: DRAIN_FILL');
    await driveUntil(t, async () => {
      const d = run(t!, r.id).details.get('1')!;
      const drain = d.operations[0] && (await t!.app.operations.getOperation(d.operations[0].id));
      return !!drain && drain.counts.moved >= 1;
    });
    expect(await control(t, 'cancelRollout', `id: "${r.id}", reason: "abort"`)).toMatchObject({ state: 'CANCELLING' });
    const done = await driveRollout(t, r.id, ['CANCELLED', 'SUCCEEDED', 'FAILED']);
    expect(done).toMatchObject({ state: 'CANCELLED', counts: { moved: 0, skipped: 3 } });
    const node1 = run(t, r.id) ?? null;
    expect(node1).toBeNull();
    const res = await t.gql(`{ operation(id: "${r.id}") { ... on Operation { rollout { nodes { nodeId phase state operations { kind state } } } } }
      node(id: "1") { ... on ClusterNode { availability schedulingPolicy cordoned } } }`);
    expect(res.data.node).toEqual({ availability: 'ACTIVE', schedulingPolicy: 'ACTIVE', cordoned: false });
    const [n1, n2, n3] = res.data.operation.rollout.nodes;
    expect(n1).toMatchObject({
      phase: 'SKIPPED',
      state: 'SKIPPED',
      operations: [
        { kind: 'DRAIN', state: 'CANCELLED' },
        { kind: 'FILL', state: 'SUCCEEDED' },
      ],
    });
    expect(n2).toMatchObject({ phase: 'PENDING', state: 'SKIPPED', operations: [] });
    expect(n3).toMatchObject({ phase: 'PENDING', state: 'SKIPPED', operations: [] });
    // Node 1's shards came back: nothing stays moved away by a cancelled rollout's drain more than the fill allows.
    expect((await attachedCounts(t))['1']).toBeGreaterThan(0);
    expect(await t.app.operations.listOperations({ nodeId: '2' })).toEqual([]);
  });

  it('rollout:scenario-6 the demo cluster: pauses on node 1 at once naming prod/ledger and why; with force it goes on and those VMs stay off', async () => {
    t = await rolloutApp(demoTopology());
    const r = await startRollout(t, 'nodes: ["1", "2", "3", "4"], action: MAINTENANCE, restart: NONE');
    const paused = await driveRollout(t, r.id, ['PAUSED', 'SUCCEEDED', 'FAILED'], { restart: false });
    expect(paused).toMatchObject({ state: 'PAUSED', counts: { failed: 1, moved: 0 } });
    expect(paused!.waitingOn!.description).toMatch(/^1: .*prod\/ledger: .*LastHealthyReplica/);
    expect(await t.app.operations.listOperations({ kind: 'MAINTENANCE' })).toEqual([]);
    expect(await control(t, 'cancelRollout', `id: "${r.id}"`)).toMatchObject({ state: 'CANCELLING' });
    expect(await driveRollout(t, r.id, ['CANCELLED'], { restart: false })).toMatchObject({ state: 'CANCELLED' });

    const forced = await startRollout(t, 'nodes: ["1", "2", "3", "4"], action: MAINTENANCE, restart: NONE, force: true, reason: "firmware"');
    expect(await driveRollout(t, forced.id, ['SUCCEEDED', 'FAILED', 'PAUSED'], { restart: false })).toMatchObject({ state: 'SUCCEEDED', counts: { moved: 4 } });
    for (const id of ['prod/ledger', 'prod/gpu-worker']) expect((await t.cluster.getVm(id))!.status, id).toBe('Stopped');
  });
});
