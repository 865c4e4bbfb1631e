/**
 * A replica that loses its database (issue 13, "Bad input and faults"; ha:L3, ha:L6): it
 * stops acting at once — it cannot prove its lease — keeps answering what it can
 * (/healthz), says `standby` / `database: down` there, and rejoins when the database is
 * back. On a PostgreSQL server of its own that the test stops (as a crash does) and starts
 * again. Waits are for states, never for a length of time.
 *
 * Issue 27, point 1 (ha:DB5, ha:DB6): the server stopped and started again mid-drain, with two
 * replicas. While it is down every replica answers what needs the database with a typed
 * UNAVAILABLE naming it (a stable 200), a mutation with its typed result, REST with 503 in
 * Neon's shape, /readyz with 200 and `database: down`; what needs no database answers; an
 * eventLog subscription stays open (one opened during the outage too) and, once the database
 * is back and the drain has ended, has delivered every event after its cursor once, in order.
 * The leader that steps down for the outage logs no error.
 */
import { createClient, type Client } from 'graphql-ws';
import { pino } from 'pino';
import WebSocket from 'ws';
import { afterEach, describe, expect, it } from 'vitest';
import { startThrowawayPostgres, type ThrowawayPostgres } from '../support/postgres-server.ts';
import { startReplicas, type ReplicaSet } from '../support/replicas.ts';
import { until } from '../support/child-server.ts';
import { postgresSkipReason } from '../support/test-database.ts';
import { expectEachDeliveredOnce, followEventLog } from '../support/subscribers.ts';

const skip = postgresSkipReason();
let server: ThrowawayPostgres | undefined;
let set: ReplicaSet | undefined;
const clients: Client[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.dispose();
  try {
    server?.resume();
  } catch {
    // running already
  }
  await set?.stop();
  server?.stop();
  set = server = undefined;
});

const SHARDS = 16;
const topology = {
  nodes: [{ id: '1' }, { id: '2' }, { id: '3' }],
  shards: Array.from({ length: SHARDS }, (_, n) => ({
    tenantId: 't',
    shardNumber: n,
    shardCount: SHARDS,
    attachedNodeId: '1',
    secondaries: [{ nodeId: '2' }],
  })),
};

function follow(url: string, after: number) {
  const wsUrl = new URL('/graphql', url);
  wsUrl.protocol = 'ws:';
  const client = createClient({ url: wsUrl.toString(), webSocketImpl: WebSocket, retryAttempts: 0 });
  clients.push(client);
  return followEventLog(client, after);
}

async function post(url: string, query: string): Promise<{ status: number; body: any }> {
  const res = await fetch(new URL('/graphql', url), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) });
  return { status: res.status, body: await res.json() };
}

describe.skipIf(skip)(skip ?? 'the database goes away and comes back', () => {
  it('ha:L3, ha:L6: the leader stops acting as soon as an exchange with the database fails, reports standby / database: down in /healthz, and leads again once it is back', async () => {
    server = await startThrowawayPostgres();
    set = await startReplicas(server.url, 1);
    const replica = await set.untilLeader();
    const epoch = replica.leadership.status().epoch!;
    const { url } = await replica.app.start(0, '127.0.0.1');
    const health = async () => (await (await fetch(new URL('/healthz', url))).json()) as Record<string, unknown>;
    expect(await health()).toMatchObject({ role: 'leader', database: 'up' });

    server.pause();
    // The instant the replica knows the database is gone, it no longer acts (not a lease later).
    const seen = await until(async () => {
      const s = replica.leadership.status();
      return s.database === 'down' ? { role: s.role, canAct: replica.leadership.canAct() } : undefined;
    }, 'the replica to see the database down');
    expect(seen).toEqual({ role: 'standby', canAct: false });
    // It still answers what needs no database.
    expect(await health()).toMatchObject({ status: 'ok', role: 'standby', epoch: null, database: 'down' });

    server.resume();
    const back = await set.untilLeader(() => true, 120_000);
    expect(back).toBe(replica);
    expect(replica.leadership.status().epoch).toBeGreaterThan(epoch);
    expect(await health()).toMatchObject({ role: 'leader', database: 'up' });
  });

  it('ha:DB5, ha:DB6: stopped mid-drain, every replica answers typed UNAVAILABLE naming the database, /readyz 200 with database: down, subscriptions resume without loss or repeat, and the drain ends', async () => {
    server = await startThrowawayPostgres();
    const logs: { replica: string; level: number; msg: string }[] = [];
    set = await startReplicas(server.url, 2, {
      cluster: { topology, latenciesMs: { cutOver: 100 } },
      settings: { maxConcurrentMoves: 1 },
      log: (replica) =>
        pino({ level: 'info' }, { write: (line: string) => void logs.push({ replica, ...(JSON.parse(line) as { level: number; msg: string }) }) }),
    });
    const leader = await set.untilLeader();
    const standby = set.replicas.find((r) => r !== leader)!;
    const leaderUrl = (await leader.app.start(0, '127.0.0.1')).url;
    const standbyUrl = (await standby.app.start(0, '127.0.0.1')).url;
    const database = `postgresql://postgres@127.0.0.1:${server.port}/postgres`;

    const started = await post(leaderUrl, 'mutation { startNodeDrain(nodeId: "1") { __typename ... on Operation { id } } }');
    expect(started.body.data.startNodeDrain.__typename).toBe('Operation');
    const operationId: string = started.body.data.startNodeDrain.id;
    const moved = async () =>
      (await post(leaderUrl, `{ operation(id: "${operationId}") { ... on Operation { state counts { moved } } } }`)).body.data.operation;
    // Mid-drain: some shards moved, most not.
    await until(async () => ((await moved()).counts.moved >= 2 ? true : undefined), 'two shards to move');
    const log = await post(standbyUrl, '{ eventLog(first: 1000) { events { seq } } }');
    const marker: number = log.body.data.eventLog.events.at(-1).seq - 1;
    const before = follow(standbyUrl, marker);
    await until(() => (before.seqs.length >= 1 ? true : undefined), 'the subscription to deliver');

    server.pause();
    for (const url of [leaderUrl, standbyUrl]) {
      for (let i = 0; i < 2; i++) {
        const read = await post(url, '{ eventLog { events { seq } } }');
        expect(read.status).toBe(200);
        expect(read.body.errors[0].extensions).toMatchObject({ code: 'UNAVAILABLE', database });
        expect(read.body.errors[0].message).toMatch(/^database unavailable: postgresql:\/\/postgres@127\.0\.0\.1:\d+\/postgres \(/);
      }
      const refused = await post(url, 'mutation { startNodeDrain(nodeId: "3") { __typename ... on UnavailableError { code database } } }');
      expect(refused.status).toBe(200);
      expect(refused.body.data.startNodeDrain).toEqual({ __typename: 'UnavailableError', code: 'UNAVAILABLE', database });
      // The backend's state needs no database.
      const nodes = await post(url, '{ nodes { edges { node { id } } } }');
      expect(nodes.status).toBe(200);
      expect(nodes.body.errors).toBeUndefined();
      const rest = await fetch(new URL('/control/v1/node/3/drain', url), { method: 'PUT' });
      expect(rest.status).toBe(503);
      expect(rest.headers.get('retry-after')).toBe('5');
      expect(((await rest.json()) as { msg: string }).msg).toMatch(/^database unavailable: postgresql:/);
      const ready = await fetch(new URL('/readyz', url));
      expect(ready.status).toBe(200);
      expect(await ready.json()).toMatchObject({ status: 'ready', database: 'down' });
    }
    // The old leader stood down: it says so, and no replica acts.
    await until(() => (set!.replicas.every((r) => r.leadership.status().role === 'standby') ? true : undefined), 'both replicas to stand by');
    const during = follow(standbyUrl, marker);

    server.resume();
    await set.untilLeader(() => true, 120_000);
    await until(async () => ((await moved()).state === 'SUCCEEDED' ? true : undefined), 'the drain to end', 240_000);
    expect((await moved()).counts.moved).toBe(SHARDS);

    const after = await post(standbyUrl, `{ eventLog(after: ${marker}, first: 1000) { events { seq } } }`);
    const expected: number[] = after.body.data.eventLog.events.map((e: { seq: number }) => e.seq);
    await expectEachDeliveredOnce(expected, [before, during]);
    // An outage is no crash: nothing logged at error level (50) or above.
    expect(logs.filter((l) => l.level >= 50).map((l) => `${l.replica}: ${l.msg}`)).toEqual([]);
  });
});
