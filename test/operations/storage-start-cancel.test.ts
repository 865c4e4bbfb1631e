import { afterEach, describe, expect, it } from 'vitest';
import type { TopologySpec } from '../../plugins/fake/index.ts';
import { createTestApp, type TestApp } from '../support/graphql-app.ts';
import { driveUntil, mutate, policyOf, settle } from './drive.ts';

/** Three nodes in one zone, each with two shards whose secondaries sit on the next node. */
function threeNodes(): TopologySpec {
  const ids = ['1', '2', '3'];
  return {
    nodes: ids.map((id) => ({ id, zone: 'a' })),
    shards: ids.flatMap((id, i) =>
      [0, 1].map((n) => ({ tenantId: `t${id}`, shardNumber: n, shardCount: 2, attachedNodeId: id, secondaries: [{ nodeId: ids[(i + 1) % 3]! }] })),
    ),
  };
}

let t: TestApp;
afterEach(async () => {
  await t?.stop();
});

describe('storage:S3: starting a drain, checks in order', () => {
  it('unknown node → NotFound', async () => {
    t = await createTestApp({ topology: threeNodes() });
    expect(await mutate(t, 'startNodeDrain', '9')).toMatchObject({ __typename: 'NotFoundError', code: 'NOT_FOUND' });
  });

  it('an operation already runs on the node → Conflict naming it', async () => {
    t = await createTestApp({ topology: threeNodes() });
    const first = await mutate(t, 'startNodeDrain', '1');
    expect(await mutate(t, 'startNodeDrain', '1')).toMatchObject({ __typename: 'ConflictError', operationId: first.id });
  });

  it('the cluster-wide limit (default 1) → OperationLimitReached; a higher limit admits', async () => {
    t = await createTestApp({ topology: threeNodes() });
    await mutate(t, 'startNodeDrain', '1');
    expect(await mutate(t, 'startNodeDrain', '2')).toMatchObject({ __typename: 'OperationLimitReachedError', limit: 1 });
    expect(await mutate(t, 'startNodeFill', '2')).toMatchObject({ __typename: 'OperationLimitReachedError' });
    await t.stop();
    t = await createTestApp({ topology: threeNodes(), settings: { maxConcurrentOperations: 2 } });
    await mutate(t, 'startNodeDrain', '1');
    expect((await mutate(t, 'startNodeDrain', '2')).__typename).toBe('Operation');
  });

  it('node not ACTIVE → Unavailable', async () => {
    t = await createTestApp({ topology: threeNodes() });
    await t.cluster.simulation.setNodeOnline('1', false);
    expect(await mutate(t, 'startNodeDrain', '1')).toMatchObject({ __typename: 'UnavailableError', code: 'UNAVAILABLE' });
  });

  it('no other node may schedule → PreconditionFailed "no other schedulable nodes", also on a single-node cluster', async () => {
    t = await createTestApp({ topology: threeNodes() });
    for (const id of ['2', '3']) await t.gql(`mutation { configureNode(nodeId: "${id}", policy: PAUSE) { __typename } }`);
    expect(await mutate(t, 'startNodeDrain', '1')).toMatchObject({
      __typename: 'PreconditionFailedError',
      message: 'no other schedulable nodes',
      failedReason: 'NO_OTHER_SCHEDULABLE_NODES',
    });
    await t.stop();
    t = await createTestApp({ topology: { nodes: [{ id: '1' }], shards: [{ tenantId: 'x', attachedNodeId: '1' }] } });
    expect(await mutate(t, 'startNodeDrain', '1')).toMatchObject({ failedReason: 'NO_OTHER_SCHEDULABLE_NODES' });
    expect(await policyOf(t, '1')).toBe('ACTIVE');
  });

  it('policy DRAINING (set by hand) → Conflict; PAUSE → PreconditionFailed naming the policy (neon #9997)', async () => {
    t = await createTestApp({ topology: threeNodes() });
    await t.gql('mutation { configureNode(nodeId: "1", policy: DRAINING) { __typename } }');
    expect(await mutate(t, 'startNodeDrain', '1')).toMatchObject({ __typename: 'ConflictError', operationId: null });
    await t.gql('mutation { configureNode(nodeId: "1", policy: PAUSE) { __typename } }');
    const refused = await mutate(t, 'startNodeDrain', '1');
    expect(refused).toMatchObject({ __typename: 'PreconditionFailedError', failedReason: 'POLICY_PAUSE' });
    expect(refused.message).toContain('PAUSE');
  });

  it('accepted → the operation, state RUNNING, policy DRAINING, with who and why', async () => {
    t = await createTestApp({ topology: threeNodes() });
    const op = await mutate(t, 'startNodeDrain', '1', ', reason: "kernel update"');
    expect(op).toMatchObject({ __typename: 'Operation', kind: 'DRAIN', nodeId: '1', state: 'RUNNING', reason: 'kernel update', startedBy: 'anonymous' });
    expect(op.counts.total).toBe(2);
    expect(await policyOf(t, '1')).toBe('DRAINING');
  });
});

describe('storage:S4: starting a fill', () => {
  it('refuses fewer than two nodes, FILLING (Conflict), and a node still PAUSE_FOR_RESTART', async () => {
    t = await createTestApp({ topology: { nodes: [{ id: '1' }] } });
    expect(await mutate(t, 'startNodeFill', '1')).toMatchObject({ __typename: 'PreconditionFailedError', message: 'no other nodes to fill from' });
    await t.stop();
    t = await createTestApp({ topology: threeNodes() });
    await t.gql('mutation { configureNode(nodeId: "1", policy: FILLING) { __typename } }');
    expect((await mutate(t, 'startNodeFill', '1')).__typename).toBe('ConflictError');
    await t.gql('mutation { configureNode(nodeId: "1", policy: ACTIVE) { __typename } }');
    await mutate(t, 'startNodeDrain', '1');
    await settle(t, '1');
    expect(await policyOf(t, '1')).toBe('PAUSE_FOR_RESTART');
    expect(await mutate(t, 'startNodeFill', '1')).toMatchObject({ __typename: 'PreconditionFailedError', failedReason: 'POLICY_PAUSE_FOR_RESTART' });
    expect(await mutate(t, 'startNodeFill', '9')).toMatchObject({ __typename: 'NotFoundError' });
  });
});

describe('storage:S5: cancelling', () => {
  it('unknown node → NotFound; nothing running → PreconditionFailed "no drain in progress"', async () => {
    t = await createTestApp({ topology: threeNodes() });
    expect((await mutate(t, 'cancelNodeDrain', '9')).__typename).toBe('NotFoundError');
    expect(await mutate(t, 'cancelNodeDrain', '1')).toMatchObject({ __typename: 'PreconditionFailedError', message: 'no drain in progress on node 1' });
    expect(await mutate(t, 'cancelNodeFill', '1')).toMatchObject({ __typename: 'PreconditionFailedError', message: 'no fill in progress on node 1' });
    // A running drain is not a fill.
    await mutate(t, 'startNodeDrain', '1');
    expect((await mutate(t, 'cancelNodeFill', '1')).__typename).toBe('PreconditionFailedError');
  });

  it('accepted → CANCELLING, then CANCELLED; policy ACTIVE; moved stay moved; moves in flight finish', async () => {
    t = await createTestApp({ topology: threeNodes(), latenciesMs: { cutOver: 1000 }, settings: { maxConcurrentMoves: 1 } });
    await mutate(t, 'startNodeDrain', '1');
    // Let the first cut-over finish and the second start.
    await driveUntil(
      t,
      async () =>
        (await t.app.operations.getOperation(t.app.storage.activeOperation('1')!.id))!.counts.moved === 1 &&
        t.app.storage.activeOperation('1')!.counts.moving === 1,
    );
    const cancelling = await mutate(t, 'cancelNodeDrain', '1', ', reason: "change freeze"');
    expect(cancelling).toMatchObject({ __typename: 'Operation', state: 'CANCELLING' });
    // Cancelling twice is the same answer, not an error.
    expect((await mutate(t, 'cancelNodeDrain', '1')).state).toBe('CANCELLING');
    expect(await policyOf(t, '1')).toBe('DRAINING');
    const done = await settle(t, '1');
    expect(done.state).toBe('CANCELLED');
    // The one in flight finished: 2 moved, none left behind half-done.
    expect(done.counts).toMatchObject({ moved: 2, moving: 0, planned: 0 });
    expect(await policyOf(t, '1')).toBe('ACTIVE');
    const attached = (await t.cluster.listShards({ attachedNodeId: '1' })).length;
    expect(attached).toBe(0);
  });

  it('cancel with moves left over records them as skipped CANCELLED, and the subscription shows each step', async () => {
    t = await createTestApp({
      topology: {
        nodes: [{ id: '1' }, { id: '2' }],
        shards: [0, 1, 2, 3].map((n) => ({ tenantId: 't', shardNumber: n, shardCount: 4, attachedNodeId: '1', secondaries: [{ nodeId: '2' }] })),
      },
      latenciesMs: { cutOver: 1000 },
      settings: { maxConcurrentMoves: 1 },
    });
    const op = await mutate(t, 'startNodeDrain', '1');
    const seen: string[] = [];
    const stepStates: string[] = [];
    const sub = t.app.bus.subscribe('operationProgress', op.id);
    const reading = (async () => {
      for await (const p of sub) {
        seen.push(p.operation.state);
        stepStates.push(...p.steps.map((s) => `${s.workloadId}:${s.state}`));
        if (['CANCELLED', 'FAILED', 'SUCCEEDED'].includes(p.operation.state)) break;
      }
    })();
    await driveUntil(t, () => t.app.storage.activeOperation('1')!.counts.moved === 1);
    await mutate(t, 'cancelNodeDrain', '1');
    const done = await settle(t, '1');
    await reading;
    expect(done.counts).toMatchObject({ moved: 2, skipped: 2, skippedByReason: { CANCELLED: 2 } });
    expect(seen).toContain('CANCELLING');
    expect(seen.at(-1)).toBe('CANCELLED');
    // Every step's outcome reached subscribers: two moved, two never started.
    expect(stepStates.filter((s) => s.endsWith(':MOVED'))).toHaveLength(2);
    expect(stepStates.filter((s) => s.endsWith(':SKIPPED'))).toHaveLength(2);
    expect((await t.cluster.listShards({ attachedNodeId: '1' })).length).toBe(2);
  });
});
