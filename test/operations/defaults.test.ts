/**
 * The defaults, proven by running with none of the operation settings given and watching what
 * happens (not by reading the config back): storage:D6 and storage:F4's 64 cut-overs in flight,
 * storage:D4's 256 MiB lag limit, vm:M5's 30-minute deadline on the virtual clock. The only
 * options given are the simulated cluster's own (topology, latencies), which are no settings
 * of Lockkeeper's.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ShardSpec, SimulatedCluster } from '../../plugins/fake/index.ts';
import { createTestApp, type TestApp } from '../support/graphql-app.ts';
import { cluster, enable, phaseOf } from '../maintenance/harness.ts';
import { driveUntil, mutate, settle } from './drive.ts';

const MiB = 1024 * 1024;

let t: TestApp | undefined;
afterEach(async () => {
  await t?.stop();
  t = undefined;
});

/** Wraps the cluster so that the cut-overs in flight at the backend, and the most at once, are counted. */
function countCutOvers(c: SimulatedCluster) {
  const seen = { inFlight: 0, most: 0, started: 0 };
  const backend = new Proxy(c, {
    get(target, key, receiver) {
      if (key !== 'cutOverShard') return Reflect.get(target, key, receiver);
      return async (id: string, options: { fromNodeId: string; toNodeId: string }) => {
        seen.started++;
        seen.most = Math.max(seen.most, ++seen.inFlight);
        try {
          return await target.cutOverShard(id, options);
        } finally {
          seen.inFlight--;
        }
      };
    },
  });
  return { seen, backend };
}

/** One shard per tenant, so no per-tenant rule limits anything; attached to `on`, a warm secondary on `secondary`. */
const singles = (n: number, on: (i: number) => string, secondary: (i: number) => string, extra: Partial<ShardSpec> = {}): ShardSpec[] =>
  Array.from({ length: n }, (_, i) => ({
    tenantId: `t${i}`,
    shardNumber: 0,
    shardCount: 0,
    attachedNodeId: on(i),
    secondaries: [{ nodeId: secondary(i) }],
    ...extra,
  }));

describe('defaults, observed', () => {
  it('storage:D6: a drain keeps exactly 64 cut-overs in flight at once, the next starting as one ends', async () => {
    let seen!: ReturnType<typeof countCutOvers>['seen'];
    t = await createTestApp({
      topology: {
        nodes: [{ id: '1' }, { id: '2' }, { id: '3' }],
        shards: singles(
          150,
          () => '1',
          (i) => (i % 2 ? '2' : '3'),
        ),
      },
      latenciesMs: { cutOver: 1000 },
      backend: (c) => {
        const counted = countCutOvers(c);
        seen = counted.seen;
        return counted.backend;
      },
    });
    const op = await mutate(t, 'startNodeDrain', '1');
    await driveUntil(t, () => seen.started >= 64, { stepMs: 10 });
    // Before any has finished: 64 at the backend, and the operation says the same.
    expect(seen).toMatchObject({ inFlight: 64, started: 64 });
    expect(t.app.storage.activeOperation('1')?.counts).toMatchObject({ moving: 64, planned: 150 - 64, moved: 0 });
    const done = await settle(t, '1');
    expect(done).toMatchObject({ id: op.id, state: 'SUCCEEDED', counts: { moved: 150 } });
    expect(seen.most).toBe(64);
    expect(seen.started).toBe(150);
  });

  it('storage:F4: a fill keeps at most maxConcurrentMoves cut-overs in flight: 64 by default, the setting when given', async () => {
    // Two nodes, everything on node 2 with a warm secondary on node 1: the fill moves half (expected share 100, one per tenant).
    const topology = {
      nodes: [{ id: '1' }, { id: '2' }],
      shards: singles(
        200,
        () => '2',
        () => '1',
      ),
    };
    for (const [settings, bound] of [
      [{}, 64],
      [{ maxConcurrentMoves: 5 }, 5],
    ] as const) {
      let seen!: ReturnType<typeof countCutOvers>['seen'];
      t = await createTestApp({
        topology,
        latenciesMs: { cutOver: 1000 },
        settings,
        backend: (c) => {
          const counted = countCutOvers(c);
          seen = counted.seen;
          return counted.backend;
        },
      });
      const op = await mutate(t, 'startNodeFill', '1');
      expect(op.counts.total).toBe(100);
      await driveUntil(t, () => seen.started >= bound, { stepMs: 10 });
      expect(seen).toMatchObject({ inFlight: bound, started: bound });
      const done = await settle(t, '1');
      expect(done).toMatchObject({ state: 'SUCCEEDED', counts: { moved: 100 } });
      expect(seen.most, JSON.stringify(settings)).toBe(bound);
      await t.stop();
      t = undefined;
    }
  });

  it('storage:D4: a secondary lagging more than 256 MiB is skipped (SECONDARY_LAGGING); one lagging exactly 256 MiB is cut over', async () => {
    const lagging = (lagBytes: number) => ({ nodeId: '2', lagBytes, downloadBytesPerSecond: 0 });
    t = await createTestApp({
      topology: {
        nodes: [{ id: '1' }, { id: '2' }],
        shards: [
          { tenantId: 'over', shardNumber: 0, shardCount: 0, attachedNodeId: '1', secondaries: [lagging(256 * MiB + 1)] },
          { tenantId: 'at', shardNumber: 0, shardCount: 0, attachedNodeId: '1', secondaries: [lagging(256 * MiB)] },
          { tenantId: 'far', shardNumber: 0, shardCount: 0, attachedNodeId: '1', secondaries: [lagging(1024 * MiB)] },
        ],
      },
    });
    const op = await mutate(t, 'startNodeDrain', '1');
    expect((await settle(t, '1')).state).toBe('SUCCEEDED');
    const steps = Object.fromEntries((await t.app.operations.getSteps(op.id)).map((s) => [s.workloadId, { state: s.state, reason: s.reason }]));
    expect(steps).toEqual({
      over: { state: 'SKIPPED', reason: 'SECONDARY_LAGGING' },
      at: { state: 'MOVED', reason: null },
      far: { state: 'SKIPPED', reason: 'SECONDARY_LAGGING' },
    });
    expect((await t.cluster.getShard('at'))?.attachedNodeId).toBe('2');
    expect((await t.cluster.getShard('over'))?.attachedNodeId).toBe('1');
  });

  it('vm:M5: without deadlineSeconds, a maintenance that cannot finish is still EVACUATING 1 ms before 30 minutes and ERROR at 30 minutes', async () => {
    const a = (t = await createTestApp({
      topology: cluster([{ namespace: 'default', name: 'stuck', nodeId: '1' }]),
      latenciesMs: { migrate: 500, stop: 200, start: 300, cordon: 10 },
    }));
    a.cluster.simulation.injectFaults({ stuck: ['default/stuck'] });
    const started = a.clock.now();
    const op = await enable(a, '1');
    expect(op.__typename).toBe('Operation');
    await driveUntil(a, async () => (await phaseOf(a, '1')) === 'EVACUATING');
    expect(a.app.maintenance.stateOf('1')?.deadline).toBe(started + 30 * 60_000);
    await a.clock.advance(started + 30 * 60_000 - 1 - a.clock.now());
    expect(await phaseOf(a, '1')).toBe('EVACUATING');
    expect((await a.app.operations.getOperation(op.id))?.state).toBe('RUNNING');
    // One more millisecond: the deadline, and nothing later, ends it.
    await a.clock.advance(1);
    await driveUntil(a, async () => (await phaseOf(a, '1')) === 'ERROR', { stepMs: 0, maxMs: 0 });
    const failed = await a.app.operations.getOperation(op.id);
    expect(failed).toMatchObject({ state: 'FAILED', error: expect.stringMatching(/^DEADLINE_EXCEEDED/) });
    expect(failed!.finishedAt).toBe(started + 30 * 60_000);
  });
});
