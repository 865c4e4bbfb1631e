import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createSimulatedCluster, type SimulatedCluster, type TopologySpec } from '../../plugins/fake/index.ts';
import type { ClusterBackend } from '../../src/cluster/backend.ts';
import { VirtualClock } from '../support/virtual-clock.ts';
import { DEFAULT_CONFIG } from '../../src/config/defaults.ts';
import { createEventBus } from '../../src/events/bus.ts';
import { createLogger, type Logger } from '../../src/logger.ts';
import { OperationCoordinator } from '../../src/operations/core/coordinator.ts';
import { createOperationMetrics } from '../../src/operations/core/metrics.ts';
import { DeleteEngine } from '../../src/operations/delete/engine.ts';
import { FailoverEngine } from '../../src/operations/failover/engine.ts';
import { ShardControls } from '../../src/operations/shard-controls/service.ts';
import { StorageEngine } from '../../src/operations/storage/engine.ts';
import { createNeonFacade, type NeonFacadeDeps } from '../../src/rest/neon-facade.ts';
import { AuditLog } from '../../src/store/audit-log.ts';
import { openDatabase, type Database } from '../../src/store/database.ts';
import { createRepositories } from '../../src/store/repositories.ts';
import { useTempDir } from '../store/helpers.ts';

const tempDir = useTempDir('lockkeeper-rest-');

/**
 * Nodes listed out of order (10 before 2) to check numeric sorting. Node 1 has its
 * listen addresses in labels; the others fall back to their names and Neon's defaults.
 */
const TOPOLOGY: TopologySpec = {
  nodes: [
    { id: '10', zone: 'az-b' },
    { id: '2', zone: 'az-a' },
    {
      id: '1',
      zone: 'az-a',
      labels: {
        'lockkeeper.io/listen-http-addr': 'ps-1.storage.internal',
        'lockkeeper.io/listen-http-port': '19898',
        'lockkeeper.io/listen-pg-addr': 'ps-1-pg.storage.internal',
        'lockkeeper.io/listen-pg-port': '16400',
      },
    },
    { id: '3', zone: 'az-b' },
  ],
  shards: [
    ...[0, 1, 2, 3].map((n) => ({ tenantId: 't1', shardNumber: n, shardCount: 4, attachedNodeId: '1', secondaries: [{ nodeId: '2' }] })),
    { tenantId: 't0', attachedNodeId: '2', secondaries: [{ nodeId: '1' }] },
    { tenantId: 't3', attachedNodeId: '3', secondaries: [{ nodeId: '10' }] },
  ],
};
const T1_SHARDS = ['t1-0004', 't1-0104', 't1-0204', 't1-0304'];

interface Harness {
  url: string;
  clock: VirtualClock;
  cluster: SimulatedCluster;
  db: Database;
  storage: StorageEngine;
  metrics: ReturnType<typeof createOperationMetrics>;
  call(
    method: string,
    path: string,
    init?: { body?: unknown; headers?: Record<string, string> },
  ): Promise<{ status: number; json: any; text: string; headers: Headers }>;
  /** The node's `scheduling` as GET /control/v1/node/:id reports it. */
  scheduling(nodeId: string): Promise<string>;
  /** Ids of the shards attached to the node, per GET /control/v1/node/:id/shards. */
  attached(nodeId: string): Promise<string[]>;
  /** Advances the clock by `ms`, then waits until the node's operation (if any) has ended. */
  runOperation(nodeId: string, ms: number): Promise<void>;
  auditRows(): Promise<{ actor: string; action: string; arguments: string; reason: string | null; outcome: string; nodeId: string | null }[]>;
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function setup(
  options: { topology?: TopologySpec; facade?: Partial<NeonFacadeDeps>; wrapBackend?: (b: ClusterBackend) => ClusterBackend } = {},
): Promise<Harness> {
  const clock = new VirtualClock();
  const cluster = createSimulatedCluster({
    clock,
    topology: options.topology ?? TOPOLOGY,
    latenciesMs: { cutOver: 100 },
    restartDelayMs: 1000,
    heartbeatIntervalMs: 500,
  });
  const db = await openDatabase({ url: `file:${tempDir()}/x.db` });
  const metrics = createOperationMetrics({ defaultMetrics: false });
  const shared = { store: createRepositories(db.prisma, db.hotPath), bus: createEventBus(), clock, log: createLogger('silent'), observer: metrics.observer };
  const operations = new OperationCoordinator(shared);
  const engineDeps = { ...shared, operations, backend: cluster, settings: DEFAULT_CONFIG.operations };
  const storage = new StorageEngine(engineDeps);
  const audit = new AuditLog(db.prisma);
  const failover = new FailoverEngine({ ...engineDeps, storage, audit });
  const deletes = new DeleteEngine({ ...engineDeps, storage });
  const shardControls = new ShardControls({ ...engineDeps, storage });
  await operations.start();
  cleanups.push(async () => {
    await operations.shutdown();
    await cluster.close();
    await db.close();
  });
  const facade = createNeonFacade({
    storage,
    failover,
    deletes,
    shardControls,
    backend: options.wrapBackend ? options.wrapBackend(cluster) : cluster,
    audit,
    clock,
    maxBodyBytes: DEFAULT_CONFIG.limits.maxBodyBytes,
    ...options.facade,
  });
  const server = createServer((req, res) => {
    void facade(req, res).then((handled) => {
      if (!handled) {
        res.writeHead(418, { 'content-type': 'text/plain' });
        res.end('not the facade');
      }
    });
  });
  const url = await listen(server);
  const call: Harness['call'] = async (method, path, init = {}) => {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: init.headers,
      body: init.body === undefined ? undefined : typeof init.body === 'string' ? init.body : JSON.stringify(init.body),
    });
    const text = await res.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: res.status, json, text, headers: res.headers };
  };
  return {
    url,
    clock,
    cluster,
    db,
    storage,
    metrics,
    call,
    async scheduling(nodeId) {
      return (await call('GET', `/control/v1/node/${nodeId}`)).json.scheduling;
    },
    async attached(nodeId) {
      const { shards } = (await call('GET', `/control/v1/node/${nodeId}/shards`)).json;
      return shards.filter((s: { is_observed_secondary: boolean }) => !s.is_observed_secondary).map((s: { tenant_shard_id: string }) => s.tenant_shard_id);
    },
    async runOperation(nodeId, ms) {
      await clock.advance(ms);
      await storage.settled(nodeId);
    },
    // In insertion order: the virtual clock gives many rows the same `at`.
    auditRows: () => db.prisma.$queryRawUnsafe('SELECT actor, action, arguments, reason, outcome, nodeId FROM "AuditEntry" ORDER BY rowid'),
  };
}

const NODE_FIELDS = [
  'availability',
  'availability_zone_id',
  'id',
  'listen_grpc_addr',
  'listen_grpc_port',
  'listen_http_addr',
  'listen_http_port',
  'listen_https_port',
  'listen_pg_addr',
  'listen_pg_port',
  'scheduling',
];

describe('Neon REST facade: reading nodes (neon:L8)', () => {
  it('GET /control/v1/node lists nodes sorted by numeric id, with Neon field names and spellings', async () => {
    const h = await setup();
    const { status, json, headers } = await h.call('GET', '/control/v1/node');
    expect(status).toBe(200);
    expect(headers.get('content-type')).toBe('application/json');
    expect(json.map((n: { id: unknown }) => n.id)).toEqual([1, 2, 3, 10]);
    for (const node of json) expect(Object.keys(node).sort()).toEqual(NODE_FIELDS);
    expect(json[0]).toEqual({
      id: 1,
      availability: 'Active',
      scheduling: 'Active',
      availability_zone_id: 'az-a',
      listen_http_addr: 'ps-1.storage.internal',
      listen_http_port: 19898,
      listen_https_port: null,
      listen_pg_addr: 'ps-1-pg.storage.internal',
      listen_pg_port: 16400,
      listen_grpc_addr: null,
      listen_grpc_port: null,
    });
    // Without labels: the node's name and the pageserver's default ports.
    expect(json[3]).toEqual({
      id: 10,
      availability: 'Active',
      scheduling: 'Active',
      availability_zone_id: 'az-b',
      listen_http_addr: 'node-10',
      listen_http_port: 9898,
      listen_https_port: null,
      listen_pg_addr: 'node-10',
      listen_pg_port: 6400,
      listen_grpc_addr: null,
      listen_grpc_port: null,
    });
  });

  it('reports non-numeric node ids as strings, after the numeric ones', async () => {
    const h = await setup({
      topology: { nodes: [{ id: 'zeta' }, { id: '7' }, { id: 'alpha', zone: null }, { id: '07' }], shards: [] },
    });
    const { json } = await h.call('GET', '/control/v1/node');
    expect(json.map((n: { id: unknown }) => n.id)).toEqual([7, '07', 'alpha', 'zeta']);
    // Neon's availability_zone_id is a string: a node without a zone reports "".
    expect(json.find((n: { id: unknown }) => n.id === 'alpha').availability_zone_id).toBe('');
  });

  it('GET /control/v1/node/:node_id gives one node, 404 for an unknown one, 400 for a non-integer id', async () => {
    const h = await setup();
    const one = await h.call('GET', '/control/v1/node/2');
    expect(one.status).toBe(200);
    expect(one.json).toMatchObject({ id: 2, availability: 'Active', scheduling: 'Active', availability_zone_id: 'az-a', listen_http_addr: 'node-2' });
    // Neon parses ids as integers: 002 is node 2.
    expect((await h.call('GET', '/control/v1/node/002')).json.id).toBe(2);

    const missing = await h.call('GET', '/control/v1/node/99');
    expect(missing.status).toBe(404);
    expect(missing.json).toEqual({ msg: 'NotFound: Node 99 not registered' });

    for (const bad of ['abc', '-1', '1.5', '%20', '18446744073709551616']) {
      const res = await h.call('GET', `/control/v1/node/${bad}`);
      expect(res.status, bad).toBe(400);
      expect(res.json.msg, bad).toMatch(/not a non-negative integer/);
    }
  });

  it('shows availability as Neon spells it: Offline, then WarmingUp after a re-attach, then Active', async () => {
    const h = await setup();
    await h.cluster.simulation!.restartNode('3');
    expect((await h.call('GET', '/control/v1/node/3')).json.availability).toBe('Offline');
    await h.clock.advance(1000);
    expect((await h.call('GET', '/control/v1/node/3')).json.availability).toBe('WarmingUp');
    await h.clock.advance(500);
    expect((await h.call('GET', '/control/v1/node/3')).json.availability).toBe('Active');
  });

  it('GET /control/v1/node/:node_id/shards lists attached shards and secondaries, sorted', async () => {
    const h = await setup();
    const { status, json } = await h.call('GET', '/control/v1/node/1/shards');
    expect(status).toBe(200);
    expect(json).toEqual({
      node_id: 1,
      shards: [
        { tenant_shard_id: 't0', is_observed_secondary: true, is_intended_secondary: true },
        ...T1_SHARDS.map((id) => ({ tenant_shard_id: id, is_observed_secondary: false, is_intended_secondary: false })),
      ],
    });
    expect((await h.call('GET', '/control/v1/node/10/shards')).json).toEqual({
      node_id: 10,
      shards: [{ tenant_shard_id: 't3', is_observed_secondary: true, is_intended_secondary: true }],
    });
    expect((await h.call('GET', '/control/v1/node/99/shards')).status).toBe(404);
    expect((await h.call('GET', '/control/v1/node/x/shards')).status).toBe(400);
  });
});

describe('Neon REST facade: drain and fill', () => {
  it('drains with 202 null, shows Draining then PauseForRestart, and moves the shards off', async () => {
    const h = await setup();
    const res = await h.call('PUT', '/control/v1/node/1/drain?reason=kernel%20upgrade');
    expect(res.status).toBe(202);
    expect(res.text).toBe('null');
    expect(await h.scheduling('1')).toBe('Draining');

    await h.runOperation('1', 1000);
    expect(await h.scheduling('1')).toBe('PauseForRestart');
    const shards = (await h.call('GET', '/control/v1/node/1/shards')).json.shards;
    expect(shards.every((s: { is_observed_secondary: boolean }) => s.is_observed_secondary)).toBe(true);
    expect(shards).toHaveLength(5);

    // The metrics moved (storage:P2: unlike Neon's, ours must).
    const text = await h.metrics.registry.metrics();
    expect(text).toContain('lockkeeper_shards_moved_total{kind="DRAIN"} 4');
    expect(text).toContain('lockkeeper_operations_finished_total{kind="DRAIN",outcome="SUCCEEDED"} 1');
    expect(text).toContain('lockkeeper_node_scheduling_policy{node="1",policy="PAUSE_FOR_RESTART"} 1');

    const [row] = await h.auditRows();
    expect(row).toMatchObject({ actor: 'rest', action: 'PUT /control/v1/node/:node_id/drain', reason: 'kernel upgrade', outcome: 'OK', nodeId: '1' });
    expect(JSON.parse(row!.arguments)).toEqual({ node_id: '1' });
  });

  it('neon:E3: refuses with 412 a second drain of a node (not 409) and a drain while another node drains', async () => {
    const h = await setup();
    h.cluster.simulation!.setLatencies({ cutOver: 10_000 });
    expect((await h.call('PUT', '/control/v1/node/1/drain')).status).toBe(202);

    const again = await h.call('PUT', '/control/v1/node/1/drain');
    expect(again).toMatchObject({ status: 412, json: { msg: 'Precondition failed: Background operation already ongoing for node: drain 1' } });
    expect((await h.call('PUT', '/control/v1/node/1/fill')).status).toBe(412);

    const limit = await h.call('PUT', '/control/v1/node/3/drain');
    expect(limit).toMatchObject({ status: 412, json: { msg: 'Precondition failed: Background operation already ongoing for node: drain 1' } });

    const outcomes = (await h.auditRows()).map((r) => r.outcome);
    expect(outcomes).toEqual(['OK', 'CONFLICT', 'CONFLICT', 'OPERATION_LIMIT_REACHED']);
  });

  it('refuses with 503 a drain of a node that is not available', async () => {
    const h = await setup();
    await h.cluster.simulation!.setNodeOnline('3', false);
    const res = await h.call('PUT', '/control/v1/node/3/drain');
    expect(res.status).toBe(503);
    // neon:E5: no prefix on a 503.
    expect(res.json).toEqual({ msg: 'Node 3 is currently unavailable' });
    expect((await h.auditRows()).find((r) => r.action.endsWith('/drain'))).toMatchObject({ outcome: 'UNAVAILABLE', nodeId: '3' });
  });

  it('refuses with 404 a drain of an unknown node and 400 a non-integer id (not audited)', async () => {
    const h = await setup();
    const res = await h.call('PUT', '/control/v1/node/42/drain');
    expect(res.status).toBe(404);
    expect(res.json).toEqual({ msg: 'NotFound: Node 42 not registered' });
    expect((await h.call('PUT', '/control/v1/node/node-1/drain')).status).toBe(400);
    expect((await h.auditRows()).map((r) => [r.action, r.outcome, r.nodeId])).toEqual([['PUT /control/v1/node/:node_id/drain', 'NOT_FOUND', '42']]);
  });

  it('cancels a drain with DELETE: 202, the policy returns to Active once the moves in flight finish', async () => {
    const h = await setup();
    h.cluster.simulation!.setLatencies({ cutOver: 10_000 });
    expect((await h.call('PUT', '/control/v1/node/1/drain')).status).toBe(202);
    await h.clock.advance(100);

    const cancel = await h.call('DELETE', '/control/v1/node/1/drain', { headers: { 'X-Lockkeeper-Reason': 'wrong node' } });
    expect(cancel.status).toBe(202);
    expect(cancel.text).toBe('null');
    // Accepted, not finished: the policy changes when the operation has stopped.
    expect(await h.scheduling('1')).toBe('Draining');

    await h.runOperation('1', 10_000);
    expect(await h.scheduling('1')).toBe('Active');
    // Moves in flight finished and stay where they went.
    expect(await h.attached('1')).toEqual([]);

    const rows = await h.auditRows();
    expect(rows.at(-1)).toMatchObject({ action: 'DELETE /control/v1/node/:node_id/drain', reason: 'wrong node', outcome: 'OK' });
  });

  it('refuses with 412 a cancel when nothing of that kind runs', async () => {
    const h = await setup();
    const none = await h.call('DELETE', '/control/v1/node/1/drain');
    expect(none.status).toBe(412);
    expect(none.json).toEqual({ msg: 'Precondition failed: Node 1 has no drain in progress' });
    expect((await h.call('DELETE', '/control/v1/node/1/fill')).json).toEqual({ msg: 'Precondition failed: Node 1 has no fill in progress' });
    expect((await h.call('DELETE', '/control/v1/node/99/fill')).status).toBe(404);
  });

  it('runs the restart cycle: drain, restart, fill (412 before the re-attach), Filling, Active', async () => {
    const h = await setup();
    await h.call('PUT', '/control/v1/node/1/drain');
    await h.runOperation('1', 1000);

    const early = await h.call('PUT', '/control/v1/node/1/fill');
    expect(early.status).toBe(412);
    expect(early.json.msg).toMatch(/PAUSE_FOR_RESTART|PauseForRestart/);

    await h.cluster.simulation!.restartNode('1');
    await h.clock.advance(1500);
    expect((await h.call('GET', '/control/v1/node/1')).json).toMatchObject({ availability: 'Active', scheduling: 'Active' });

    const fill = await h.call('PUT', '/control/v1/node/1/fill', { headers: { 'x-lockkeeper-reason': 'back from upgrade' } });
    expect(fill.status).toBe(202);
    expect(fill.text).toBe('null');
    expect(await h.scheduling('1')).toBe('Filling');
    await h.runOperation('1', 1000);
    expect(await h.scheduling('1')).toBe('Active');
    expect((await h.attached('1')).length).toBeGreaterThan(0);
    expect((await h.auditRows()).at(-1)).toMatchObject({ action: 'PUT /control/v1/node/:node_id/fill', reason: 'back from upgrade', outcome: 'OK' });
  });

  it('cancels a fill with DELETE', async () => {
    const h = await setup();
    expect((await h.call('PUT', '/control/v1/node/1/drain')).status).toBe(202);
    await h.runOperation('1', 1000);
    await h.cluster.simulation!.restartNode('1');
    await h.clock.advance(1500);
    expect(await h.attached('1')).toEqual([]);
    h.cluster.simulation!.setLatencies({ cutOver: 10_000 });
    expect((await h.call('PUT', '/control/v1/node/1/fill')).status).toBe(202);
    expect((await h.call('DELETE', '/control/v1/node/1/drain')).status).toBe(412);
    expect((await h.call('DELETE', '/control/v1/node/1/fill')).status).toBe(202);
    expect(await h.scheduling('1')).toBe('Filling');
    await h.runOperation('1', 10_000);
    expect(await h.scheduling('1')).toBe('Active');
    expect(await h.metrics.registry.metrics()).toContain('lockkeeper_operations_finished_total{kind="FILL",outcome="CANCELLED"} 1');
  });
});

describe("Neon REST facade: fill and cancel refusals in Neon's order (neon:E1, neon:E2, neon:E4)", () => {
  it('neon:E2: fill of an unknown node 404, of an offline node 503, while any operation runs 412, policy Filling 409, another policy 412; fewer than 2 nodes 412', async () => {
    const h = await setup();
    expect(await h.call('PUT', '/control/v1/node/99/fill')).toMatchObject({ status: 404, json: { msg: 'NotFound: Node 99 not registered' } });
    await h.cluster.simulation!.setNodeOnline('3', false);
    expect(await h.call('PUT', '/control/v1/node/3/fill')).toMatchObject({ status: 503, json: { msg: 'Node 3 is currently unavailable' } });
    await h.cluster.simulation!.setNodeOnline('3', true);
    await h.clock.advance(1500);
    expect((await h.call('PUT', '/control/v1/node/2/config', { body: { node_id: 2, scheduling: 'Filling' } })).status).toBe(200);
    expect(await h.call('PUT', '/control/v1/node/2/fill')).toMatchObject({ status: 409, json: { msg: 'Conflict: Node 2 has fill in progress' } });
    expect((await h.call('PUT', '/control/v1/node/2/config', { body: { node_id: 2, scheduling: 'Pause' } })).status).toBe(200);
    expect(await h.call('PUT', '/control/v1/node/2/fill')).toMatchObject({
      status: 412,
      json: { msg: 'Precondition failed: Node 2 cannot be filled due to Pause policy' },
    });
    expect((await h.call('PUT', '/control/v1/node/2/config', { body: { node_id: 2, scheduling: 'Active' } })).status).toBe(200);
    h.cluster.simulation!.setLatencies({ cutOver: 10_000 });
    expect((await h.call('PUT', '/control/v1/node/1/drain')).status).toBe(202);
    // The one slot is taken: 412 comes before the node's own policy is looked at.
    expect(await h.call('PUT', '/control/v1/node/2/fill')).toMatchObject({
      status: 412,
      json: { msg: 'Precondition failed: Background operation already ongoing for node: drain 1' },
    });
    await h.runOperation('1', 10_000);

    const single = await setup({ topology: { nodes: [{ id: '1', zone: 'az-a' }], shards: [{ tenantId: 't9', attachedNodeId: '1' }] } });
    expect(await single.call('PUT', '/control/v1/node/1/fill')).toMatchObject({
      status: 412,
      json: { msg: 'Precondition failed: No other nodes to fill from' },
    });
  });

  it('neon:E1: a drain when no node may schedule (the node itself counts) is 412; neon:E4: a cancel of an unknown node 404, of a running drain 202', async () => {
    const h = await setup();
    for (const id of ['2', '3', '10'])
      expect((await h.call('PUT', `/control/v1/node/${id}/config`, { body: { node_id: Number(id), scheduling: 'Pause' } })).status).toBe(200);
    expect(await h.call('PUT', '/control/v1/node/1/drain')).toMatchObject({
      status: 412,
      json: { msg: expect.stringMatching(/^Precondition failed: No other schedulable nodes/) },
    });
    expect(await h.attached('1')).toEqual(T1_SHARDS);
    expect(await h.call('DELETE', '/control/v1/node/99/drain')).toMatchObject({ status: 404, json: { msg: 'NotFound: Node 99 not registered' } });
    expect((await h.call('PUT', '/control/v1/node/2/config', { body: { node_id: 2, scheduling: 'Active' } })).status).toBe(200);
    h.cluster.simulation!.setLatencies({ cutOver: 10_000 });
    expect((await h.call('PUT', '/control/v1/node/1/drain')).status).toBe(202);
    const cancel = await h.call('DELETE', '/control/v1/node/1/drain');
    expect(cancel.status).toBe(202);
    expect(cancel.text).toBe('null');
    await h.runOperation('1', 10_000);
    expect(await h.scheduling('1')).toBe('Active');
  });
});

describe('Neon REST facade: configure', () => {
  it('sets every Neon scheduling spelling with 200 null, and reads it back the same', async () => {
    const h = await setup();
    for (const scheduling of ['Pause', 'PauseForRestart', 'Draining', 'Filling', 'Deleting', 'Active']) {
      const res = await h.call('PUT', '/control/v1/node/2/config', { body: { node_id: 2, scheduling } });
      expect(res.status, scheduling).toBe(200);
      expect(res.text).toBe('null');
      expect(await h.scheduling('2')).toBe(scheduling);
      expect((await h.call('GET', '/control/v1/node')).json[1].scheduling).toBe(scheduling);
    }
    const rows = await h.auditRows();
    expect(rows).toHaveLength(6);
    expect(rows[0]).toMatchObject({ actor: 'rest', action: 'PUT /control/v1/node/:node_id/config', outcome: 'OK', nodeId: '2' });
    expect(JSON.parse(rows[0]!.arguments)).toEqual({ node_id: '2', body: { node_id: 2, scheduling: 'Pause' } });
  });

  it('a paused node refuses a drain (412)', async () => {
    const h = await setup();
    await h.call('PUT', '/control/v1/node/1/config', { body: { node_id: 1, scheduling: 'Pause' } });
    const res = await h.call('PUT', '/control/v1/node/1/drain');
    expect(res.status).toBe(412);
    expect(res.json.msg).toEqual(expect.any(String));
  });

  it('refuses with 412 while an operation runs on the node, with or without a policy', async () => {
    const h = await setup();
    h.cluster.simulation!.setLatencies({ cutOver: 10_000 });
    await h.call('PUT', '/control/v1/node/1/drain');
    const res = await h.call('PUT', '/control/v1/node/1/config', { body: { node_id: 1, scheduling: 'Pause' } });
    expect(res.status).toBe(412);
    expect(res.json.msg).toBe('Precondition failed: Ongoing background operation forbids configuring: drain 1');
    expect((await h.call('PUT', '/control/v1/node/1/config', { body: { node_id: 1 } })).status).toBe(412);
    expect(await h.scheduling('1')).toBe('Draining');
    expect((await h.auditRows()).map((r) => r.outcome)).toEqual(['OK', 'PRECONDITION_FAILED', 'PRECONDITION_FAILED']);
  });

  it('refuses with 400 a body whose node_id differs from the path', async () => {
    const h = await setup();
    const res = await h.call('PUT', '/control/v1/node/1/config', { body: { node_id: 2, scheduling: 'Pause' } });
    expect(res.status).toBe(400);
    expect(res.json).toEqual({ msg: 'node_id 2 in the body differs from node 1 in the path' });
    expect(await h.scheduling('2')).toBe('Active');
    expect((await h.auditRows())[0]).toMatchObject({ outcome: 'INVALID_INPUT', nodeId: '1' });
  });

  it("refuses with 400 malformed bodies and spellings that are not Neon's", async () => {
    const h = await setup();
    const cases: [unknown, RegExp][] = [
      ['{not json', /not valid JSON/],
      ['', /not valid JSON/],
      [{ node_id: 1, scheduling: 'pause' }, /unknown scheduling policy "pause"/],
      [{ node_id: 1, scheduling: 'PAUSE' }, /unknown scheduling policy/],
      [{ node_id: 1, scheduling: 3 }, /scheduling/],
      [{ node_id: '1', scheduling: 'Pause' }, /node_id/],
      [{ scheduling: 'Pause' }, /node_id/],
      [{ node_id: -1 }, /node_id/],
      [{ node_id: 1, schedulling: 'Pause' }, /schedulling/],
      [{ node_id: 1, availability: 'Up' }, /unknown availability "Up"/],
      [[1], /body/],
    ];
    for (const [body, msg] of cases) {
      const res = await h.call('PUT', '/control/v1/node/1/config', { body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(Object.keys(res.json)).toEqual(['msg']);
      expect(res.json.msg, JSON.stringify(body)).toMatch(msg);
    }
    expect(await h.scheduling('1')).toBe('Active');
    const rows = await h.auditRows();
    expect(rows).toHaveLength(cases.length);
    expect(new Set(rows.map((r) => r.outcome))).toEqual(new Set(['INVALID_INPUT']));
    // An unparsable body is not echoed into the audit log.
    expect(JSON.parse(rows[0]!.arguments)).toEqual({ node_id: '1', body: { unparsableBytes: 9 } });
  });

  it('neon:E6: availability is accepted: the same one changes nothing; Offline fails the node over at once and the next heartbeat brings it back (neon:H8)', async () => {
    const h = await setup();
    const same = await h.call('PUT', '/control/v1/node/3/config', { body: { node_id: 3, availability: 'Active', scheduling: 'Pause' } });
    expect(same.status).toBe(200);
    expect(await h.scheduling('3')).toBe('Pause');
    // Neon's Option: null is absent.
    expect((await h.call('PUT', '/control/v1/node/3/config', { body: { node_id: 3, availability: null, scheduling: 'Active' } })).status).toBe(200);

    const offline = await h.call('PUT', '/control/v1/node/3/config', { body: { node_id: 3, availability: 'Offline' } });
    expect(offline).toMatchObject({ status: 200, text: 'null' });
    expect((await h.call('GET', '/control/v1/node/3')).json).toMatchObject({ availability: 'Offline', scheduling: 'Active' });
    // neon:H5: t3 was attached to node 3; the failover attaches it to its secondary on node 10.
    await h.clock.advance(100);
    await h.storage.settled('3');
    expect((await h.cluster.getShard('t3'))?.attachedNodeId).toBe('10');
    // The node still answers: the next heartbeat (500 ms here) makes it Active again; nothing moves back.
    await h.clock.advance(500);
    expect((await h.call('GET', '/control/v1/node/3')).json.availability).toBe('Active');
    expect((await h.cluster.getShard('t3'))?.attachedNodeId).toBe('10');
  });

  it('refuses with 404 an unknown node', async () => {
    const h = await setup();
    const res = await h.call('PUT', '/control/v1/node/99/config', { body: { node_id: 99, scheduling: 'Pause' } });
    expect(res.status).toBe(404);
    expect(res.json).toEqual({ msg: 'NotFound: Node 99 not registered' });
  });
});

describe('Neon REST facade: HTTP edges', () => {
  it('answers only under /control/v1/: other paths are left to the server', async () => {
    const h = await setup();
    for (const path of ['/graphql', '/control/v10/node', '/control', '/metrics']) {
      const res = await h.call('GET', path);
      expect(res.status, path).toBe(418);
    }
  });

  it('404 for unknown routes under /control/v1', async () => {
    const h = await setup();
    for (const path of ['/control/v1', '/control/v1/', '/control/v1/tenant', '/control/v1/node/1/restart', '/control/v1/node/1/drain/x', '/control/v1/node/']) {
      const res = await h.call('GET', path);
      expect(res.status, path).toBe(404);
      expect(res.json.msg, path).toEqual(expect.any(String));
    }
  });

  it('405 with Allow for a method a route does not take', async () => {
    const h = await setup();
    const cases: [string, string, string][] = [
      ['POST', '/control/v1/node/1/drain', 'PUT, DELETE'],
      ['GET', '/control/v1/node/1/fill', 'PUT, DELETE'],
      ['GET', '/control/v1/node/1/config', 'PUT'],
      ['DELETE', '/control/v1/node/1/config', 'PUT'],
      ['PUT', '/control/v1/node/1/shards', 'GET'],
      ['DELETE', '/control/v1/node', 'GET, POST'],
      ['PATCH', '/control/v1/node/1', 'GET, DELETE'],
    ];
    for (const [method, path, allow] of cases) {
      const res = await h.call(method, path);
      expect(res.status, `${method} ${path}`).toBe(405);
      expect(res.headers.get('allow')).toBe(allow);
      expect(res.json.msg).toMatch(/not allowed/);
    }
    expect(await h.auditRows()).toEqual([]);
  });

  it('413 for a body over 1 MiB, declared or streamed, and audited', async () => {
    const h = await setup();
    const big = JSON.stringify({ node_id: 1, scheduling: 'Pause', pad: 'x'.repeat(1024 * 1024) });
    const declared = await h.call('PUT', '/control/v1/node/1/config', { body: big });
    expect(declared.status).toBe(413);
    expect(declared.json.msg).toMatch(/larger than 1048576 bytes/);

    // Chunked, without a Content-Length: read to the end, then refused.
    const chunk = new Uint8Array(256 * 1024).fill(120);
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent++ < 6) controller.enqueue(chunk);
        else controller.close();
      },
    });
    const res = await fetch(`${h.url}/control/v1/node/1/config`, { method: 'PUT', body: stream, duplex: 'half' } as RequestInit);
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({ msg: 'request body larger than 1048576 bytes' });

    // Exactly 1 MiB is fine (then refused for what it says).
    const head = '{"node_id":1,"pad":"';
    const exact = `${head}${'y'.repeat(1024 * 1024 - head.length - 2)}"}`;
    expect(Buffer.byteLength(exact)).toBe(1024 * 1024);
    const atLimit = await h.call('PUT', '/control/v1/node/1/config', { body: exact });
    expect(atLimit.status).toBe(400);
    expect(atLimit.json.msg).toMatch(/pad/);

    expect((await h.auditRows()).map((r) => r.outcome)).toEqual(['PAYLOAD_TOO_LARGE', 'PAYLOAD_TOO_LARGE', 'INVALID_INPUT']);
    expect(await h.scheduling('1')).toBe('Active');
  });

  it('masks unexpected faults as 500 {"msg":"internal error"} and logs them', async () => {
    const error = vi.fn();
    const log = { error } as unknown as Logger;
    const h = await setup({
      facade: { log },
      wrapBackend: (b) =>
        new Proxy(b, {
          get(target, prop, receiver) {
            if (prop === 'getNode') return () => Promise.reject(new Error('db password=hunter2 leaked'));
            const value = Reflect.get(target, prop, receiver);
            return typeof value === 'function' ? value.bind(target) : value;
          },
        }),
    });
    const res = await h.call('GET', '/control/v1/node/1');
    expect(res.status).toBe(500);
    expect(res.text).toBe('{"msg":"internal error"}');
    expect(error).toHaveBeenCalledOnce();

    const put = await h.call('PUT', '/control/v1/node/1/config', { body: { node_id: 1, scheduling: 'Pause' } });
    expect(put.status).toBe(500);
    expect(put.text).not.toContain('hunter2');
    expect((await h.auditRows())[0]).toMatchObject({ outcome: 'ERROR' });
  });

  it('records the configured actor, and the query reason over the header', async () => {
    const h = await setup({ facade: { actor: 'storcon-cli' } });
    await h.call('PUT', '/control/v1/node/2/config?reason=from%20query', {
      body: { node_id: 2, scheduling: 'Pause' },
      headers: { 'x-lockkeeper-reason': 'from header' },
    });
    await h.call('PUT', '/control/v1/node/2/config?reason=', { body: { node_id: 2, scheduling: 'Active' } });
    const rows = await h.auditRows();
    expect(rows.map((r) => [r.actor, r.reason])).toEqual([
      ['storcon-cli', 'from query'],
      ['storcon-cli', null],
    ]);
  });
});
