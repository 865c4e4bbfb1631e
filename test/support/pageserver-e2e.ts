import { expect } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import { DEFAULT_CONFIG } from '../../src/config/defaults.ts';
import type { OperationSettings } from '../../src/config/schema.ts';
import { buildApp, type App } from '../../src/server.ts';
import type { PageserverController } from '../../plugins/pageserver/index.ts';
import type { PageserverOptionsInput } from '../../plugins/pageserver/options.ts';
import type { SimClusterSpec } from '../../simulators/pageserver/index.ts';
import { startSimCluster, type SimCluster } from './pageserver-cluster.ts';

/**
 * End-to-end worlds for the pageserver plugin: simulated pageservers over loopback HTTP,
 * the plugin, and the whole app (GraphQL through `gql`). `pageserverWorlds(afterEach)`
 * closes everything after each test and fails it if the safety checker saw a violation.
 */
export interface World {
  cluster: SimCluster;
  backend: PageserverController;
  app: App;
  gql<T = any>(query: string): Promise<T>;
}

export interface WorldOptions {
  settings?: Partial<OperationSettings>;
  plugin?: Partial<PageserverOptionsInput>;
  /** Configure the compute hook simulator as the plugin's controlPlane (default true). */
  hook?: boolean;
}

export function pageserverWorlds(afterEach: (fn: () => Promise<void>) => void) {
  const cleanups: (() => Promise<void>)[] = [];
  let world: World | undefined;
  const closeAll = async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  };
  afterEach(async () => {
    await closeAll();
    const w = world;
    world = undefined;
    w?.cluster.safety.assertSafe();
  });

  async function setUp(spec: SimClusterSpec, { settings = {}, plugin = {}, hook = true }: WorldOptions = {}): Promise<World> {
    const cluster = await startSimCluster(spec);
    cleanups.push(() => cluster.close());
    const backend = await cluster.startController(plugin, { hook });
    // One database for the gateway and the plugin's intent, as in production.
    const app = buildApp({
      backend,
      log: createLogger('silent'),
      prisma: cluster.db.prisma,
      hotPath: cluster.db.hotPath,
      clock: cluster.clock,
      config: { ...DEFAULT_CONFIG, operations: { ...DEFAULT_CONFIG.operations, ...settings } },
    });
    await cluster.drive(app.ready());
    cleanups.push(async () => {
      cluster.controller = undefined;
      await app.stop();
    });
    const gql = async (query: string) => {
      const res = await app.yoga.fetch('http://lockkeeper.test/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query }),
      });
      const body = (await res.json()) as { data?: any; errors?: unknown };
      if (body.errors) throw new Error(JSON.stringify(body.errors));
      return body.data;
    };
    world = { cluster, backend, app, gql };
    return world;
  }

  return { setUp, closeAll };
}

const OP = '__typename ... on Operation { id state } ... on Error { code message }';

export async function start(w: World, mutation: string, nodeId: string) {
  return (await w.gql(`mutation { r: ${mutation}(nodeId: "${nodeId}") { ${OP} } }`)).r;
}

export async function policy(w: World, nodeId: string): Promise<string> {
  return (await w.gql(`{ node(id: "${nodeId}") { ... on ClusterNode { schedulingPolicy availability } } }`)).node.schedulingPolicy;
}

export async function settled(w: World, nodeId: string, maxMs = 600_000) {
  await w.cluster.until(() => w.app.storage.activeOperation(nodeId) === null, { maxMs, what: `operation on node ${nodeId} to end` });
  const [latest] = await w.app.operations.listOperations({ nodeId });
  return latest!;
}

/** Every shard: exactly one AttachedSingle in the simulators, where the controller says, at the generation it issued last. */
export async function expectConsistent(w: World) {
  const view = w.cluster.view();
  for (const shard of await w.backend.listShards()) {
    const singles = Object.entries(view[shard.id] ?? {}).filter(([, v]) => v.startsWith('AttachedSingle@'));
    expect(singles, `shard ${shard.id}: ${JSON.stringify(view[shard.id])}`).toEqual([
      [shard.attachedNodeId, `AttachedSingle@${w.backend.generationOf(shard.id)}`],
    ]);
    for (const s of shard.secondaryNodeIds) expect(view[shard.id]?.[s]).toBe('Secondary@-');
  }
}

export const total = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0);

export async function restartAndWaitActive(w: World, nodeId: string) {
  await w.cluster.drive(w.cluster.sim(nodeId).restart({ downMs: 1000 }));
  await w.cluster.until(async () => (await w.backend.getNode(nodeId))?.availability === 'ACTIVE' && (await policy(w, nodeId)) === 'ACTIVE', {
    what: `node ${nodeId} ACTIVE after restart`,
  });
}

/**
 * Drain, restart and fill each node in turn, checking the simulators after each step.
 * Returns the AttachedSingle counts per node (simulators' view) after each drain and fill.
 */
export async function rollingRestart(
  w: World,
  nodeIds: string[],
): Promise<{ node: string; afterDrain: Record<string, number>; afterFill: Record<string, number> }[]> {
  const trace: { node: string; afterDrain: Record<string, number>; afterFill: Record<string, number> }[] = [];
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
    trace.push({ node: id, afterDrain: counts, afterFill: w.cluster.attachedSingleCounts() });
  }
  return trace;
}

/** Requests sent to a simulated pageserver since a mark, its utilization polls left out; call without `since` for the mark. */
export function callsTo(w: World, nodeId: number, since = 0) {
  return w.cluster.log
    .find({ source: `node ${nodeId}` })
    .filter((e) => e.path !== '/v1/utilization')
    .slice(since);
}

export const THREE_NODES = (zones: string[]) => [1, 2, 3].map((id, i) => ({ id, zone: zones[i % zones.length]! }));

export interface StepView {
  workloadId: string;
  state: string;
  reason: string | null;
  error: string | null;
  fromNodeId: string | null;
  toNodeId: string | null;
}

/** An operation's steps as GraphQL shows them. */
export async function stepsOf(w: World, operationId: string): Promise<StepView[]> {
  const data = await w.gql(
    `{ operation(id: "${operationId}") { __typename ... on Operation { steps(first: 100) { edges { node { workloadId state reason error fromNodeId toNodeId } } } } } }`,
  );
  return data.operation.steps.edges.map((e: { node: StepView }) => e.node);
}

/** The app listening on a free port, and a REST caller that moves the world's clock while a request runs. */
export async function restClient(w: World) {
  const { port } = await w.app.start(0, '127.0.0.1');
  return async (method: string, path: string, body?: unknown) => {
    const res = await w.cluster.drive(
      fetch(`http://127.0.0.1:${port}${path}`, {
        method,
        headers: { 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    );
    const text = await res.text();
    return { status: res.status, json: text ? JSON.parse(text) : undefined };
  };
}
