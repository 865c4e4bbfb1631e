import { afterEach, describe, expect, it } from 'vitest';
import { attachedCounts } from '../operations/drive.ts';
import type { TestApp } from '../support/graphql-app.ts';
import { driveRollout, mostOutOfServiceFromLog, rolloutApp, run, startRollout, twoZoneCluster } from './harness.ts';

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
});
