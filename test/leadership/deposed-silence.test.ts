/**
 * ha:L9 with real processes: `lockkeeper simulator --tenants` (pageservers and the compute
 * hook; one request log in arrival order, each request with its `x-lockkeeper-sender`) as the
 * witness, `lockkeeper serve` replicas on the `pageserver` plugin and one PostgreSQL. Every
 * `PUT …/location_config` is held at the pageservers, so the leader's drain has a cut-over
 * request in flight — sent, unanswered — when it loses its lease. A marker request the test
 * sends places the instant the lease was known lost in the log; after it, nothing tagged with
 * the deposed epoch may arrive: not the request that was in flight (aborted at step-down,
 * so the pageserver drops it when the hold is lifted), not a read of the cut-over that would
 * have followed. Waits are for states (a held request, a role, an epoch, an operation's end),
 * never for lengths of time; the lease's expiry is what the freeze outlasts, not a timer.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { LoggedRequest } from '../../simulators/common/index.ts';
import { LOCATION_CONFIG_HOLD_PATH } from '../../simulators/pageserver/index.ts';
import { postGraphQL, until } from '../support/child-server.ts';
import { HaProcesses, leaderOf, nodesActive, operationEnded, pageserverRequests, type ReplicaProcess } from '../support/ha-processes.ts';
import { createPostgresDatabase, postgresSkipReason } from '../support/test-database.ts';

const skip = postgresSkipReason();
const processes = new HaProcesses();
afterEach(() => processes.stop());

/** 12 unsharded tenants round-robin over three pageservers: 4 on pageserver 1. */
const TENANTS = 12;

/** `host:pid:random@epoch/scope` (src/cluster/authority.ts): the epoch and scope, or the stand-by's `standby`. */
function tagOf(r: LoggedRequest): { pid: number; epoch: number | 'standby'; scope: string } | null {
  const m = /^.*:(\d+):[0-9a-f]+@(\d+|standby)\/([\w-]+)$/.exec(r.sender ?? '');
  return m ? { pid: Number(m[1]), epoch: m[2] === 'standby' ? 'standby' : Number(m[2]), scope: m[3]! } : null;
}

async function cluster(names: string[]) {
  const dir = mkdtempSync(join(tmpdir(), 'lk-ha-deposed-'));
  const sim = await processes.simulator(dir, [
    '--nodes',
    '3',
    '--vms-per-node',
    '0',
    '--separate-hosts',
    '--tenants',
    String(TENANTS),
    '--shards-per-tenant',
    '1',
  ]);
  const pageservers = (
    JSON.parse(readFileSync(sim.config, 'utf8')) as { plugins: { name: string; options: { pageservers?: { id: number; url: string }[] } }[] }
  ).plugins.find((p) => p.name === 'pageserver')!.options.pageservers!;
  const config = HaProcesses.config(dir, sim.config, { operations: { maxConcurrentMoves: 1 } });
  const url = await createPostgresDatabase();
  const db = await processes.database(url);
  const replicas: ReplicaProcess[] = [];
  for (const name of names) replicas.push(await processes.replica(name, config, dir, url));
  const { leader, epoch } = await leaderOf(replicas);
  await nodesActive(leader, ['1', '2', '3']);

  const hold = async (held: boolean) => {
    for (const p of pageservers) {
      const r = await fetch(new URL(LOCATION_CONFIG_HOLD_PATH, p.url), { method: 'PUT', body: JSON.stringify({ held }) });
      expect(r.status).toBe(200);
    }
  };
  const waiting = async () => {
    let n = 0;
    for (const p of pageservers) n += ((await (await fetch(new URL(LOCATION_CONFIG_HOLD_PATH, p.url))).json()) as { waiting: number }).waiting;
    return n;
  };
  /** A request of the test's own, logged in arrival order among the gateway's: a point in the witness's log. */
  const marker = async (name: string) => {
    await fetch(new URL('/v1/location_config', pageservers[0]!.url), { headers: { 'x-lockkeeper-sender': name } });
  };
  /** Starts a drain of pageserver 1 on the leader; resolves once one of its cut-overs has a location_config in flight, held. */
  const drainInFlight = async () => {
    await hold(true);
    const started = await postGraphQL(
      leader.url,
      'mutation { r: startNodeDrain(nodeId: "1") { __typename ... on Operation { id } ... on Error { message } } }',
    );
    expect(started.r, started.r.message).toMatchObject({ __typename: 'Operation' });
    await until(async () => ((await waiting()) > 0 ? true : undefined), 'a location_config of the drain in flight, held', 120_000, 20);
    return started.r.id as string;
  };
  /** What arrived after the marker, from the deposed leader's process at its deposed epoch. */
  const afterMarker = async (name: string, pid: number, deposed: number) => {
    const log = await pageserverRequests(sim);
    const at = log.findIndex((r) => r.sender === name);
    expect(at).toBeGreaterThan(-1);
    const before = log.slice(0, at);
    const after = log.slice(at + 1);
    const describe = (r: LoggedRequest) => `${r.source} ${r.method} ${r.path} from ${r.sender}`;
    return {
      // The deposed epoch did send before (its drain ran): the check below is not vacuous.
      sentBefore: before.filter((r) => tagOf(r)?.epoch === deposed).length,
      deposedAfter: after.filter((r) => tagOf(r)?.pid === pid && tagOf(r)?.epoch === deposed).map(describe),
      byPidAfter: after.filter((r) => tagOf(r)?.pid === pid).map((r) => `${tagOf(r)!.epoch}/${tagOf(r)!.scope}`),
      log,
    };
  };
  return { db, replicas, leader, epoch, hold, marker, drainInFlight, afterMarker };
}

describe.skipIf(skip)(skip ?? 'a deposed leader falls silent at once (ha:L9)', () => {
  it(
    'ha:L9, ha:L3: a leader SIGSTOPped past its lease with a cut-over request in flight, replaced, then SIGCONTed: no request of its epoch reaches the pageservers after it wakes',
    { timeout: 240_000 },
    async () => {
      const c = await cluster(['r1', 'r2']);
      const id = await c.drainInFlight();
      const frozen = c.leader;
      frozen.child.kill('SIGSTOP');
      // The lease ran out by the database's clock and the other replica took it: a newer epoch.
      const { leader: next, epoch: nextEpoch } = await leaderOf(c.replicas, c.epoch);
      expect(next).not.toBe(frozen);
      await c.marker('marker:before-sigcont');
      frozen.child.kill('SIGCONT');
      await until(async () => ((await frozen.health().catch(() => null))?.role === 'standby' ? true : undefined), 'the woken replica to stand by', 60_000, 20);
      // The held requests go on to the pageservers now: the frozen leader's, had it not been aborted, with them.
      await c.hold(false);
      const done = await operationEnded(c.db, id, 'the drain to end under the new leader');
      expect(done.state).toBe('SUCCEEDED');

      const seen = await c.afterMarker('marker:before-sigcont', frozen.child.pid!, c.epoch);
      expect(seen.sentBefore).toBeGreaterThan(0);
      expect(seen.deposedAfter).toEqual([]);
      // Whatever the woken replica sent is a stand-by's (its discovery), never a run's.
      expect(seen.byPidAfter.filter((t) => t !== 'standby/discovery')).toEqual([]);
      // The new leader's drain went on under its own epoch, its cut-overs named by run.
      expect(seen.log.some((r) => tagOf(r)?.epoch === nextEpoch && tagOf(r)?.scope === `run-${id}` && r.method === 'PUT')).toBe(true);
    },
  );

  it(
    'ha:L9, ha:L7: another holder takes the epoch in the database while a cut-over request is in flight: the leader is refused, and no request of the old epoch follows',
    { timeout: 240_000 },
    async () => {
      const c = await cluster(['r1']);
      await c.drainInFlight();
      // Another holder at a newer epoch, for an hour: the leader's next renewal or fenced write is refused.
      await c.db.query(`UPDATE "LeaderLease" SET "epoch" = "epoch" + 1, "holder" = 'intruder', "expiresAt" = now() + interval '1 hour'`);
      await until(async () => ((await c.leader.health())?.role === 'standby' ? true : undefined), 'the refused leader to stand by', 60_000, 20);
      await c.marker('marker:refused');
      // The request of the old epoch that was in flight would arrive now, had it not been aborted.
      await c.hold(false);
      await c.marker('marker:released');

      const seen = await c.afterMarker('marker:refused', c.leader.child.pid!, c.epoch);
      expect(seen.sentBefore).toBeGreaterThan(0);
      expect(seen.deposedAfter).toEqual([]);
      expect(seen.byPidAfter.filter((t) => t !== 'standby/discovery')).toEqual([]);
    },
  );
});
