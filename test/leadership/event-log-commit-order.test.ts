/**
 * ha:E2 on PostgreSQL when event-writing transactions commit out of seq order. `seq` comes
 * from a sequence when the row is inserted, not when it commits: a transaction that took a
 * lower seq and commits after one that took a higher seq leaves a gap that the `eventLog`
 * subscription's reader (src/graphql/types/event-log.ts, `tail`) has already passed; its cursor
 * is beyond it, so the event is never delivered, nor to a client resuming from that cursor.
 * Several writers do overlap in practice: admissions and cancels on any replica
 * (src/store/admission-sql.ts) while the leader's journal and engines write theirs.
 *
 * Deterministic: two transactions on two connections, the lower seq held open until the higher
 * one has reached the client (or, once inserts are serialised, until the higher one's insert
 * waits for it), then a third event as the signal that the reader has moved past.
 * Before the fix the late commit's event was missed. The fix (migration `event_order`):
 * every insert into "Event" takes a transaction-level advisory lock held until commit, so the
 * second insert waits for the first transaction and commit order is seq order.
 */
import { createClient, type Client } from 'graphql-ws';
import pg from 'pg';
import WebSocket from 'ws';
import { afterEach, describe, expect, it } from 'vitest';
import { until } from '../support/child-server.ts';
import { startReplicas, type ReplicaSet } from '../support/replicas.ts';
import { createPostgresDatabase, postgresSkipReason } from '../support/test-database.ts';

const skip = postgresSkipReason();
let set: ReplicaSet | undefined;
const clients: Client[] = [];
const connections: pg.Client[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.dispose();
  for (const c of connections.splice(0)) await c.end();
  await set?.stop();
  set = undefined;
});

async function connect(url: string): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  connections.push(c);
  return c;
}

const insert = async (db: pg.Client, type: string) =>
  (await db.query<{ seq: number }>(`INSERT INTO "Event" ("type", "payload") VALUES ($1, '{}') RETURNING "seq"`, [type])).rows[0]!.seq;

describe.skipIf(skip)(skip ?? 'the event log when commits overtake each other', () => {
  it('ha:E2, ha:E1: an event whose transaction commits after one with a higher seq still reaches the subscriber', { timeout: 120_000 }, async () => {
    const url = await createPostgresDatabase();
    set = await startReplicas(url, 1);
    const { url: http } = await set.replicas[0]!.app.start(0, '127.0.0.1');
    const ws = new URL('/graphql', http);
    ws.protocol = 'ws:';
    const client = createClient({ url: ws.toString(), webSocketImpl: WebSocket, retryAttempts: 0 });
    clients.push(client);
    const seen: { seq: number; type: string }[] = [];
    client.subscribe<{ eventLog: { seq: number; type: string } }>(
      { query: 'subscription { eventLog(after: 0) { seq type } }' },
      { next: ({ data }) => void seen.push(data!.eventLog), error: () => {}, complete: () => {} },
    );
    const late = await connect(url);
    const early = await connect(url);
    const earlyPid = (await early.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    await late.query('BEGIN');
    const lateSeq = await insert(late, 'PROBE_LATE');
    // Not awaited: with inserts serialised (the fix) it waits for the late transaction.
    const earlyInsert = insert(early, 'PROBE_EARLY');
    const blocked = async () => (await late.query(`SELECT 1 FROM pg_stat_activity WHERE "pid" = $1 AND "wait_event_type" = 'Lock'`, [earlyPid])).rowCount! > 0;
    // Either the early event has reached the client past the open lower seq (today), or its insert waits for it.
    await until(
      async () => (seen.some((e) => e.type === 'PROBE_EARLY') || (await blocked()) ? true : undefined),
      'the early event at the client, or its insert waiting',
      60_000,
      20,
    );
    await late.query('COMMIT');
    const earlySeq = await earlyInsert;
    expect(earlySeq).toBeGreaterThan(lateSeq);
    const afterSeq = await insert(early, 'PROBE_AFTER');
    await until(() => (seen.some((e) => e.seq === afterSeq) ? true : undefined), 'the event after at the client', 60_000, 20);
    expect(seen.filter((e) => e.type.startsWith('PROBE_')).map((e) => e.type)).toEqual(['PROBE_LATE', 'PROBE_EARLY', 'PROBE_AFTER']);
    expect(seen.map((e) => e.seq)).toEqual([...new Set(seen.map((e) => e.seq))].sort((x, y) => x - y));
  });
});
