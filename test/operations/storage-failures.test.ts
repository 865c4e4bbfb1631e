import { refuseWrites } from '../support/test-database.ts';
import { afterEach, describe, expect, it } from 'vitest';
import type { ShardSpec, TopologySpec } from '../../plugins/fake/index.ts';
import { createTestApp, type TestApp } from '../support/graphql-app.ts';
import { driveUntil, mutate, OPERATION_FIELDS, policyOf, settle } from './drive.ts';

let t: TestApp | undefined;
afterEach(async () => {
  await t?.stop();
  t = undefined;
});

const shards = (n: number, on: string, secondary: string): ShardSpec[] =>
  Array.from({ length: n }, (_, i) => ({ tenantId: 't', shardNumber: i, shardCount: n, attachedNodeId: on, secondaries: [{ nodeId: secondary }] }));
const twoNodes = (n: number): TopologySpec => ({ nodes: [{ id: '1' }, { id: '2' }, { id: '3' }], shards: shards(n, '1', '2') });

describe('failures (storage:X1–X6)', () => {
  it('gateway restart mid-drain: the operation and policy are persisted and the drain resumes', async () => {
    const a = await createTestApp({ topology: twoNodes(6), latenciesMs: { cutOver: 1000 }, settings: { maxConcurrentMoves: 2 } });
    t = a;
    const op = await mutate(a, 'startNodeDrain', '1');
    await driveUntil(a, () => a.app.storage.activeOperation('1')!.counts.moved >= 2);
    // The gateway goes away; the cluster (and its database file) stay.
    await a.app.operations.shutdown();
    t = undefined;
    const b = await createTestApp({ clock: a.clock, databaseFile: a.db.file, backend: () => a.cluster });
    t = b;
    expect(await policyOf(b, '1')).toBe('DRAINING');
    expect(b.app.storage.activeOperation('1')?.id).toBe(op.id);
    const done = await settle(b, '1');
    expect(done).toMatchObject({ id: op.id, state: 'SUCCEEDED' });
    expect(done.counts).toMatchObject({ moved: 6, failed: 0, skipped: 0 });
    expect(await policyOf(b, '1')).toBe('PAUSE_FOR_RESTART');
    const steps = await b.app.operations.getSteps(op.id);
    expect(steps.map((s) => s.state)).toEqual(Array(6).fill('MOVED'));
    await a.db.close();
  });

  it('node OFFLINE mid-operation (neon:H5, superseding storage:X3 in part): its drain ends FAILED NODE_OFFLINE and a FAILOVER takes the shards left', async () => {
    t = await createTestApp({ topology: twoNodes(4), latenciesMs: { cutOver: 1000 }, settings: { maxConcurrentMoves: 1, operationDeadlineMs: 60_000 } });
    const drain = await mutate(t, 'startNodeDrain', '1');
    await driveUntil(t, () => t!.app.storage.activeOperation('1')!.counts.moving === 1);
    await t.cluster.simulation.setNodeOnline('1', false);
    await settle(t, '1');
    const done = (await t.app.operations.getOperation(drain.id))!;
    expect(done).toMatchObject({ state: 'FAILED', error: 'NODE_OFFLINE' });
    await driveUntil(t, () => t!.app.failover.activeFailover('1') === null && t!.app.operations.live.all(['FAILOVER']).length === 0);
    const [failover] = await t.app.operations.listOperations({ nodeId: '1', kind: 'FAILOVER' });
    expect(failover).toMatchObject({ kind: 'FAILOVER', state: 'SUCCEEDED', actor: 'system', reason: 'node 1 went OFFLINE' });
    // Every shard is attached elsewhere, and node 1 is kept as a secondary (neon:H5d).
    for (const s of await t.cluster.listShards()) {
      expect(s.attachedNodeId).toBe('2');
      expect(s.secondaryNodeIds).toContain('1');
    }
    expect(failover!.counts.moved + done.counts.moved).toBe(4);
  });

  it('storage:X4: when no failover can happen (no other node may schedule, neon:H5c), the drain pauses on the OFFLINE node and fails after operationDeadline', async () => {
    t = await createTestApp({ topology: twoNodes(4), latenciesMs: { cutOver: 1000 }, settings: { maxConcurrentMoves: 1, operationDeadlineMs: 60_000 } });
    await mutate(t, 'startNodeDrain', '1');
    await driveUntil(t, () => t!.app.storage.activeOperation('1')!.counts.moving === 1);
    for (const n of ['2', '3']) await t.gql(`mutation { configureNode(nodeId: "${n}", policy: PAUSE) { __typename } }`);
    await t.cluster.simulation.setNodeOnline('1', false);
    await driveUntil(t, () => t!.app.storage.activeOperation('1')!.waitingOn?.kind === 'NODE_OFFLINE');
    const res = await t.gql(`{ node(id: "1") { ... on ClusterNode { operation { ${OPERATION_FIELDS} } } } }`);
    const waiting = res.data.node.operation.waitingOn;
    expect(waiting).toMatchObject({ kind: 'NODE_OFFLINE', nodeId: '1' });
    expect(waiting.description).toContain('node 1 is OFFLINE');
    expect(waiting.workloadIds.length).toBeGreaterThan(0);
    const done = await settle(t, '1', { stepMs: 1000 });
    expect(done).toMatchObject({ state: 'FAILED', error: 'NODE_OFFLINE' });
    // The deadline, not sooner: at least a minute of (virtual) time after the node went away.
    expect(done.finishedAt! - done.startedAt).toBeGreaterThanOrEqual(60_000);
    expect(await policyOf(t, '1')).toBe('ACTIVE');
    expect(await t.app.operations.listOperations({ kind: 'FAILOVER' })).toEqual([]);
  });

  it('storage:X4: a node that returns before the deadline lets the operation go on', async () => {
    t = await createTestApp({ topology: twoNodes(4), latenciesMs: { cutOver: 1000 }, settings: { maxConcurrentMoves: 1, operationDeadlineMs: 60_000 } });
    await mutate(t, 'startNodeDrain', '1');
    for (const n of ['2', '3']) await t.gql(`mutation { configureNode(nodeId: "${n}", policy: PAUSE) { __typename } }`);
    await t.cluster.simulation.setNodeOnline('1', false);
    await driveUntil(t, () => t!.app.storage.activeOperation('1')?.waitingOn?.kind === 'NODE_OFFLINE');
    await t.clock.advance(30_000);
    for (const n of ['2', '3']) await t.gql(`mutation { configureNode(nodeId: "${n}", policy: ACTIVE) { __typename } }`);
    await t.cluster.simulation.setNodeOnline('1', true);
    const done = await settle(t, '1');
    expect(done.state).toBe('SUCCEEDED');
    // The move in flight when the node vanished failed; the rest went on after it came back.
    expect(done.counts.moved + done.counts.failed).toBe(4);
    expect(done.counts.moved).toBeGreaterThanOrEqual(3);
  });

  it('destination node fails mid-move: that cut-over fails and is recorded, the others go on', async () => {
    t = await createTestApp({
      topology: {
        nodes: [{ id: '1' }, { id: '2' }, { id: '3' }],
        shards: [...shards(2, '1', '2'), { tenantId: 'u', attachedNodeId: '1', secondaries: [{ nodeId: '3' }] }],
      },
      latenciesMs: { cutOver: 1000 },
    });
    const op = await mutate(t, 'startNodeDrain', '1');
    await driveUntil(t, () => t!.app.storage.activeOperation('1')!.counts.moving === 3);
    await t.cluster.simulation.setNodeOnline('3', false);
    const done = await settle(t, '1');
    expect(done.state).toBe('SUCCEEDED');
    expect(done.counts).toMatchObject({ moved: 2, failed: 1, failedByReason: { UNAVAILABLE: 1 } });
    const failed = (await t.app.operations.getSteps(op.id, ['FAILED']))[0]!;
    expect(failed).toMatchObject({ workloadId: 'u', toNodeId: '3' });
    // No shard is left without an attached location.
    expect((await t.cluster.getShard('u'))?.attachedNodeId).toBe('1');
  });

  it('storage:S1: a policy change that cannot be persisted does not take effect', async () => {
    t = await createTestApp({ topology: twoNodes(1) });
    await refuseWrites(t.db, true);
    const res = await t.gql('mutation { configureNode(nodeId: "1", policy: PAUSE) { __typename } }');
    expect(res.errors?.[0]?.message).toBe('Unexpected error.');
    expect(t.app.storage.policyOf('1')).toBe('ACTIVE');
    await refuseWrites(t.db, false);
    expect(await policyOf(t, '1')).toBe('ACTIVE');
  });

  it('storage:S1: every transition is persisted and published with the node’s new state', async () => {
    t = await createTestApp({ topology: twoNodes(1) });
    const published: string[] = [];
    const sub = t.app.bus.subscribe('nodeChanged');
    const reading = (async () => {
      for await (const node of sub) {
        published.push(`${node.id}:${t!.app.storage.policyOf(node.id)}`);
        if (published.length === 3) break;
      }
    })();
    await mutate(t, 'startNodeDrain', '1');
    await settle(t, '1');
    await t.gql('mutation { configureNode(nodeId: "1", policy: ACTIVE) { __typename } }');
    await reading;
    expect(published).toEqual(['1:DRAINING', '1:PAUSE_FOR_RESTART', '1:ACTIVE']);
    const rows = await t.db.prisma.event.findMany({ where: { type: 'NODE_POLICY_CHANGED', nodeId: '1' }, orderBy: { seq: 'asc' } });
    expect(rows.map((r) => JSON.parse(r.payload).to)).toEqual(['DRAINING', 'PAUSE_FOR_RESTART', 'ACTIVE']);
    expect((await t.db.prisma.nodeState.findUnique({ where: { id: '1' } }))?.schedulingPolicy).toBe('ACTIVE');
  });

  it('storage:S2: heartbeats change availability only, never the policy; an operator PAUSE survives a restart (neon #9907)', async () => {
    t = await createTestApp({ topology: twoNodes(1), restartDelayMs: 100, heartbeatIntervalMs: 100 });
    await t.gql('mutation { configureNode(nodeId: "2", policy: PAUSE) { __typename } }');
    await t.cluster.simulation.setNodeOnline('2', false);
    await t.cluster.simulation.setNodeOnline('2', true);
    expect(await policyOf(t, '2')).toBe('PAUSE');
    await t.cluster.simulation.restartNode('2');
    await driveUntil(t, async () => (await t!.cluster.getNode('2'))?.availability === 'ACTIVE');
    expect(await policyOf(t, '2')).toBe('PAUSE');
    // A drained node that only loses heartbeats stays PAUSE_FOR_RESTART: only a re-attach changes it.
    await mutate(t, 'startNodeDrain', '1');
    await settle(t, '1');
    await t.cluster.simulation.setNodeOnline('1', false);
    await t.cluster.simulation.setNodeOnline('1', true);
    expect(await policyOf(t, '1')).toBe('PAUSE_FOR_RESTART');
    await t.cluster.simulation.restartNode('1');
    await driveUntil(t, async () => (await policyOf(t!, '1')) === 'ACTIVE');
  });
});
