import { afterEach, describe, expect, it } from 'vitest';
import { generateTopology, type TopologySpec } from '../../plugins/fake/index.ts';
import { createTestApp, type TestApp } from '../support/graphql-app.ts';
import { attachedCounts, driveUntil, mutate, OPERATION_FIELDS, policyOf, settle } from './drive.ts';

let t: TestApp;
afterEach(async () => {
  await t?.stop();
});

/** 5 tenants × 8 shards, each with one secondary, over `nodes` nodes in `zones` zones. */
function cluster(nodes: number, zones: number): TopologySpec {
  return generateTopology({ nodes, zones, vmsPerNode: 0, tenants: 5, shardsPerTenant: 8, secondariesPerShard: 1 });
}

const total = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0);

async function rollingRestart(nodeIds: string[]) {
  for (const id of nodeIds) {
    const before = total(await attachedCounts(t));
    expect((await mutate(t, 'startNodeDrain', id)).__typename).toBe('Operation');
    expect((await settle(t, id)).state).toBe('SUCCEEDED');
    expect(await policyOf(t, id)).toBe('PAUSE_FOR_RESTART');
    const after = await attachedCounts(t);
    expect(after[id] ?? 0).toBe(0);
    expect(total(after)).toBe(before);
    await t.cluster.simulation.restartNode(id);
    await driveUntil(t, async () => (await t.cluster.getNode(id))?.availability === 'ACTIVE' && (await policyOf(t, id)) === 'ACTIVE');
    expect((await mutate(t, 'startNodeFill', id)).__typename).toBe('Operation');
    expect((await settle(t, id)).state).toBe('SUCCEEDED');
    expect(await policyOf(t, id)).toBe('ACTIVE');
  }
}

describe('storage:scenario-1–5', () => {
  it('1. graceful cluster restart, one AZ: attached counts end within 2 of each other', async () => {
    t = await createTestApp({ topology: cluster(2, 1), latenciesMs: { cutOver: 100 }, restartDelayMs: 500, heartbeatIntervalMs: 500 });
    await rollingRestart(['1', '2']);
    const counts = Object.values(await attachedCounts(t));
    expect(total(await attachedCounts(t))).toBe(40);
    expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(2);
  });

  it('1. graceful cluster restart, two AZs and three nodes: every node drains to zero, nothing lost, shards return home', async () => {
    t = await createTestApp({ topology: cluster(3, 2), latenciesMs: { cutOver: 100 }, restartDelayMs: 500, heartbeatIntervalMs: 500 });
    await rollingRestart(['1', '2', '3']);
    expect(total(await attachedCounts(t))).toBe(40);
    const zones = new Map((await t.cluster.listNodes()).map((n) => [n.id, n.zone]));
    const away = (await t.cluster.listShards()).filter(
      (s) => s.preferredZone && zones.get(s.attachedNodeId) !== s.preferredZone && s.secondaryNodeIds.some((n) => zones.get(n) === s.preferredZone),
    );
    // A shard with a secondary in its home AZ ends at home.
    expect(away).toEqual([]);
  });

  it('2. a lagging secondary: skipped with SECONDARY_LAGGING, then moved once it catches up', async () => {
    t = await createTestApp({
      topology: {
        nodes: [{ id: '1' }, { id: '2' }],
        shards: [
          { tenantId: 'slow', attachedNodeId: '1', secondaries: [{ nodeId: '2', lagBytes: 8 * 1024 * 1024, downloadBytesPerSecond: 0 }] },
          { tenantId: 'fast', attachedNodeId: '1', secondaries: [{ nodeId: '2' }] },
        ],
      },
      settings: { maxSecondaryLagBytes: 1024 * 1024 },
    });
    const op = await mutate(t, 'startNodeDrain', '1');
    const first = await settle(t, '1');
    expect(first.state).toBe('SUCCEEDED');
    expect(await policyOf(t, '1')).toBe('PAUSE_FOR_RESTART');
    expect((await t.cluster.getShard('slow'))?.attachedNodeId).toBe('1');
    expect((await t.app.operations.getSteps(op.id, ['SKIPPED']))[0]).toMatchObject({ workloadId: 'slow', reason: 'SECONDARY_LAGGING' });
    // The secondary catches up; the operator sets ACTIVE and drains again.
    await t.cluster.simulation.setSecondaryLag('slow', '2', 0);
    await t.gql('mutation { configureNode(nodeId: "1", policy: ACTIVE) { __typename } }');
    await mutate(t, 'startNodeDrain', '1');
    expect((await settle(t, '1')).counts.moved).toBe(1);
    expect((await t.cluster.getShard('slow'))?.attachedNodeId).toBe('2');
  });

  it('3. cancellation of a slow drain: policy back to ACTIVE, moved shards stay moved', async () => {
    t = await createTestApp({ topology: cluster(2, 1), latenciesMs: { cutOver: 5000 }, settings: { maxConcurrentMoves: 4 } });
    const before = await attachedCounts(t);
    await mutate(t, 'startNodeDrain', '1');
    await driveUntil(t, () => t.app.storage.activeOperation('1')!.counts.moved >= 4, { stepMs: 500 });
    expect(await policyOf(t, '1')).toBe('DRAINING');
    await mutate(t, 'cancelNodeDrain', '1');
    const done = await settle(t, '1', { stepMs: 500 });
    expect(done.state).toBe('CANCELLED');
    expect(await policyOf(t, '1')).toBe('ACTIVE');
    const after = await attachedCounts(t);
    expect(before['1']! - after['1']!).toBe(done.counts.moved);
    expect(done.counts.moved).toBeGreaterThanOrEqual(4);
    expect(done.counts.moved).toBeLessThan(before['1']!);
  });

  it('4. node restarted during a drain: configureNode refused while it runs, drain ends NODE_STATE_CHANGED, then PAUSE is accepted', async () => {
    t = await createTestApp({
      topology: cluster(2, 1),
      latenciesMs: { cutOver: 2000 },
      restartDelayMs: 1000,
      heartbeatIntervalMs: 500,
      settings: { maxConcurrentMoves: 2 },
    });
    await mutate(t, 'startNodeDrain', '1');
    const refused = await t.gql('mutation { configureNode(nodeId: "1", policy: PAUSE) { __typename } }');
    expect(refused.data.configureNode.__typename).toBe('PreconditionFailedError');
    await t.cluster.simulation.restartNode('1');
    const done = await settle(t, '1');
    expect(done).toMatchObject({ state: 'FAILED', error: 'NODE_STATE_CHANGED' });
    const accepted = await t.gql('mutation { configureNode(nodeId: "1", policy: PAUSE) { __typename ... on ClusterNode { schedulingPolicy } } }');
    expect(accepted.data.configureNode).toEqual({ __typename: 'ClusterNode', schedulingPolicy: 'PAUSE' });
  });

  it('5. a node set to DRAINING or PAUSE by configureNode gets no new shards', async () => {
    for (const policy of ['DRAINING', 'PAUSE']) {
      // Shards on node 1 have secondaries on nodes 2 (preferred: lower id) and 3.
      t = await createTestApp({
        topology: {
          nodes: [{ id: '1' }, { id: '2' }, { id: '3' }],
          shards: Array.from({ length: 4 }, (_, i) => ({ tenantId: `t${i}`, attachedNodeId: '1', secondaries: [{ nodeId: '2' }, { nodeId: '3' }] })),
        },
      });
      await t.gql(`mutation { configureNode(nodeId: "2", policy: ${policy}) { __typename } }`);
      const res = await t.gql('{ node(id: "2") { ... on ClusterNode { maySchedule schedulingPolicy } } }');
      expect(res.data.node).toEqual({ maySchedule: false, schedulingPolicy: policy });
      await mutate(t, 'startNodeDrain', '1');
      expect((await settle(t, '1')).counts.moved).toBe(4);
      expect(await attachedCounts(t)).toEqual({ '3': 4 });
      // Filling node 2 is refused: its policy is not ACTIVE.
      expect((await mutate(t, 'startNodeFill', '2')).__typename).not.toBe('Operation');
      await t.stop();
    }
  });
});

describe('storage:P1: progress', () => {
  it('exposes kind, node, state, counts, per-shard outcome, waiting-on, times and an ETA from the observed rate', async () => {
    t = await createTestApp({ topology: cluster(2, 1), latenciesMs: { cutOver: 1000 }, settings: { maxConcurrentMoves: 4 } });
    const op = await mutate(t, 'startNodeDrain', '1', ', reason: "storage:P1"');
    await driveUntil(t, () => t.app.storage.activeOperation('1')!.counts.moved >= 8, { stepMs: 250 });
    const res = await t.gql(`{ operation(id: "${op.id}") { ... on Operation { ${OPERATION_FIELDS}
      node { id schedulingPolicy } steps(first: 3, states: [MOVED]) { totalCount edges { node { workloadId state fromNodeId toNodeId startedAt finishedAt shard { id attachedNodeId } } } } } } }`);
    const live = res.data.operation;
    expect(live).toMatchObject({ kind: 'DRAIN', nodeId: '1', state: 'RUNNING', reason: 'storage:P1', node: { id: '1', schedulingPolicy: 'DRAINING' } });
    expect(live.waitingOn).toMatchObject({ kind: 'MOVES_IN_FLIGHT', nodeId: '1' });
    expect(live.waitingOn.workloadIds).toHaveLength(4);
    // 4 wide at 1 s per move: one move per 250 ms, so the rest takes (total − moved) / 4 s.
    const remaining = live.counts.planned + live.counts.moving;
    expect(live.etaSeconds).toBeGreaterThan(0);
    expect(Math.abs(live.etaSeconds - remaining / 4)).toBeLessThanOrEqual(1.5);
    expect(new Date(live.eta).getTime()).toBeGreaterThan(new Date(live.startedAt).getTime());
    expect(live.steps.totalCount).toBe(live.counts.moved);
    expect(live.steps.edges[0].node).toMatchObject({ state: 'MOVED', fromNodeId: '1', shard: { attachedNodeId: live.steps.edges[0].node.toNodeId } });
    const done = await settle(t, '1');
    expect(done.finishedAt).not.toBeNull();
    const list = await t.gql(`{ operations(nodeId: "1", states: [SUCCEEDED]) { totalCount edges { node { id state eta waitingOn { kind } } } } }`);
    expect(list.data.operations.edges[0].node).toMatchObject({ id: op.id, state: 'SUCCEEDED', eta: null, waitingOn: null });
    expect((await t.gql('{ operation(id: "nope") { __typename } }')).data.operation.__typename).toBe('NotFoundError');
  });
});
