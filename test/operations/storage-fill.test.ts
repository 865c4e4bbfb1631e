import { afterEach, describe, expect, it } from 'vitest';
import type { ShardSpec } from '../../plugins/fake/index.ts';
import { createTestApp, type TestApp } from '../support/graphql-app.ts';
import { attachedCounts, driveUntil, mutate, policyOf, settle } from './drive.ts';

let t: TestApp;
afterEach(async () => {
  await t?.stop();
});

/** `n` shards of tenant `tenant` attached to `on` with a secondary on `secondary`. */
const many = (tenant: string, n: number, on: string, secondary: string, extra: Partial<ShardSpec> = {}): ShardSpec[] =>
  Array.from({ length: n }, (_, i) => ({
    tenantId: tenant,
    shardNumber: i,
    shardCount: n,
    attachedNodeId: on,
    secondaries: [{ nodeId: secondary }],
    ...extra,
  }));

describe('fill rules', () => {
  it('storage:F1/F2/F5: plans once at the start from the secondaries on the node; done → ACTIVE with counts', async () => {
    // Node 1 is empty; 10 shards on node 2, 8 of them with a secondary on node 1. Expected
    // share 5, at most floor(4 / 2) = 2 per tenant: tenants a and c give 2 each.
    t = await createTestApp({
      topology: {
        nodes: [{ id: '1' }, { id: '2' }],
        shards: [...many('a', 4, '2', '1'), ...many('c', 4, '2', '1'), ...many('b', 2, '2', '2').map((s) => ({ ...s, secondaries: [] }))],
      },
    });
    const op = await mutate(t, 'startNodeFill', '1');
    expect(op.counts.total).toBe(4);
    // The plan is computed once and persisted with the operation, in stable order.
    expect((await t.app.operations.getSteps(op.id)).map((s) => s.workloadId)).toEqual(['a-0004', 'a-0104', 'c-0004', 'c-0104']);
    expect(await policyOf(t, '1')).toBe('FILLING');
    const done = await settle(t, '1');
    expect(done).toMatchObject({ state: 'SUCCEEDED', kind: 'FILL' });
    expect(done.counts.moved).toBe(4);
    expect(await policyOf(t, '1')).toBe('ACTIVE');
    expect((await attachedCounts(t))['1']).toBe(4);
    const steps = await t.app.operations.getSteps(op.id);
    expect(steps.every((s) => s.reason === 'FAIR_SHARE' && s.toNodeId === '1' && s.fromNodeId === '2')).toBe(true);
  });

  it('storage:F3: takes the fair share from the most loaded nodes first, never below expected, at most shardCount/nodes per tenant', async () => {
    // 3 nodes, 12 shards: expected 4. Node 2 has 8 (tenant a: 8), node 3 has 4; all have secondaries on node 1.
    t = await createTestApp({ topology: { nodes: [{ id: '1' }, { id: '2' }, { id: '3' }], shards: [...many('a', 8, '2', '1'), ...many('b', 4, '3', '1')] } });
    const op = await mutate(t, 'startNodeFill', '1');
    await settle(t, '1');
    const steps = await t.app.operations.getSteps(op.id);
    // Tenant a may give at most floor(8 / 3) = 2; node 3 is at expected already and gives none.
    expect(steps.map((s) => s.fromNodeId)).toEqual(['2', '2']);
    expect(await attachedCounts(t)).toEqual({ '1': 2, '2': 6, '3': 4 });
  });

  it('storage:F2 with two AZs: shards whose preferred AZ is the filling node’s always come home', async () => {
    t = await createTestApp({
      topology: {
        nodes: [
          { id: '1', zone: 'a' },
          { id: '2', zone: 'b' },
        ],
        shards: [
          ...many('home', 2, '2', '1', { preferredZone: 'a' }),
          ...many('away', 2, '1', '2', { preferredZone: 'a' }),
          ...many('b', 2, '2', '1', { preferredZone: 'b' }),
        ],
      },
    });
    const op = await mutate(t, 'startNodeFill', '1');
    await settle(t, '1');
    const steps = await t.app.operations.getSteps(op.id);
    expect(steps.filter((s) => s.reason === 'HOME_AZ').map((s) => s.workloadId)).toEqual(['home-0002', 'home-0102']);
    expect((await t.cluster.getShard('b-0002'))?.attachedNodeId).toBe('2');
  });

  it('storage:F4: a fill is cancellable and stops when the node’s policy changes, like a drain', async () => {
    t = await createTestApp({
      topology: { nodes: [{ id: '1' }, { id: '2' }], shards: many('a', 8, '2', '1') },
      latenciesMs: { cutOver: 1000 },
      settings: { maxConcurrentMoves: 1 },
    });
    await mutate(t, 'startNodeFill', '1');
    await driveUntil(t, () => t.app.storage.activeOperation('1')!.counts.moved === 1);
    expect((await mutate(t, 'cancelNodeFill', '1')).state).toBe('CANCELLING');
    const cancelled = await settle(t, '1');
    expect(cancelled.state).toBe('CANCELLED');
    expect(await policyOf(t, '1')).toBe('ACTIVE');

    await mutate(t, 'startNodeFill', '1');
    await driveUntil(t, () => t.app.storage.activeOperation('1')!.counts.moving === 1);
    await t.cluster.simulation.restartNode('1');
    const failed = await settle(t, '1');
    expect(failed).toMatchObject({ state: 'FAILED', error: 'NODE_STATE_CHANGED' });
  });

  it('storage:F5: an empty plan succeeds at once', async () => {
    t = await createTestApp({ topology: { nodes: [{ id: '1' }, { id: '2' }], shards: many('a', 2, '1', '2') } });
    const op = await mutate(t, 'startNodeFill', '1');
    expect(op.counts.total).toBe(0);
    const done = await settle(t, '1', { stepMs: 1, maxMs: 5 });
    expect(done.state).toBe('SUCCEEDED');
    expect(await policyOf(t, '1')).toBe('ACTIVE');
  });
});
