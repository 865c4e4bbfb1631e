import { afterEach, describe, expect, it } from 'vitest';
import type { ClusterEvent } from '../../../src/cluster/types.ts';
import { pageserverOptionsSchema } from '../../../plugins/pageserver/index.ts';
import { SafetyChecker, shardIdOf, type SimShardSpec } from '../../../simulators/pageserver/index.ts';
import { closeAfterEach, startSimCluster, type SimCluster } from '../../support/pageserver-cluster.ts';

let c: SimCluster | undefined;
const clusters = closeAfterEach(afterEach);

const A: SimShardSpec = { tenant: 1, attached: 1, secondaries: [2], generation: 3 };
const B: SimShardSpec = { tenant: 2, attached: 2, secondaries: [1] };

async function setUp(shards: SimShardSpec[] = [A, B]) {
  c = clusters.use(await startSimCluster({ nodes: [{ id: 1 }, { id: 2 }, { id: 3 }], shards }));
  return c.startController();
}

/** Waits (in turns of the event loop, never on a clock) until `cond` holds. */
async function until(cond: () => boolean) {
  while (!cond()) await new Promise((r) => setImmediate(r));
}

const post = async (url: string, body: unknown) => {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, json: (await res.json()) as any };
};

describe('options', () => {
  it('rejects unknown keys and fills defaults', () => {
    expect(pageserverOptionsSchema.safeParse({ pageservers: [{ id: 1, url: 'http://a:9898', availabilityZone: 'z' }], bogus: 1 }).success).toBe(false);
    const o = pageserverOptionsSchema.parse({ pageservers: [{ id: 1, url: 'http://a:9898', availabilityZone: 'z' }] });
    expect(o).toMatchObject({
      heartbeatIntervalMs: 5000,
      maxOfflineIntervalMs: 30_000,
      maxWarmingUpIntervalMs: 300_000,
      upcall: { host: '127.0.0.1', port: 0 },
    });
    expect(o.stateFile).toBeUndefined();
    expect(o.controlPlane).toBeUndefined();
    // A malformed hook URL fails start-up naming the key.
    const bad = pageserverOptionsSchema.safeParse({ pageservers: [], controlPlane: { url: 'ftp://cplane' } });
    expect(bad.success).toBe(false);
    expect(bad.error!.issues[0]).toMatchObject({ path: ['controlPlane', 'url'] });
    expect(
      pageserverOptionsSchema.safeParse({
        pageservers: [
          { id: 1, url: 'http://a', availabilityZone: 'z' },
          { id: 1, url: 'http://b', availabilityZone: 'z' },
        ],
      }).success,
    ).toBe(false);
  });
});

describe('upcalls', () => {
  it('re-attach of an unknown node is a 404 with a message; bad bodies are 400', async () => {
    const backend = await setUp();
    const res = await post(`${backend.upcallUrl}/upcall/v1/re-attach`, { node_id: 42 });
    expect(res).toEqual({ status: 404, json: { msg: "re-attach: node 42 is not one of this controller's pageservers" } });
    expect((await post(`${backend.upcallUrl}/upcall/v1/re-attach`, { node: 'x' })).status).toBe(400);
    expect((await post(`${backend.upcallUrl}/upcall/v1/validate`, { tenants: 'x' })).status).toBe(400);
  });

  it('a restart re-attaches: new generations for attached shards (persisted), WARMING_UP then ACTIVE, nodeReattached', async () => {
    const backend = await setUp();
    const events: ClusterEvent[] = [];
    backend.watch((e) => events.push(e));
    await c!.drive(c!.sim(1).restart());
    expect(c!.view()[shardIdOf(A)]).toEqual({ '1': 'AttachedSingle@4', '2': 'Secondary@-' });
    expect(c!.view()[shardIdOf(B)]).toEqual({ '1': 'Secondary@-', '2': 'AttachedSingle@1' });
    expect(backend.generationOf(shardIdOf(A))).toBe(4);
    // neon:L3: the new generation is in the gateway database, issued to node 1.
    expect(await c!.db.prisma.pluginShard.findUnique({ where: { plugin_id: { plugin: 'pageserver', id: shardIdOf(A) } } })).toMatchObject({
      generation: 4,
      generationNodeId: '1',
    });
    expect(events.some((e) => e.type === 'nodeReattached' && e.nodeId === '1')).toBe(true);
    expect(events.find((e) => e.type === 'nodeChanged')).toMatchObject({ node: { id: '1', availability: 'WARMING_UP' } });
    await c!.until(async () => (await backend.getNode('1'))?.availability === 'ACTIVE', { what: 'ACTIVE after a heartbeat' });
    const valid = await post(`${backend.upcallUrl}/upcall/v1/validate`, {
      tenants: [
        { id: shardIdOf(A), gen: 3 },
        { id: shardIdOf(A), gen: 4 },
        { id: 'ffffffffffffffffffffffffffffffff', gen: 1 },
      ],
    });
    expect(valid.json.tenants.map((t: { valid: boolean }) => t.valid)).toEqual([false, true, false]);
  });

  it('neon:L3 across a gateway restart: a re-attach answered before anyone watched is told to the next listener; the answer waits until a listener has acted on it', async () => {
    const backend = await setUp();
    // A gateway still starting (its engines not yet following the backend) when the pageserver re-attaches.
    await c!.drive(c!.sim(1).restart());
    const heard: string[] = [];
    const acts: (() => void)[] = [];
    backend.watch((e) => {
      if (e.type !== 'nodeReattached') return undefined;
      heard.push(e.nodeId);
      return new Promise<void>((resolve) => acts.push(resolve));
    });
    await c!.idle();
    expect(heard).toEqual(['1']);
    acts.shift()!();
    // A re-attach while a listener watches is answered only once it has acted (the handler called
    // directly: once the listener heard it, nothing but the listener's promise is left to wait for).
    let answered = false;
    const answer = backend.upcalls.reAttach({ node_id: 2 }, '127.0.0.1:1').then((a) => {
      answered = true;
      return a;
    });
    await until(() => heard.length === 2);
    for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
    expect(answered).toBe(false);
    acts.shift()!();
    expect((await answer).status).toBe(200);
    // Both were acted on: a listener that comes later is told neither.
    const later: ClusterEvent[] = [];
    backend.watch((e) => later.push(e));
    await c!.idle();
    expect(later.filter((e) => e.type === 'nodeReattached')).toEqual([]);
  });
});

describe("upcall auth (upcall.token, Neon's control_plane_api_token)", () => {
  const TOKEN = 'upcall-s3cret';
  const withAuth = async (url: string, body: unknown, authorization?: string) => {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (authorization !== undefined) headers.authorization = authorization;
    const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });
    return { status: res.status, json: (await res.json()) as any };
  };

  it('with a token: upcalls without it, or with another, get 401 with a message and change nothing; the simulators send it', async () => {
    c = clusters.use(await startSimCluster({ nodes: [{ id: 1 }, { id: 2 }, { id: 3 }], shards: [A, B] }));
    const backend = await c.startController({ upcall: { host: '127.0.0.1', port: 0, token: TOKEN } });
    const reAttach = `${backend.upcallUrl}/upcall/v1/re-attach`;
    expect(await withAuth(reAttach, { node_id: 1 })).toEqual({
      status: 401,
      json: { msg: 'Unauthorized: missing Authorization header: upcalls need "Authorization: Bearer <control_plane_api_token>"' },
    });
    expect(await withAuth(reAttach, { node_id: 1 }, 'Bearer wrong')).toEqual({
      status: 401,
      json: { msg: 'Unauthorized: invalid token in the Authorization header' },
    });
    expect(await withAuth(reAttach, { node_id: 1 }, TOKEN)).toEqual({
      status: 401,
      json: { msg: 'Unauthorized: malformed Authorization header: expected "Bearer <token>"' },
    });
    expect((await withAuth(`${backend.upcallUrl}/upcall/v1/validate`, { tenants: [] })).status).toBe(401);
    expect(backend.generationOf(shardIdOf(A))).toBe(3);
    // A pageserver configured with the token (the simulators send controllerToken).
    expect(c.sim(1).controllerToken).toBe(TOKEN);
    await c.drive(c.sim(1).restart());
    expect(c.view()[shardIdOf(A)]).toEqual({ '1': 'AttachedSingle@4', '2': 'Secondary@-' });
    const valid = await withAuth(`${backend.upcallUrl}/upcall/v1/validate`, { tenants: [{ id: shardIdOf(A), gen: 4 }] }, `Bearer ${TOKEN}`);
    expect(valid).toEqual({ status: 200, json: { tenants: [{ id: shardIdOf(A), valid: true }] } });
    // A pageserver without it is refused.
    c.sim(2).controllerToken = undefined;
    await expect(c.drive(c.sim(2).restart())).rejects.toThrow(/re-attach of node 2 answered 401: .*missing Authorization header/);
  });

  it('without a token: upcalls need no Authorization header', async () => {
    const backend = await setUp();
    expect(c!.sim(1).controllerToken).toBeUndefined();
    expect((await withAuth(`${backend.upcallUrl}/upcall/v1/validate`, { tenants: [] })).status).toBe(200);
    expect((await withAuth(`${backend.upcallUrl}/upcall/v1/validate`, { tenants: [] }, 'Bearer anything')).status).toBe(200);
  });

  it('the option is validated', () => {
    const base = { pageservers: [{ id: 1, url: 'http://a:9898', availabilityZone: 'z' }] };
    expect(pageserverOptionsSchema.parse({ ...base, upcall: { token: 't' } }).upcall).toEqual({ host: '127.0.0.1', port: 0, token: 't' });
    expect(pageserverOptionsSchema.safeParse({ ...base, upcall: { token: '' } }).success).toBe(false);
  });
});

describe('discovery', () => {
  it('adopts what the pageservers hold on a first start; on a restart the persisted placement wins and differences are reported', async () => {
    const backend = await setUp();
    expect(backend.discoveryReport.adopted).toEqual([shardIdOf(A), shardIdOf(B)].sort());
    expect(await backend.getShard(shardIdOf(A))).toMatchObject({ attachedNodeId: '1', secondaryNodeIds: ['2'], preferredZone: 'az-a' });
    await c!.drive(backend.cutOverShard(shardIdOf(A), { fromNodeId: '1', toNodeId: '2' }));
    await backend.close();
    // Behind the controller's back: node 3 gets a stale attachment of A, node 1 loses its secondary of A.
    c!.sim(3).seed(shardIdOf(A), { mode: 'AttachedStale', generation: 2 });
    await fetch(`${c!.sim(1).url}/v1/tenant/${shardIdOf(A)}/location_config`, {
      method: 'PUT',
      body: JSON.stringify({
        mode: 'Detached',
        generation: null,
        secondary_conf: null,
        shard_number: 0,
        shard_count: 0,
        shard_stripe_size: 0,
        tenant_conf: {},
      }),
    });
    const again = await c!.startController();
    expect(await again.getShard(shardIdOf(A))).toMatchObject({ attachedNodeId: '2', secondaryNodeIds: ['1'] });
    expect(again.generationOf(shardIdOf(A))).toBe(4);
    expect(again.discoveryReport).toMatchObject({
      adopted: [],
      extraAttachments: [{ shardId: shardIdOf(A), nodeId: '3', mode: 'AttachedStale', generation: 2 }],
      missing: [{ shardId: shardIdOf(A), nodeId: '1', role: 'secondary' }],
      unreachable: [],
    });
    // The reconcile repairs both: node 3's stray location is detached, node 1 gets its secondary back.
    await c!.until(() => JSON.stringify(c!.view()[shardIdOf(A)]) === JSON.stringify({ '1': 'Secondary@-', '2': 'AttachedSingle@4' }), {
      what: 'shard A repaired',
    });
  });

  it('a pageserver that does not answer at start is OFFLINE and reported', async () => {
    c = clusters.use(await startSimCluster({ nodes: [{ id: 1 }, { id: 2 }, { id: 3 }], shards: [A] }));
    c.sim(3).stopAnswering();
    const backend = await c.startController();
    expect(backend.discoveryReport.unreachable).toEqual(['3']);
    expect((await backend.getNode('3'))?.availability).toBe('OFFLINE');
    c.sim(3).resume();
  });
});

describe("the simulators' safety checker", () => {
  it('flags two AttachedSingle, an attached location below an issued generation, and a shard left with no attached location', () => {
    const safety = new SafetyChecker();
    safety.issue('s', 1);
    safety.record('1', 's', { mode: 'AttachedSingle', generation: 1 });
    safety.record('2', 's', { mode: 'Secondary', generation: null });
    expect(safety.violations).toEqual([]);
    safety.record('1', 's', { mode: 'AttachedStale', generation: 1 });
    safety.issue('s', 2);
    safety.record('2', 's', { mode: 'AttachedMulti', generation: 2 });
    safety.record('1', 's', { mode: 'Secondary', generation: null });
    expect(safety.violations).toEqual([]);
    safety.record('2', 's', { mode: 'Secondary', generation: null });
    safety.record('1', 's', { mode: 'AttachedSingle', generation: 1 });
    safety.record('2', 's', { mode: 'AttachedSingle', generation: 2 });
    expect(safety.violations).toEqual([
      'shard s: no attached location left ({"1":{"mode":"Secondary","generation":null},"2":{"mode":"Secondary","generation":null}})',
      'shard s: node 1 is AttachedSingle with generation 1 but 2 was issued',
      'shard s: AttachedSingle on nodes 1 and 2 at once',
    ]);
  });

  it('neon:H5: a stale AttachedSingle on a node that cannot be reached does not count against its failed-over successor', () => {
    const safety = new SafetyChecker();
    safety.issue('s', 1);
    safety.record('1', 's', { mode: 'AttachedSingle', generation: 1 });
    safety.setReachable('1', false);
    safety.issue('s', 2);
    safety.record('2', 's', { mode: 'AttachedSingle', generation: 2 });
    expect(safety.violations).toEqual([]);
    // Reachable, the same would be two attachments at once.
    safety.setReachable('1', true);
    safety.record('2', 's', { mode: 'AttachedSingle', generation: 2 });
    expect(safety.violations).toEqual(['shard s: AttachedSingle on nodes 1 and 2 at once']);
  });
});
