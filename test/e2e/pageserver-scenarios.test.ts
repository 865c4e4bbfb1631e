import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/cluster/clock.ts';
import { createLogger } from '../../src/logger.ts';
import { DEFAULT_OPERATION_SETTINGS, type OperationSettings } from '../../src/operations/settings.ts';
import { buildApp, type App } from '../../src/server.ts';
import { openDatabase } from '../../src/store/index.ts';
import type { PageserverController } from '../../plugins/pageserver/index.ts';
import { roundRobinShards, shardIdOf, startSimCluster, waitFor, type SimCluster, type SimClusterSpec } from '../support/pageserver-sim/cluster.ts';

/**
 * Storage spec §8 through GraphQL (and scenario 1 through the Neon-compatible REST facade)
 * with the pageserver plugin driving three simulated pageservers over loopback HTTP. Every
 * assertion on placement reads the simulators' own view.
 */

interface World {
  cluster: SimCluster;
  backend: PageserverController;
  app: App;
  gql<T = any>(query: string): Promise<T>;
}

const cleanups: (() => Promise<void>)[] = [];
let world: World | undefined;
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  const w = world;
  world = undefined;
  w?.cluster.safety.assertSafe();
});

async function setUp(spec: SimClusterSpec, settings: Partial<OperationSettings> = {}): Promise<World> {
  const cluster = await startSimCluster(spec);
  cleanups.push(() => cluster.close());
  const backend = await cluster.startController();
  const dir = mkdtempSync(join(tmpdir(), 'lk-ps-e2e-'));
  const db = await openDatabase({ url: `file:${join(dir, 'lockkeeper.db')}` });
  const app = buildApp({
    backend,
    log: createLogger('silent'),
    prisma: db.prisma,
    clock: systemClock,
    settings: { ...DEFAULT_OPERATION_SETTINGS, ...settings },
    onClose: () => db.close(),
  });
  await app.ready();
  cleanups.push(async () => {
    await app.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  const gql = async (query: string) => {
    const res = await app.yoga.fetch('http://lockkeeper.test/graphql', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) });
    const body = (await res.json()) as { data?: any; errors?: unknown };
    if (body.errors) throw new Error(JSON.stringify(body.errors));
    return body.data;
  };
  world = { cluster, backend, app, gql };
  return world;
}

const OP = '__typename ... on Operation { id state } ... on Error { code message }';

async function start(w: World, mutation: string, nodeId: string) {
  return (await w.gql(`mutation { r: ${mutation}(nodeId: "${nodeId}") { ${OP} } }`)).r;
}

async function policy(w: World, nodeId: string): Promise<string> {
  return (await w.gql(`{ node(id: "${nodeId}") { ... on ClusterNode { schedulingPolicy availability } } }`)).node.schedulingPolicy;
}

async function settled(w: World, nodeId: string, timeoutMs = 20_000) {
  await waitFor(() => w.app.operations.activeOperation(nodeId) === null, { timeoutMs, what: `operation on node ${nodeId} to end` });
  const [latest] = await w.app.operations.listOperations({ nodeId });
  return latest!;
}

/** Every shard: exactly one AttachedSingle in the simulators, where the controller says, at the generation it issued last. */
async function expectConsistent(w: World) {
  const view = w.cluster.view();
  for (const shard of await w.backend.listShards()) {
    const singles = Object.entries(view[shard.id] ?? {}).filter(([, v]) => v.startsWith('AttachedSingle@'));
    expect(singles, `shard ${shard.id}: ${JSON.stringify(view[shard.id])}`).toEqual([[shard.attachedNodeId, `AttachedSingle@${w.backend.generationOf(shard.id)}`]]);
    for (const s of shard.secondaryNodeIds) expect(view[shard.id]?.[s]).toBe('Secondary@-');
  }
}

const total = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0);

async function restartAndWaitActive(w: World, nodeId: string) {
  await w.cluster.sim(nodeId).restart({ downMs: 20 });
  await waitFor(async () => (await w.backend.getNode(nodeId))?.availability === 'ACTIVE' && (await policy(w, nodeId)) === 'ACTIVE', { what: `node ${nodeId} ACTIVE after restart` });
}

async function rollingRestart(w: World, nodeIds: string[]) {
  for (const id of nodeIds) {
    const before = total(w.cluster.attachedSingleCounts());
    expect((await start(w, 'startNodeDrain', id)).__typename).toBe('Operation');
    expect((await settled(w, id)).state).toBe('SUCCEEDED');
    expect(await policy(w, id)).toBe('PAUSE_FOR_RESTART');
    const counts = w.cluster.attachedSingleCounts();
    expect(w.cluster.sim(id).attached()).toEqual([]);
    expect(total(counts)).toBe(before);
    await expectConsistent(w);
    await restartAndWaitActive(w, id);
    expect((await start(w, 'startNodeFill', id)).__typename).toBe('Operation');
    expect((await settled(w, id)).state).toBe('SUCCEEDED');
    expect(await policy(w, id)).toBe('ACTIVE');
    await expectConsistent(w);
  }
}

const THREE_NODES = (zones: string[]) => [1, 2, 3].map((id, i) => ({ id, zone: zones[i % zones.length]! }));

describe('storage spec §8 with Neon pageservers (simulated, over HTTP)', () => {
  // Two pageservers here: with three in one AZ and 8 shards per tenant, the fill's per-tenant
  // cap (F3: max(1, 8 / 3) = 2 shards of a tenant per fill) keeps a single pass from levelling
  // counts to within 2 — an engine rule, the same with the simulated cluster.
  it('1. graceful cluster restart, one AZ (two pageservers): every node drains to zero, nothing lost, attached counts end within 2', async () => {
    const w = await setUp({ nodes: [{ id: 1, zone: 'az-a' }, { id: 2, zone: 'az-a' }], shards: roundRobinShards([1, 2], 5, 8) });
    await rollingRestart(w, ['1', '2']);
    const counts = Object.values(w.cluster.attachedSingleCounts());
    expect(total(w.cluster.attachedSingleCounts())).toBe(40);
    expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(2);
  });

  it('1. graceful cluster restart, two AZs (three pageservers): every node drains to zero, nothing lost', async () => {
    const w = await setUp({ nodes: THREE_NODES(['az-a', 'az-b']), shards: roundRobinShards([1, 2, 3], 5, 8) });
    await rollingRestart(w, ['1', '2', '3']);
    expect(total(w.cluster.attachedSingleCounts())).toBe(40);
  });

  it('2. a lagging secondary: skipped with SECONDARY_LAGGING, then moved once it catches up', async () => {
    const slow = { tenant: 1, attached: 1, secondaries: [2], lag: { 2: { bytes: 8 * 1024 * 1024 } } };
    const fast = { tenant: 2, attached: 1, secondaries: [2] };
    const w = await setUp({ nodes: THREE_NODES(['az-a']), shards: [slow, fast], downloadBytesPerSecond: 0 }, { maxSecondaryLagBytes: 1024 * 1024 });
    const op = await start(w, 'startNodeDrain', '1');
    expect((await settled(w, '1')).state).toBe('SUCCEEDED');
    expect(await policy(w, '1')).toBe('PAUSE_FOR_RESTART');
    expect(w.cluster.view()[shardIdOf(slow)]).toEqual({ '1': 'AttachedSingle@1', '2': 'Secondary@-' });
    expect(w.cluster.view()[shardIdOf(fast)]).toEqual({ '1': 'Secondary@-', '2': 'AttachedSingle@2' });
    expect((await w.app.operations.getSteps(op.id, ['SKIPPED']))[0]).toMatchObject({ workloadId: shardIdOf(slow), reason: 'SECONDARY_LAGGING' });
    // The secondary catches up; the operator sets ACTIVE and drains again.
    w.cluster.sim(2).setSecondaryProgress(shardIdOf(slow), 8 * 1024 * 1024 + 4 * 1024 * 1024);
    await w.gql('mutation { configureNode(nodeId: "1", policy: ACTIVE) { __typename } }');
    expect((await start(w, 'startNodeDrain', '1')).__typename).toBe('Operation');
    expect((await settled(w, '1')).counts.moved).toBe(1);
    expect(w.cluster.view()[shardIdOf(slow)]).toEqual({ '1': 'Secondary@-', '2': 'AttachedSingle@2' });
    await expectConsistent(w);
  });

  it('3. cancellation of a slow drain: policy back to ACTIVE, moved shards stay moved', async () => {
    const w = await setUp({ nodes: THREE_NODES(['az-a']), shards: roundRobinShards([1, 2], 5, 4) }, { maxConcurrentMoves: 2 });
    for (const sim of w.cluster.sims.values()) sim.setLatency(60);
    const before = w.cluster.attachedSingleCounts()['1']!;
    await start(w, 'startNodeDrain', '1');
    await waitFor(() => (w.app.operations.activeOperation('1')?.counts.moved ?? 0) >= 2, { what: '2 shards moved' });
    expect(await policy(w, '1')).toBe('DRAINING');
    expect((await start(w, 'cancelNodeDrain', '1')).__typename).toBe('Operation');
    const done = await settled(w, '1');
    expect(done.state).toBe('CANCELLED');
    expect(await policy(w, '1')).toBe('ACTIVE');
    expect(done.counts.moved).toBeGreaterThanOrEqual(2);
    expect(done.counts.moved).toBeLessThan(before);
    expect(w.cluster.attachedSingleCounts()['1']).toBe(before - done.counts.moved);
    await expectConsistent(w);
  });

  it('4. node restarted during a drain: configureNode refused while it runs, drain ends NODE_STATE_CHANGED, then PAUSE is accepted', async () => {
    const w = await setUp({ nodes: THREE_NODES(['az-a']), shards: roundRobinShards([1, 2], 5, 4) }, { maxConcurrentMoves: 2 });
    for (const sim of w.cluster.sims.values()) sim.setLatency(60);
    await start(w, 'startNodeDrain', '1');
    const refused = await w.gql('mutation { configureNode(nodeId: "1", policy: PAUSE) { __typename } }');
    expect(refused.configureNode.__typename).toBe('PreconditionFailedError');
    await waitFor(() => (w.app.operations.activeOperation('1')?.counts.moved ?? 0) >= 1, { what: 'a shard moved' });
    await w.cluster.sim(1).restart();
    const done = await settled(w, '1');
    expect(done).toMatchObject({ state: 'FAILED', error: 'NODE_STATE_CHANGED' });
    await waitFor(async () => (await w.backend.getNode('1'))?.availability === 'ACTIVE', { what: 'node 1 ACTIVE' });
    const accepted = await w.gql('mutation { configureNode(nodeId: "1", policy: PAUSE) { __typename ... on ClusterNode { schedulingPolicy } } }');
    expect(accepted.configureNode).toEqual({ __typename: 'ClusterNode', schedulingPolicy: 'PAUSE' });
    await expectConsistent(w);
  });

  it('5. a node set to DRAINING or PAUSE by configureNode gets no new shards', async () => {
    for (const p of ['DRAINING', 'PAUSE']) {
      const shards = [1, 2, 3, 4].map((tenant) => ({ tenant, attached: 1, secondaries: [2, 3] }));
      const w = await setUp({ nodes: THREE_NODES(['az-a']), shards });
      await w.gql(`mutation { configureNode(nodeId: "2", policy: ${p}) { __typename } }`);
      const res = await w.gql('{ node(id: "2") { ... on ClusterNode { maySchedule schedulingPolicy } } }');
      expect(res.node).toEqual({ maySchedule: false, schedulingPolicy: p });
      await start(w, 'startNodeDrain', '1');
      expect((await settled(w, '1')).counts.moved).toBe(4);
      expect(w.cluster.attachedSingleCounts()).toEqual({ '1': 0, '2': 0, '3': 4 });
      expect(w.cluster.sim(2).attached()).toEqual([]);
      expect((await start(w, 'startNodeFill', '2')).__typename).not.toBe('Operation');
      await expectConsistent(w);
      for (const c of cleanups.splice(0).reverse()) await c();
      w.cluster.safety.assertSafe();
    }
  });
});

describe('scenario 1 through the Neon-compatible REST facade', () => {
  it('drains, restarts and fills each of three pageservers with /control/v1 calls; nothing lost', async () => {
    const w = await setUp({ nodes: THREE_NODES(['az-a']), shards: roundRobinShards([1, 2, 3], 5, 8) });
    const { port } = await w.app.start(0, '127.0.0.1');
    const base = `http://127.0.0.1:${port}/control/v1`;
    const call = async (method: string, path: string) => {
      const res = await fetch(`${base}${path}`, { method });
      return { status: res.status, json: (await res.json()) as any };
    };
    for (const id of ['1', '2', '3']) {
      expect(await call('PUT', `/node/${id}/drain`)).toEqual({ status: 202, json: null });
      await waitFor(async () => (await call('GET', `/node/${id}`)).json.scheduling === 'PauseForRestart', { timeoutMs: 20_000, what: `node ${id} PauseForRestart` });
      const shards = (await call('GET', `/node/${id}/shards`)).json;
      expect(shards.node_id).toBe(Number(id));
      expect(shards.shards.every((s: { is_intended_secondary: boolean }) => s.is_intended_secondary)).toBe(true);
      expect(w.cluster.sim(id).attached()).toEqual([]);
      expect(total(w.cluster.attachedSingleCounts())).toBe(40);
      await w.cluster.sim(id).restart({ downMs: 20 });
      await waitFor(async () => {
        const node = (await call('GET', `/node/${id}`)).json;
        return node.availability === 'Active' && node.scheduling === 'Active';
      }, { what: `node ${id} Active` });
      expect(await call('PUT', `/node/${id}/fill`)).toEqual({ status: 202, json: null });
      await settled(w, id);
      expect((await call('GET', `/node/${id}`)).json.scheduling).toBe('Active');
      await expectConsistent(w);
    }
    expect(total(w.cluster.attachedSingleCounts())).toBe(40);
    expect(Math.min(...Object.values(w.cluster.attachedSingleCounts()))).toBeGreaterThan(0);
  });
});
