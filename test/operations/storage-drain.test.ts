import { afterEach, describe, expect, it } from 'vitest';
import type { ShardSpec } from '../../plugins/fake/index.ts';
import { createTestApp, type TestApp } from '../support/graphql-app.ts';
import { driveUntil, mutate, policyOf, settle } from './drive.ts';

let t: TestApp;
afterEach(async () => {
  await t?.stop();
});

const shard = (tenantId: string, shardNumber: number, attachedNodeId: string, secondaries: string[], extra: Partial<ShardSpec> = {}): ShardSpec => ({
  tenantId,
  shardNumber,
  shardCount: 4,
  attachedNodeId,
  secondaries: secondaries.map((nodeId) => ({ nodeId })),
  ...extra,
});

async function stepsOf(operationId: string) {
  return t.app.operations.getSteps(operationId);
}

describe('drain rules', () => {
  it('storage:D1: walks the attached shards by tenant id then shard number', async () => {
    t = await createTestApp({
      topology: {
        nodes: [{ id: '1' }, { id: '2' }],
        shards: [shard('b', 0, '1', ['2']), shard('a', 2, '1', ['2']), shard('a', 0, '1', ['2']), shard('a', 1, '2', ['1'])],
      },
    });
    const op = await mutate(t, 'startNodeDrain', '1');
    const steps = await stepsOf(op.id);
    expect(steps.map((s) => s.workloadId)).toEqual(['a-0004', 'a-0204', 'b-0004']);
    expect(steps.map((s) => s.seq)).toEqual([0, 1, 2]);
  });

  it('storage:D2: skips PAUSE/STOP shards, non-HA shards and shards without a schedulable secondary, with the reason', async () => {
    t = await createTestApp({
      topology: {
        nodes: [{ id: '1' }, { id: '2' }, { id: '3' }],
        shards: [
          shard('a', 0, '1', ['2'], { policy: 'PAUSE' }),
          shard('b', 0, '1', ['2'], { policy: 'STOP' }),
          shard('c', 0, '1', []),
          shard('d', 0, '1', ['3']),
          shard('e', 0, '1', ['2'], { policy: 'ESSENTIAL' }),
        ],
      },
    });
    await t.gql('mutation { configureNode(nodeId: "3", policy: PAUSE) { __typename } }');
    const op = await mutate(t, 'startNodeDrain', '1');
    const done = await settle(t, '1');
    expect(done.counts.skippedByReason).toEqual({ SHARD_POLICY_PAUSE: 1, SHARD_POLICY_STOP: 1, NO_SECONDARY: 1, NO_SCHEDULABLE_SECONDARY: 1 });
    expect(done.counts.moved).toBe(1);
    const steps = await stepsOf(op.id);
    expect(steps.find((s) => s.workloadId === 'e-0004')).toMatchObject({ state: 'MOVED', toNodeId: '2' });
    // Skipped shards stay where they were.
    expect((await t.cluster.listShards({ attachedNodeId: '1' })).map((s) => s.id).sort()).toEqual(['a-0004', 'b-0004', 'c-0004', 'd-0004']);
    // The event log says every skip, the plan's too (written with the admission): one SHARD_SKIPPED each, as a run's skip reads.
    const skips = await t.db.prisma.event.findMany({ where: { operationId: op.id, type: 'SHARD_SKIPPED' }, orderBy: { seq: 'asc' } });
    expect(skips.map((e) => JSON.parse(e.payload))).toEqual(
      ['SHARD_POLICY_PAUSE', 'SHARD_POLICY_STOP', 'NO_SECONDARY', 'NO_SCHEDULABLE_SECONDARY'].map((reason, i) => ({
        shard: `${'abcd'[i]}-0004`,
        from: '1',
        to: null,
        reason,
        error: null,
      })),
    );
  });

  it('storage:D3: goes to a secondary in the preferred AZ, else the lowest node id', async () => {
    t = await createTestApp({
      topology: {
        nodes: [
          { id: '1', zone: 'a' },
          { id: '2', zone: 'b' },
          { id: '10', zone: 'a' },
          { id: '3', zone: 'b' },
        ],
        shards: [shard('home', 0, '1', ['2', '10'], { preferredZone: 'a' }), shard('low', 0, '1', ['10', '3'], { preferredZone: null })],
      },
    });
    const op = await mutate(t, 'startNodeDrain', '1');
    await settle(t, '1');
    const steps = await stepsOf(op.id);
    expect(steps.find((s) => s.workloadId === 'home-0004')?.toNodeId).toBe('10');
    expect(steps.find((s) => s.workloadId === 'low-0004')?.toNodeId).toBe('3');
    expect((await t.cluster.getShard('home-0004'))?.attachedNodeId).toBe('10');
  });

  it('storage:D4: a secondary lagging past maxSecondaryLagBytes, or with unknown lag, is not cut over to', async () => {
    t = await createTestApp({
      topology: {
        nodes: [{ id: '1' }, { id: '2' }],
        shards: [
          shard('lag', 0, '1', [], { secondaries: [{ nodeId: '2', lagBytes: 2048, downloadBytesPerSecond: 0 }] }),
          shard('ok', 0, '1', [], { secondaries: [{ nodeId: '2', lagBytes: 1024, downloadBytesPerSecond: 0 }] }),
          shard('unknown', 0, '1', [], { secondaries: [{ nodeId: '2', heatmapKnown: false }] }),
        ],
      },
      settings: { maxSecondaryLagBytes: 1024 },
    });
    const op = await mutate(t, 'startNodeDrain', '1');
    const done = await settle(t, '1');
    expect(done.counts.skippedByReason).toEqual({ SECONDARY_LAGGING: 1, SECONDARY_STATUS_UNKNOWN: 1 });
    const steps = await stepsOf(op.id);
    expect(steps.find((s) => s.workloadId === 'lag-0004')).toMatchObject({
      state: 'SKIPPED',
      reason: 'SECONDARY_LAGGING',
      error: 'secondary lagging by 2048 bytes on node 2',
    });
    expect(steps.find((s) => s.workloadId === 'ok-0004')?.state).toBe('MOVED');
  });

  it('storage:D5: the cut-over swaps roles: the drained node keeps a secondary, no new secondary appears', async () => {
    t = await createTestApp({ topology: { nodes: [{ id: '1' }, { id: '2' }, { id: '3' }], shards: [shard('x', 0, '1', ['2'])] } });
    await mutate(t, 'startNodeDrain', '1');
    await settle(t, '1');
    expect(await t.cluster.getShard('x-0004')).toMatchObject({ attachedNodeId: '2', secondaryNodeIds: ['1'] });
  });

  it('storage:D6: at most maxConcurrentMoves in flight; the next starts when one finishes; a failed cut-over is recorded once and not retried', async () => {
    const shards = Array.from({ length: 12 }, (_, n) => shard('t', n, '1', ['2'], { shardCount: 12 }));
    t = await createTestApp({ topology: { nodes: [{ id: '1' }, { id: '2' }], shards }, latenciesMs: { cutOver: 1000 }, settings: { maxConcurrentMoves: 5 } });
    let peak = 0;
    const op = await mutate(t, 'startNodeDrain', '1');
    await driveUntil(
      t,
      () => {
        const live = t.app.storage.activeOperation('1');
        if (live) peak = Math.max(peak, live.counts.moving);
        return live === null;
      },
      { stepMs: 100 },
    );
    expect(peak).toBe(5);
    // 12 moves at 5 wide and 1 s each take 3 rounds: 3 s of virtual time, not 12.
    const done = (await t.app.operations.getOperation(op.id))!;
    expect(done.finishedAt! - done.startedAt).toBeLessThan(3500);
    expect(done.counts.moved).toBe(12);
    await t.stop();

    t = await createTestApp({ topology: { nodes: [{ id: '1' }, { id: '2' }], shards: shards.slice(0, 3) }, latenciesMs: { cutOver: 10 } });
    t.cluster.simulation.injectFaults({ failureRate: { cutOver: 1 } });
    const failing = await mutate(t, 'startNodeDrain', '1');
    const failed = await settle(t, '1');
    expect(failed.counts).toMatchObject({ failed: 3, moved: 0, failedByReason: { TRANSIENT: 3 } });
    expect(t.cluster.callCounts.get('cutOverShard')).toBe(3);
    expect((await stepsOf(failing.id)).every((s) => s.state === 'FAILED' && s.error)).toBe(true);
    // Nothing lost: every shard still has its attached location.
    expect((await t.cluster.listShards({ attachedNodeId: '1' })).length).toBe(3);
  });

  it('storage:D7: a node re-attaching mid-drain ends it FAILED / NODE_STATE_CHANGED, policy ACTIVE, not PAUSE_FOR_RESTART (neon #8674)', async () => {
    const shards = Array.from({ length: 6 }, (_, n) => shard('t', n, '1', ['2'], { shardCount: 6 }));
    t = await createTestApp({
      topology: { nodes: [{ id: '1' }, { id: '2' }], shards },
      latenciesMs: { cutOver: 1000 },
      restartDelayMs: 500,
      heartbeatIntervalMs: 500,
      settings: { maxConcurrentMoves: 1 },
    });
    await mutate(t, 'startNodeDrain', '1');
    await driveUntil(t, () => t.app.storage.activeOperation('1')!.counts.moved >= 1);
    // configureNode is refused while the drain runs (neon #8727), naming the operation.
    const refused = await t.gql('mutation { configureNode(nodeId: "1", policy: PAUSE) { __typename ... on PreconditionFailedError { reason operationId } } }');
    expect(refused.data.configureNode).toMatchObject({
      __typename: 'PreconditionFailedError',
      reason: 'OPERATION_RUNNING',
      operationId: t.app.storage.activeOperation('1')!.id,
    });
    await t.cluster.simulation.restartNode('1');
    const done = await settle(t, '1');
    expect(done).toMatchObject({ state: 'FAILED', error: 'NODE_STATE_CHANGED' });
    expect(await policyOf(t, '1')).toBe('ACTIVE');
    expect(done.counts.skippedByReason.NOT_ATTEMPTED).toBeGreaterThan(0);
  });

  it('storage:D8: PAUSE_FOR_RESTART with counts when done; a node without shards drains at once', async () => {
    t = await createTestApp({ topology: { nodes: [{ id: '1' }, { id: '2' }], shards: [shard('x', 0, '2', ['1'])] } });
    const op = await mutate(t, 'startNodeDrain', '1');
    const done = await settle(t, '1', { stepMs: 1, maxMs: 5 });
    expect(done).toMatchObject({ id: op.id, state: 'SUCCEEDED' });
    expect(done.counts.moved + done.counts.skipped + done.counts.failed).toBe(0);
    expect(await policyOf(t, '1')).toBe('PAUSE_FOR_RESTART');
  });
});
