import { afterEach, describe, expect, it } from 'vitest';
import { PageserverSim, shardIdOf, type SimShardSpec } from '../../simulators/pageserver/index.ts';
import { pageserverWorlds, settled, start, THREE_NODES, type World, restClient, callsTo } from '../support/pageserver-e2e.ts';

/**
 * neon:scenario-6–12 through GraphQL and the Neon-compatible REST facade, with the
 * pageserver plugin driving three simulated pageservers and the simulated compute hook
 * over loopback HTTP, all on one virtual clock. (Scenarios 1–5 are in
 * test/plugins/pageserver/live-migration.test.ts.)
 */

const { setUp } = pageserverWorlds(afterEach);

/** Shards attached to node 1, each with a secondary on 2 or 3 (`Attached(1)`). */
const ON_ONE: SimShardSpec[] = [
  { tenant: 1, attached: 1, secondaries: [2] },
  { tenant: 2, attached: 1, secondaries: [3] },
  { tenant: 3, attached: 2, secondaries: [3] },
];

const availability = async (w: World, id: string) => (await w.gql(`{ node(id: "${id}") { ... on ClusterNode { availability } } }`)).node.availability;
const failovers = async (w: World, nodeId: string) =>
  (
    await w.gql(`{ operations(first: 10, nodeId: "${nodeId}", kind: FAILOVER) { edges { node { id state counts { moved skipped failed } startedBy } } } }`)
  ).operations.edges.map((e: { node: unknown }) => e.node);

describe('neon:scenario-6 — node loss with three nodes', { timeout: 240_000 }, () => {
  it('ACTIVE until 30 s, OFFLINE by 37 s; its shards attached to their secondaries with generation + 1 and one notification each; it stays their secondary; after its re-attach they are Secondary without generation and nothing moves back', async () => {
    const w = await setUp({ nodes: THREE_NODES(['az-a']), shards: ON_ONE });
    const ids = ON_ONE.map(shardIdOf);
    await w.cluster.until(() => w.cluster.log.find({ source: 'node 1', path: /^\/v1\/utilization$/ }).length > 0);
    const lastGood = w.cluster.log.find({ source: 'node 1', path: /^\/v1\/utilization$/ }).at(-1)!.at;
    const notified = w.cluster.hook.notifications.length;
    w.cluster.sim(1).stopAnswering();
    await w.cluster.until(() => w.cluster.clock.now() - lastGood >= 29_900);
    expect(await availability(w, '1')).toBe('ACTIVE');
    await w.cluster.until(async () => (await availability(w, '1')) === 'OFFLINE', { what: 'OFFLINE', maxMs: 10_000 });
    expect(w.cluster.clock.now() - lastGood).toBeLessThanOrEqual(37_000);
    await w.cluster.until(async () => (await failovers(w, '1'))[0]?.state === 'SUCCEEDED', { what: 'failover done' });
    expect(await failovers(w, '1')).toEqual([{ id: expect.any(String), state: 'SUCCEEDED', counts: { moved: 2, skipped: 0, failed: 0 }, startedBy: 'system' }]);
    expect(w.cluster.view()[ids[0]!]!['2']).toBe('AttachedSingle@2');
    expect(w.cluster.view()[ids[1]!]!['3']).toBe('AttachedSingle@2');
    expect(await w.backend.getShard(ids[0]!)).toMatchObject({ attachedNodeId: '2', secondaryNodeIds: ['1'] });
    expect(await w.backend.getShard(ids[1]!)).toMatchObject({ attachedNodeId: '3', secondaryNodeIds: ['1'] });
    // One notification each; no new secondary anywhere.
    expect(
      w.cluster.hook.notifications
        .slice(notified)
        .map((n) => (n.body as { tenant_id: string }).tenant_id)
        .sort(),
    ).toEqual([ids[0], ids[1]]);
    expect(w.cluster.sim(3).location(ids[0]!)).toBeNull();
    // Node 1 comes back from a restart: it re-attaches, gets them as Secondary, and is ACTIVE after a heartbeat.
    await w.cluster.drive(w.cluster.sim(1).restart());
    expect(w.cluster.sim(1).location(ids[0]!)).toEqual({ mode: 'Secondary', generation: null, warm: true });
    expect(w.cluster.sim(1).location(ids[1]!)).toEqual({ mode: 'Secondary', generation: null, warm: true });
    await w.cluster.until(async () => (await availability(w, '1')) === 'ACTIVE', { what: 'ACTIVE again' });
    await w.cluster.advance(30_000, 500);
    expect(await w.backend.getShard(ids[0]!)).toMatchObject({ attachedNodeId: '2' });
    expect(await w.backend.getShard(ids[1]!)).toMatchObject({ attachedNodeId: '3' });
  });
});

describe('neon:H10 — a cold failover attach ranked as Neon’s scheduler ranks it', { timeout: 240_000 }, () => {
  it('an az-a shard with no secondary goes to an az-a node, not the emptier az-b one; within az-a, away from the node holding its tenant; the plan and the event say why', async () => {
    // Tenant 5 has two shards: 5/0 on node 1 (lost, no secondary) and 5/1 on node 4 (az-a).
    // Node 2 (az-a) holds two other attached shards, node 3 (az-b) none, node 4 one (tenant 5's).
    const cold: SimShardSpec = { tenant: 5, shardNumber: 0, shardCount: 2, attached: 1, secondaries: [] };
    const shards: SimShardSpec[] = [
      cold,
      { tenant: 5, shardNumber: 1, shardCount: 2, attached: 4, secondaries: [] },
      { tenant: 6, attached: 2, secondaries: [3] },
      { tenant: 7, attached: 2, secondaries: [3] },
    ];
    const nodes = [
      { id: 1, zone: 'az-a' },
      { id: 2, zone: 'az-a' },
      { id: 3, zone: 'az-b' },
      { id: 4, zone: 'az-a' },
    ];
    const w = await setUp({ nodes, shards });
    const id = shardIdOf(cold);
    const call = await restClient(w);
    w.cluster.sim(1).stopAnswering();
    expect(await call('PUT', '/control/v1/node/1/config', { node_id: 1, availability: 'Offline' })).toEqual({ status: 200, json: null });
    await w.cluster.until(async () => (await failovers(w, '1'))[0]?.state === 'SUCCEEDED', { what: 'failover' });
    expect(await w.backend.getShard(id)).toMatchObject({ attachedNodeId: '2', preferredZone: 'az-a' });
    expect(w.cluster.view()[id]!['2']).toMatch(/^AttachedSingle@/);
    const [op] = await failovers(w, '1');
    const steps = await w.app.operations.getSteps(op.id);
    expect(steps.map((s) => [s.workloadId, s.reason, s.toNodeId, s.detail])).toEqual([[id, 'COLD_ATTACH', '2', '{"placement":"tenant affinity"}']]);
    const log = await w.gql(`{ eventLog(operationId: "${op.id}", types: ["SHARD_MOVED"]) { events { payload } } }`);
    expect(log.eventLog.events.map((e: { payload: unknown }) => e.payload)).toEqual([
      { shard: id, from: '1', to: '2', reason: null, error: null, failover: true, placement: 'tenant affinity' },
    ]);
  });
});

describe('neon:scenario-7 and scenario-8', { timeout: 240_000 }, () => {
  it('7. every node fails: OFFLINE, nothing rescheduled, detached or notified; a re-attach gives generation + 1 and AttachedSingle', async () => {
    const shards: SimShardSpec[] = [
      { tenant: 1, attached: 1, secondaries: [2] },
      { tenant: 2, attached: 2, secondaries: [1] },
    ];
    const w = await setUp({ nodes: [{ id: 1 }, { id: 2 }], shards });
    const notified = w.cluster.hook.notifications.length;
    w.cluster.sim(1).stopAnswering();
    w.cluster.sim(2).stopAnswering();
    await w.cluster.until(async () => (await availability(w, '1')) === 'OFFLINE' && (await availability(w, '2')) === 'OFFLINE', { what: 'both OFFLINE' });
    await w.cluster.advance(30_000, 500);
    expect(await failovers(w, '1')).toEqual([]);
    expect(await failovers(w, '2')).toEqual([]);
    expect(w.cluster.hook.notifications.length).toBe(notified);
    expect(w.cluster.view()[shardIdOf(shards[0]!)]).toEqual({ '1': 'AttachedSingle@1', '2': 'Secondary@-' });
    await w.cluster.drive(w.cluster.sim(1).restart());
    expect(w.cluster.view()[shardIdOf(shards[0]!)]!['1']).toBe('AttachedSingle@2');
    w.cluster.sim(2).resume();
  });

  it('8. a restart within 30 s: WARMING_UP, no failover, ACTIVE on its first heartbeat; a WARMING_UP node that never answers fails over after 300 s', async () => {
    const w = await setUp({ nodes: THREE_NODES(['az-a']), shards: ON_ONE });
    await w.cluster.drive(w.cluster.sim(1).restart({ downMs: 20_000 }));
    await w.cluster.until(async () => (await availability(w, '1')) === 'ACTIVE', { what: 'ACTIVE' });
    expect(await failovers(w, '1')).toEqual([]);
    await w.cluster.drive(w.cluster.sim(1).restart());
    w.cluster.sim(1).stopAnswering();
    await w.cluster.advance(280_000, 2000);
    expect(await availability(w, '1')).toBe('WARMING_UP');
    expect(await failovers(w, '1')).toEqual([]);
    await w.cluster.until(async () => (await failovers(w, '1'))[0]?.state === 'SUCCEEDED', { what: 'failover', maxMs: 40_000, stepMs: 500 });
    expect(await w.backend.getShard(shardIdOf(ON_ONE[0]!))).toMatchObject({ attachedNodeId: '2' });
  });
});

describe('neon:scenario-9 — a commanded Offline', { timeout: 240_000 }, () => {
  it('PUT config Offline on a healthy node fails it over at once and it is Active after the next round; during a drain config is 412', async () => {
    const w = await setUp({ nodes: THREE_NODES(['az-a']), shards: ON_ONE });
    const call = await restClient(w);
    // Node 1 still answers and keeps its (now stale) attachments until it is Active again (neon:H8):
    // the safety checker is told it was declared lost, as for a partition.
    w.cluster.safety.setReachable('1', false);
    expect(await call('PUT', '/control/v1/node/1/config', { node_id: 1, availability: 'Offline' })).toEqual({ status: 200, json: null });
    await w.cluster.until(async () => (await failovers(w, '1'))[0]?.state === 'SUCCEEDED', { what: 'failover' });
    await w.cluster.until(async () => (await call('GET', '/control/v1/node/1')).json.availability === 'Active', { what: 'Active', maxMs: 6000 });
    expect(await w.backend.getShard(shardIdOf(ON_ONE[0]!))).toMatchObject({ attachedNodeId: '2', secondaryNodeIds: ['1'] });
    // During any drain: 412, availability included.
    for (const sim of w.cluster.sims.values()) sim.setLatency(5000);
    expect((await call('PUT', '/control/v1/node/2/drain')).status).toBe(202);
    expect(await call('PUT', '/control/v1/node/3/config', { node_id: 3, availability: 'Offline' })).toEqual({
      status: 412,
      json: { msg: 'Precondition failed: Ongoing background operation forbids configuring: drain 2' },
    });
    await settled(w, '2');
  });
});

describe('neon:scenario-10 — registration (neon:L1, neon:L2)', { timeout: 240_000 }, () => {
  it('a new node 200, Offline then Active; the same body 200 and no change; another port 409; an unresolvable host 503; a tombstoned id 409', async () => {
    const w = await setUp({ nodes: THREE_NODES(['az-a']), shards: ON_ONE });
    const call = await restClient(w);
    const extra = await new PageserverSim({ nodeId: 4, safety: w.cluster.safety, clock: w.cluster.clock, log: w.cluster.log, wal: w.cluster.wal }).start();
    try {
      const port = Number(new URL(extra.url).port);
      const body = {
        node_id: 4,
        listen_pg_addr: '127.0.0.1',
        listen_pg_port: 6400,
        listen_http_addr: '127.0.0.1',
        listen_http_port: port,
        listen_grpc_addr: '127.0.0.1',
        listen_grpc_port: 51051,
        availability_zone_id: 'az-b',
      };
      expect(await call('POST', '/control/v1/node', body)).toEqual({ status: 200, json: null });
      expect((await call('GET', '/control/v1/node/4')).json).toMatchObject({
        id: 4,
        availability: 'Offline',
        scheduling: 'Active',
        listen_grpc_addr: '127.0.0.1',
        listen_grpc_port: 51051,
      });
      await w.cluster.until(async () => (await call('GET', '/control/v1/node/4')).json.availability === 'Active', { what: 'Active' });
      expect(await call('POST', '/control/v1/node', body)).toEqual({ status: 200, json: null });
      expect(await call('POST', '/control/v1/node', { ...body, listen_http_port: port + 1 })).toEqual({
        status: 409,
        json: { msg: `Conflict: node 4 is registered with listen_http_port ${port}, not ${port + 1}` },
      });
      w.cluster.unresolvable.add('ps-5.nowhere');
      expect(await call('POST', '/control/v1/node', { ...body, node_id: 5, listen_http_addr: 'ps-5.nowhere' })).toEqual({
        status: 503,
        json: { msg: 'node 5: listen_http_addr "ps-5.nowhere" does not resolve; try again later' },
      });
      expect((await call('POST', '/control/v1/node', { ...body, node_id: 5, listen_grpc_port: null })).status).toBe(400);
      expect(await call('POST', '/debug/v1/node/4/drop')).toEqual({ status: 200, json: null });
      expect((await call('GET', '/debug/v1/tombstone')).json.map((n: { id: number }) => n.id)).toEqual([4]);
      expect(await call('POST', '/control/v1/node', body)).toMatchObject({
        status: 409,
        json: { msg: expect.stringMatching(/^Conflict: node 4 was deleted/) },
      });
      // neon:L7: a tombstone can be removed (not while registered), and the id registers again.
      expect((await call('DELETE', '/debug/v1/tombstone/1')).status).toBe(409);
      expect(await call('DELETE', '/debug/v1/tombstone/4')).toEqual({ status: 200, json: null });
      expect(await call('POST', '/control/v1/node', body)).toEqual({ status: 200, json: null });
    } finally {
      await extra.close();
    }
  });

  it('neon:L2–L3: a pageserver registers itself in its re-attach; a tombstoned one is refused 409 with register, 500 without', async () => {
    const w = await setUp({ nodes: THREE_NODES(['az-a']), shards: ON_ONE });
    const call = await restClient(w);
    const extra = await new PageserverSim({ nodeId: 7, safety: w.cluster.safety, clock: w.cluster.clock, log: w.cluster.log, wal: w.cluster.wal }).start();
    try {
      extra.controllerUrl = w.backend.upcallUrl;
      extra.metadata = {
        postgres_host: '127.0.0.1',
        postgres_port: 6400,
        http_host: '127.0.0.1',
        http_port: Number(new URL(extra.url).port),
        availability_zone_id: 'az-c',
      };
      await w.cluster.drive(extra.boot());
      expect((await call('GET', '/control/v1/node/7')).json).toMatchObject({ id: 7, availability: 'WarmingUp', availability_zone_id: 'az-c' });
      await w.cluster.until(async () => (await call('GET', '/control/v1/node/7')).json.availability === 'Active', { what: 'Active' });
      await call('POST', '/debug/v1/node/7/drop');
      await expect(w.cluster.drive(extra.boot())).rejects.toThrow(/answered 409/);
      extra.metadata = undefined;
      await expect(w.cluster.drive(extra.boot())).rejects.toThrow(/answered 500/);
    } finally {
      await extra.close();
    }
  });
});

describe('neon:scenario-11 — graceful delete (neon:L4–L5)', { timeout: 240_000 }, () => {
  it('200, Deleting; Active and Essential shards moved with replacement secondaries, a Pause shard skipped; the node absent across a restart; a drain meanwhile 412', async () => {
    const shards: SimShardSpec[] = [
      { tenant: 1, attached: 1, secondaries: [2] },
      { tenant: 2, attached: 2, secondaries: [1] },
      { tenant: 3, attached: 1, secondaries: [3] },
      { tenant: 4, attached: 1, secondaries: [2] },
    ];
    const w = await setUp({ nodes: [1, 2, 3, 4].map((id) => ({ id, zone: 'az-a' })), shards });
    const call = await restClient(w);
    const [t1, t2, t3, t4] = shards.map(shardIdOf);
    await w.gql(`mutation { setShardPolicy(tenantId: "${t3!.slice(0, 32)}", policy: ESSENTIAL) { __typename } }`);
    await w.gql(`mutation { setShardPolicy(tenantId: "${t4!.slice(0, 32)}", policy: PAUSE) { __typename } }`);
    for (const sim of w.cluster.sims.values()) sim.setLatency(2000);
    expect(await call('PUT', '/control/v1/node/1/delete')).toEqual({ status: 200, json: null });
    expect((await call('GET', '/control/v1/node/1')).json.scheduling).toBe('Deleting');
    expect(await call('PUT', '/control/v1/node/2/drain')).toEqual({
      status: 412,
      json: { msg: 'Precondition failed: Background operation already ongoing for node: delete 1' },
    });
    expect((await call('PUT', '/control/v1/node/1/delete')).status).toBe(412);
    await settled(w, '1');
    const [op] = (await w.app.operations.listOperations({ nodeId: '1', kind: 'DELETE' })) as { id: string; state: string }[];
    expect(op).toMatchObject({ state: 'SUCCEEDED' });
    const steps = await w.app.operations.getSteps(op!.id);
    expect(steps.map((s) => [s.workloadId, s.state, s.reason])).toEqual([
      [t1, 'MOVED', 'ATTACHED'],
      [t2, 'MOVED', 'SECONDARY'],
      [t3, 'MOVED', 'ATTACHED'],
      [t4, 'SKIPPED', 'SHARD_POLICY_PAUSE'],
    ]);
    for (const id of [t1, t2, t3]) {
      const s = (await w.backend.getShard(id!))!;
      expect(s.attachedNodeId).not.toBe('1');
      expect(s.secondaryNodeIds).not.toContain('1');
      expect(s.secondaryNodeIds).toHaveLength(1);
    }
    expect((await call('GET', '/control/v1/node')).json.map((n: { id: number }) => n.id)).toEqual([2, 3, 4]);
    expect((await call('GET', '/control/v1/node/1')).status).toBe(404);
    // Across a controller restart the node stays absent (tombstone in the database).
    await w.backend.close();
    const again = await w.cluster.startController();
    expect((await again.listNodes()).map((n) => n.id)).toEqual(['2', '3', '4']);
  });

  it('cancel: 202 and the starting policy back (Pause); no delete running → 412; unknown node 404', async () => {
    const w = await setUp({ nodes: THREE_NODES(['az-a']), shards: ON_ONE });
    const call = await restClient(w);
    await w.gql('mutation { configureNode(nodeId: "1", policy: PAUSE) { __typename } }');
    for (const sim of w.cluster.sims.values()) sim.setLatency(60_000);
    expect((await call('PUT', '/control/v1/node/1/delete')).status).toBe(200);
    expect(await call('DELETE', '/control/v1/node/1/delete')).toEqual({ status: 202, json: null });
    await settled(w, '1');
    expect((await call('GET', '/control/v1/node/1')).json.scheduling).toBe('Pause');
    expect(await call('DELETE', '/control/v1/node/1/delete')).toEqual({ status: 412, json: { msg: 'Precondition failed: Node 1 has no delete in progress' } });
    expect((await call('DELETE', '/control/v1/node/9/delete')).status).toBe(404);
    const graphql = await w.gql('mutation { cancelNodeDelete(nodeId: "1") { __typename ... on PreconditionFailedError { reason } } }');
    expect(graphql.cancelNodeDelete).toEqual({ __typename: 'PreconditionFailedError', reason: 'NO_DELETE_IN_PROGRESS' });
  });
});

describe('neon:L6 — the deprecated synchronous delete', { timeout: 240_000 }, () => {
  it('an unknown node is 200 (a retry); every shard naming the node is placed without it, whatever its policy, without waiting; then the node is tombstoned', async () => {
    const shards: SimShardSpec[] = [
      { tenant: 1, attached: 1, secondaries: [2] },
      { tenant: 2, attached: 2, secondaries: [1] },
    ];
    const w = await setUp({ nodes: THREE_NODES(['az-a']), shards });
    const call = await restClient(w);
    const [t1, t2] = shards.map(shardIdOf);
    await w.gql(`mutation { setShardPolicy(tenantId: "${t1!.slice(0, 32)}", policy: PAUSE) { __typename } }`);
    expect(await call('DELETE', '/control/v1/node/9')).toEqual({ status: 200, json: null });
    // Neon cleans nothing off a node deleted this way: once tombstoned the controller no longer
    // talks to it, so node 1 may keep its stale (older-generation) attachment, like a lost node.
    w.cluster.safety.setReachable('1', false);
    expect(await call('DELETE', '/control/v1/node/1')).toEqual({ status: 200, json: null });
    expect((await call('GET', '/control/v1/node/1')).status).toBe(404);
    expect((await call('GET', '/debug/v1/tombstone')).json.map((n: { id: number }) => n.id)).toEqual([1]);
    // Even the paused shard moved (neon:L6 ignores policies); each has a replacement secondary.
    expect(await w.backend.getShard(t1!)).toMatchObject({ attachedNodeId: '2', secondaryNodeIds: ['3'] });
    expect(await w.backend.getShard(t2!)).toMatchObject({ attachedNodeId: '2', secondaryNodeIds: ['3'] });
    await w.cluster.until(() => w.cluster.view()[t1!]?.['2'] === 'AttachedSingle@2' && w.cluster.view()[t2!]?.['3'] === 'Secondary@-', { what: 'reconciled' });
  });

  it('a shard that cannot be placed is 409 "Scheduling error", earlier ones stay moved', async () => {
    const w = await setUp({ nodes: [{ id: 1 }, { id: 2 }], shards: [{ tenant: 1, attached: 1, secondaries: [2] }] });
    const call = await restClient(w);
    await call('PUT', '/control/v1/node/2/config', { node_id: 2, scheduling: 'Pause' });
    expect(await call('DELETE', '/control/v1/node/1')).toMatchObject({ status: 409, json: { msg: expect.stringMatching(/^Conflict: Scheduling error: /) } });
    expect((await call('GET', '/control/v1/node/1')).status).toBe(200);
  });
});

describe('neon:scenario-12 — status codes', { timeout: 240_000 }, () => {
  it('drain and fill refusals as Neon answers them (neon:E1–E5)', async () => {
    const w = await setUp({ nodes: THREE_NODES(['az-a']), shards: ON_ONE });
    const call = await restClient(w);
    for (const sim of w.cluster.sims.values()) sim.setLatency(5000);
    expect((await call('PUT', '/control/v1/node/2/drain')).status).toBe(202);
    expect(await call('PUT', '/control/v1/node/1/drain')).toEqual({
      status: 412,
      json: { msg: 'Precondition failed: Background operation already ongoing for node: drain 2' },
    });
    expect(await call('PUT', '/control/v1/node/2/drain')).toEqual({
      status: 412,
      json: { msg: 'Precondition failed: Background operation already ongoing for node: drain 2' },
    });
    await settled(w, '2');
    await w.cluster.drive(w.cluster.sim(2).restart());
    await w.cluster.until(
      async () =>
        (await call('GET', '/control/v1/node/2')).json.scheduling === 'Active' && (await call('GET', '/control/v1/node/2')).json.availability === 'Active',
    );
    expect((await call('PUT', '/control/v1/node/2/fill')).status).toBe(202);
    expect(await call('PUT', '/control/v1/node/1/drain')).toEqual({
      status: 412,
      json: { msg: 'Precondition failed: Background operation already ongoing for node: fill 2' },
    });
    await settled(w, '2');
    // neon:E3: 409 only where the policy says Draining and nothing runs.
    await call('PUT', '/control/v1/node/3/config', { node_id: 3, scheduling: 'Draining' });
    expect(await call('PUT', '/control/v1/node/3/drain')).toEqual({ status: 409, json: { msg: 'Conflict: Node 3 has drain in progress' } });
    await call('PUT', '/control/v1/node/3/config', { node_id: 3, scheduling: 'Pause' });
    expect(await call('PUT', '/control/v1/node/3/drain')).toEqual({
      status: 412,
      json: { msg: 'Precondition failed: Node 3 cannot be drained due to Pause policy' },
    });
    expect(await call('DELETE', '/control/v1/node/1/drain')).toEqual({ status: 412, json: { msg: 'Precondition failed: Node 1 has no drain in progress' } });
    w.cluster.safety.setReachable('3', false);
    await call('PUT', '/control/v1/node/3/config', { node_id: 3, scheduling: 'Active', availability: 'Offline' });
    expect(await call('PUT', '/control/v1/node/3/drain')).toEqual({ status: 503, json: { msg: 'Node 3 is currently unavailable' } });
    expect(await call('DELETE', '/control/v1/node/3/drain')).toEqual({ status: 503, json: { msg: 'Node 3 is currently unavailable' } });
    expect(await call('PUT', '/control/v1/node/9/drain')).toEqual({ status: 404, json: { msg: 'NotFound: Node 9 not registered' } });
    // GraphQL keeps its typed errors (neon:E3).
    await w.cluster.until(async () => (await call('GET', '/control/v1/node/3')).json.availability === 'Active');
    expect((await start(w, 'startNodeDrain', '1')).__typename).toBe('Operation');
    expect((await start(w, 'startNodeDrain', '1')).__typename).toBe('ConflictError');
    await settled(w, '1');
  });

  it('migrate refusals (neon:W1, neon:W4): unknown node 400, unknown shard 404, offline node 412 (200 with override_scheduler), worse-scoring 412, wrong origin 412, a reconcile over 30 s 408', async () => {
    const shards: SimShardSpec[] = [{ tenant: 1, attached: 1, secondaries: [2] }];
    const w = await setUp({ nodes: THREE_NODES(['az-a']), shards });
    const call = await restClient(w);
    const id = shardIdOf(shards[0]!);
    const migrate = (body: unknown, shard = id) => call('PUT', `/control/v1/tenant/${shard}/migrate`, body);
    expect(await migrate({ node_id: 9 })).toEqual({ status: 400, json: { msg: 'node 9 is not registered' } });
    expect(await migrate({ node_id: 2 }, 'e'.repeat(32))).toEqual({ status: 404, json: { msg: `NotFound: shard ${'e'.repeat(32)} not found` } });
    expect(await migrate({ node_id: 3 })).toMatchObject({
      status: 412,
      json: { msg: expect.stringMatching(/^Precondition failed: Migration to a worse-scoring node: node 2 scores better/) },
    });
    expect(await migrate({ node_id: 2, origin_node_id: 3 })).toMatchObject({ status: 412, json: { msg: expect.stringMatching(/not node 3/) } });
    w.cluster.safety.setReachable('3', false);
    await call('PUT', '/control/v1/node/3/config', { node_id: 3, availability: 'Offline' });
    expect(await migrate({ node_id: 3, migration_config: { override_scheduler: false } })).toMatchObject({ status: 412 });
    await w.cluster.until(async () => (await call('GET', '/control/v1/node/3')).json.availability === 'Active');
    // A migration whose reconcile takes longer than 30 s: 408; it goes on.
    w.cluster.sim(2).holdCatchUp(id, 45_000);
    expect(await migrate({ node_id: 2, migration_config: { prewarm: false } })).toEqual({
      status: 408,
      json: { msg: `shard ${id} was not reconciled within 30 s; the reconcile goes on` },
    });
    await w.cluster.until(() => w.cluster.view()[id]?.['2'] === 'AttachedSingle@2', { what: 'the migration done', maxMs: 30_000 });
    // With override_scheduler a worse-scoring target is taken.
    expect(await migrate({ node_id: 3, migration_config: { prewarm: false, override_scheduler: true } })).toEqual({ status: 200, json: {} });
    expect(await w.backend.getShard(id)).toMatchObject({ attachedNodeId: '3', secondaryNodeIds: ['2'] });
  });

  it('neon:W1, neon:W2: migrate to an OFFLINE node with override_scheduler answers 200 at once, calling nothing on it; the move completes once the node is back', async () => {
    const shards: SimShardSpec[] = [{ tenant: 1, attached: 1, secondaries: [2] }];
    const w = await setUp({ nodes: THREE_NODES(['az-a']), shards });
    const call = await restClient(w);
    const id = shardIdOf(shards[0]!);
    const migrate = (body: unknown) => call('PUT', `/control/v1/tenant/${id}/migrate`, body);
    // Node 3 is lost: it stops answering and is marked Offline (it stays so until it answers again).
    w.cluster.sim(3).stopAnswering();
    await call('PUT', '/control/v1/node/3/config', { node_id: 3, availability: 'Offline' });
    expect((await call('GET', '/control/v1/node/3')).json.availability).toBe('Offline');
    expect(await migrate({ node_id: 3 })).toMatchObject({ status: 412 });
    const before = callsTo(w, 3).length;
    expect(await migrate({ node_id: 3, migration_config: { override_scheduler: true } })).toEqual({ status: 200, json: {} });
    // Neon's reconciler configures no location on an unavailable node: nothing was sent to node 3, the shard still on 1.
    expect(callsTo(w, 3, before)).toEqual([]);
    expect(await w.backend.getShard(id)).toMatchObject({ attachedNodeId: '1' });
    expect((await call('GET', '/control/v1/node/3')).json.availability).toBe('Offline');
    w.cluster.sim(3).resume();
    // Back: the secondary is made, warmed and cut over to (the MIGRATE operation of neon:W2).
    await w.cluster.until(() => w.cluster.view()[id]?.['3'] === 'AttachedSingle@2', { what: 'the shard attached on node 3', maxMs: 600_000 });
  });

  it('neon:W1, neon:W4: an immediate migrate (prewarm false) to an OFFLINE node with override_scheduler answers the failed reconcile as 500, as Neon does (not 503); the intent stays on that node, the shard stays served by its old one, and it is attached on the new one once that is back', async () => {
    const shards: SimShardSpec[] = [{ tenant: 1, attached: 1, secondaries: [2] }];
    const w = await setUp({ nodes: THREE_NODES(['az-a']), shards });
    const call = await restClient(w);
    const id = shardIdOf(shards[0]!);
    w.cluster.sim(3).stopAnswering();
    await call('PUT', '/control/v1/node/3/config', { node_id: 3, availability: 'Offline' });
    const body = { node_id: 3, migration_config: { prewarm: false, override_scheduler: true } };
    expect(await call('PUT', `/control/v1/tenant/${id}/migrate`, body)).toEqual({
      status: 500,
      json: { msg: expect.stringMatching(/^reconcile of shard \w+ failed: pageserver 3 is OFFLINE/) },
    });
    // The intent moved at once (neon:W3) and stays so after the failed reconcile, as Neon's does: node 3 attached,
    // node 1 its secondary. Nothing could be issued to node 3, so node 1 still holds the shard attached.
    expect(await w.backend.getShard(id)).toMatchObject({ attachedNodeId: '3', secondaryNodeIds: ['1'] });
    expect(w.cluster.view()[id]?.['1']).toBe('AttachedSingle@1');
    expect(w.cluster.view()[id]?.['3']).toBeUndefined();
    // Node 3 answers again: the background pass completes the intent (no new migrate needed), and node 1 is its secondary.
    w.cluster.sim(3).resume();
    await w.cluster.until(() => /^AttachedSingle@/.test(w.cluster.view()[id]?.['3'] ?? ''), { what: 'the shard attached on node 3', maxMs: 600_000 });
    await w.cluster.until(() => w.cluster.view()[id]?.['1'] === 'Secondary@-', { what: 'node 1 the secondary', maxMs: 600_000 });
  });
});
