/**
 * A replica that loses its database (issue 13, "Bad input and faults"; ha:L3, ha:L6): it
 * stops acting at once — it cannot prove its lease — keeps answering what it can
 * (/healthz), says `standby` / `database: down` there, and rejoins when the database is
 * back. On a PostgreSQL server of its own that the test stops (as a crash does) and starts
 * again. Waits are for states, never for a length of time.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startThrowawayPostgres, type ThrowawayPostgres } from '../support/postgres-server.ts';
import { startReplicas, type ReplicaSet } from '../support/replicas.ts';
import { until } from '../support/child-server.ts';
import { postgresSkipReason } from '../support/test-database.ts';

const skip = postgresSkipReason();
let server: ThrowawayPostgres | undefined;
let set: ReplicaSet | undefined;
afterEach(async () => {
  try {
    server?.resume();
  } catch {
    // running already
  }
  await set?.stop();
  server?.stop();
  set = server = undefined;
});

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
});
