/**
 * Leadership on a real PostgreSQL server (ha:L1–L7): several replicas in one process on one
 * database and one shared simulated cluster. Leases are short (ttl 6 s, renew 1 s: shorter ones expire on a loaded two-core machine, rightly, and no leader stays put) and run
 * on real time; the assertions are about order and ownership (epochs, who sent which backend
 * action), never about durations.
 */
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import type { ShardSpec } from '../../plugins/fake/index.ts';
import { isFenceError } from '../../src/leadership/lease-store.ts';
import { until } from '../support/child-server.ts';
import { startReplicas, type Replica, type ReplicaSet } from '../support/replicas.ts';
import { createPostgresDatabase, postgresSkipReason } from '../support/test-database.ts';

const skip = postgresSkipReason();
let set: ReplicaSet | undefined;
const clients: pg.Client[] = [];
afterEach(async () => {
  await set?.stop();
  set = undefined;
  for (const c of clients.splice(0)) await c.end();
});

const shard = (tenantId: string, shardNumber: number, attachedNodeId: string, secondary: string): ShardSpec => ({
  tenantId,
  shardNumber,
  shardCount: 8,
  attachedNodeId,
  secondaries: [{ nodeId: secondary }],
});

/** `n` shards attached to node 1 with a secondary on node 2 or 3. */
function storageCluster(n: number, cutOverMs = 15) {
  const shards = Array.from({ length: n }, (_, i) => shard(`t${Math.floor(i / 8)}`, i % 8, '1', i % 2 ? '2' : '3'));
  return { topology: { nodes: [{ id: '1' }, { id: '2' }, { id: '3' }], shards }, latenciesMs: { cutOver: cutOverMs } };
}

async function sql(url: string): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  clients.push(c);
  return c;
}

async function startDrain(r: Replica, nodeId: string) {
  const res = await r.gql(`mutation { startNodeDrain(nodeId: "${nodeId}") { __typename ... on Operation { id } ... on Error { code message } } }`);
  return res.data.startNodeDrain;
}

/** The operation's final record, from the database (any replica may read it). */
async function finished(r: Replica, id: string) {
  return until(async () => {
    const op = await r.db.prisma.operation.findUnique({ where: { id } });
    return op && ['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(op.state) ? op : undefined;
  }, `operation ${id} to end`);
}

describe.skipIf(skip)(skip ?? 'leadership', () => {
  it('ha:L1: of three replicas exactly one leads, at epoch 1; the others stand by and say so in /healthz (ha:L6)', async () => {
    set = await startReplicas(await createPostgresDatabase(), 3);
    const leader = await set.untilLeader();
    const roles = set.replicas.map((r) => r.leadership.status().role).sort();
    expect(roles).toEqual(['leader', 'standby', 'standby']);
    expect(leader.leadership.status().epoch).toBe(1);
    const row = await leader.lease.current();
    expect(row).toMatchObject({ holder: leader.leadership.holder, epoch: 1, live: true, address: `http://${leader.name}.test:4000` });
    const standby = set.replicas.find((r) => r !== leader)!;
    const health = async (r: Replica) => {
      const { url } = await r.app.start(0, '127.0.0.1');
      return (await (await fetch(new URL('/healthz', url))).json()) as Record<string, unknown>;
    };
    expect(await health(standby)).toMatchObject({ status: 'ok', role: 'standby', epoch: null, leaseExpiresAt: null, databaseStatus: 'up' });
    const mine = await health(leader);
    expect(mine).toMatchObject({ role: 'leader', epoch: 1, databaseStatus: 'up' });
    // Its own view of the lease ends before the database's (the safety margin, ha:L3).
    expect(Date.parse(mine.leaseExpiresAt as string)).toBeLessThan((await leader.lease.current()).expiresAt!.getTime());
  });

  it('ha:L2, ha:L3, ha:L4: a leader that cannot renew stops acting before its lease expires; a stand-by takes over at the next epoch and finishes the drain; every shard has one outcome', async () => {
    set = await startReplicas(await createPostgresDatabase(), 2, { cluster: storageCluster(60, 100), settings: { maxConcurrentMoves: 1 } });
    const first = await set.untilLeader();
    const op = await startDrain(first, '1');
    expect(op.__typename).toBe('Operation');
    await until(() => (set!.actions.filter((a) => a.method === 'cutOverShard').length >= 6 ? true : undefined), 'a few cut-overs');

    // The leader's renewals stop reaching the database (as when it is frozen or cut off).
    first.lease.renew = () => new Promise(() => {});
    const second = await set.untilLeader((r) => r !== first);
    expect(second.leadership.status().epoch).toBe(2);
    expect(first.leadership.status().role).toBe('standby');
    const done = await finished(second, op.id);
    expect(done.state).toBe('SUCCEEDED');

    // Ownership: no action from the deposed leader once the new epoch acted, each from its own epoch.
    const firstOfNew = set.actions.find((a) => a.epoch === 2)!;
    expect(firstOfNew.replica).toBe(second.name);
    expect(set.actions.filter((a) => a.replica === first.name && a.seq > firstOfNew.seq)).toEqual([]);
    expect(set.actions.every((a) => a.epoch === (a.replica === first.name ? 1 : 2))).toBe(true);
    // Every shard ends attached to one node: moved, none left on node 1, none lost.
    const shards = await set.cluster.listShards();
    expect(shards).toHaveLength(60);
    expect(shards.filter((s) => s.attachedNodeId === '1')).toEqual([]);
    const steps = await second.app.operations.getSteps(op.id);
    expect(steps.map((s) => s.state)).toEqual(Array(60).fill('MOVED'));
  });

  it('ha:L5: stopping the leader (SIGTERM) hands over: runs halted, lease released, the stand-by resumes at the next epoch', async () => {
    const url = await createPostgresDatabase();
    set = await startReplicas(url, 2, { cluster: storageCluster(30, 100), settings: { maxConcurrentMoves: 1 } });
    const first = await set.untilLeader();
    const op = await startDrain(first, '1');
    await until(() => (set!.actions.length >= 3 ? true : undefined), 'a few cut-overs');
    await first.stop();
    const stoppedAt = set.actions.length;
    // Released, not left to expire: free (or already taken by the stand-by at the next epoch).
    const { rows } = await (await sql(url)).query(`SELECT "holder", "epoch" FROM "LeaderLease"`);
    expect([null, set.replicas[1]!.leadership.holder]).toContain(rows[0].holder);
    const second = await set.untilLeader((r) => r !== first);
    expect(second.leadership.status().epoch).toBe(2);
    expect((await finished(second, op.id)).state).toBe('SUCCEEDED');
    expect(set.actions.slice(stoppedAt).every((a) => a.replica === second.name)).toBe(true);
  });

  it('ha:L7: a transaction of a deposed leader is refused whole by the fence, and the replica stands by', async () => {
    const url = await createPostgresDatabase();
    set = await startReplicas(url, 1);
    const leader = await set.untilLeader();
    // Another replica takes the lease (as after this one's expiry).
    await (await sql(url)).query(`UPDATE "LeaderLease" SET "holder" = 'other', "epoch" = "epoch" + 1`);
    const store = leader.app.operations as unknown as {
      deps: { store: { commit: (w: unknown[]) => Promise<void>; events: { append: (e: object) => unknown } } };
    };
    const { commit, events } = store.deps.store;
    const error = await commit([events.append({ at: Date.now(), type: 'TEST', nodeId: null, operationId: null, payload: {} })]).catch((e: unknown) => e);
    expect(isFenceError(error)).toBe(true);
    expect(await leader.db.prisma.event.count({ where: { type: 'TEST' } })).toBe(0);
    expect(leader.leadership.status().role).toBe('standby');
  });

  it('ha:L7: the fence share-locks the lease row, so a take-over waits for the fenced transaction to commit', async () => {
    const url = await createPostgresDatabase();
    set = await startReplicas(url, 1);
    const leader = await set.untilLeader();
    const { holder, epoch } = leader.leadership.status();
    const writer = await sql(url);
    const taker = await sql(url);
    await writer.query('BEGIN');
    await writer.query('SELECT lockkeeper_fence($1, $2)', [holder, epoch]);
    await taker.query(`SET lock_timeout = '200ms'`);
    await expect(taker.query(`UPDATE "LeaderLease" SET "holder" = 'other', "epoch" = "epoch" + 1`)).rejects.toThrow(/lock timeout/);
    await writer.query('COMMIT');
    await taker.query(`UPDATE "LeaderLease" SET "holder" = 'other', "epoch" = "epoch" + 1`);
    await expect(writer.query('SELECT lockkeeper_fence($1, $2)', [holder, epoch])).rejects.toMatchObject({ code: 'LK001' });
  });

  it('ha:L4: a leader frozen inside a fenced transaction does not hold off the take-over: the server ends the idle transaction (half the lease) and its locks go', async () => {
    const url = await createPostgresDatabase();
    set = await startReplicas(url, 1);
    const leader = await set.untilLeader();
    const { holder, epoch } = leader.leadership.status();
    const pool = leader.db.postgres!.pool;
    const frozen = await pool.connect();
    // The server's FATAL on the ended session arrives as an 'error' event (Prisma's transactions listen for it too).
    frozen.on('error', () => {});
    try {
      expect(
        (await frozen.query<{ idle_in_transaction_session_timeout: string }>('SHOW idle_in_transaction_session_timeout')).rows[0]!
          .idle_in_transaction_session_timeout,
      ).toBe('3s');
      // What a process stopped between two statements of one of its transactions leaves on the server.
      await frozen.query('BEGIN');
      await frozen.query('SELECT lockkeeper_fence($1, $2)', [holder, epoch]);
      // A take-over's write on the lease row: it waits for the share lock, and gets it once the server ends the frozen transaction.
      const taker = await sql(url);
      const took = await taker.query(`UPDATE "LeaderLease" SET "holder" = 'other', "epoch" = "epoch" + 1`);
      expect(took.rowCount).toBe(1);
      // The frozen transaction was ended, not committed: its next statement fails.
      await expect(frozen.query('SELECT 1')).rejects.toThrow(/idle-in-transaction|terminat|Connection/i);
    } finally {
      frozen.release(true);
    }
  });

  it('ha:L2: a stand-by acts on nothing: a drain asked of it is admitted (ha:R2) and run by the leader; a mutation that acts on the backend at once answers a typed UnavailableError', async () => {
    set = await startReplicas(await createPostgresDatabase(), 2, { cluster: storageCluster(4) });
    const leader = await set.untilLeader();
    const standby = set.replicas.find((r) => r !== leader)!;
    const op = await startDrain(standby, '1');
    expect(op.__typename).toBe('Operation');
    expect((await finished(leader, op.id)).state).toBe('SUCCEEDED');
    expect(set.actions.length).toBeGreaterThan(0);
    expect(set.actions.filter((a) => a.replica !== leader.name)).toEqual([]);
    const res = await standby.gql(`mutation { disableMaintenanceMode(nodeId: "2") { __typename ... on Error { code } } }`);
    expect(res.data.disableMaintenanceMode).toMatchObject({ __typename: 'UnavailableError', code: 'UNAVAILABLE' });
  });

  it('ha:L5: stepDown (admin) and PUT /control/v1/step_down hand over on purpose; GET /control/v1/leader names the leader; a stand-by refuses (ha:L6 metrics)', async () => {
    set = await startReplicas(await createPostgresDatabase(), 2);
    const first = await set.untilLeader();
    const other = set.replicas.find((r) => r !== first)!;
    const urls = new Map<Replica, string>();
    for (const r of set.replicas) urls.set(r, (await r.app.start(0, '127.0.0.1')).url);
    const rest = (r: Replica, path: string, method = 'GET') => fetch(new URL(path, urls.get(r)), { method });

    const leaderAnswer = await rest(other, '/control/v1/leader');
    expect(leaderAnswer.status).toBe(200);
    expect(await leaderAnswer.json()).toMatchObject({ address: `http://${first.name}.test:4000`, epoch: 1 });
    const metrics = async (r: Replica) => (await rest(r, '/metrics')).text();
    expect(await metrics(first)).toMatch(/^lockkeeper_leader 1$/m);
    expect(await metrics(other)).toMatch(/^lockkeeper_leader 0$/m);
    expect(await metrics(first)).toMatch(/^lockkeeper_leader_takeovers_total 1$/m);

    // A stand-by refuses, typed.
    const refused = await other.gql('mutation { stepDown(reason: "test") { __typename ... on PreconditionFailedError { reason message } } }');
    expect(refused.data.stepDown).toMatchObject({ __typename: 'PreconditionFailedError', reason: 'NOT_LEADER' });
    expect((await rest(other, '/control/v1/step_down', 'PUT')).status).toBe(412);

    // The leader steps down by mutation: the other takes over at epoch 2.
    const stepped = await first.gql('mutation { stepDown(reason: "kernel update") { __typename ... on Leadership { role epoch } } }');
    expect(stepped.data.stepDown).toEqual({ __typename: 'Leadership', role: 'STANDBY', epoch: null });
    const second = await set.untilLeader((r) => r === other);
    expect(second.leadership.status().epoch).toBe(2);
    expect(await metrics(second)).toMatch(/^lockkeeper_leader_epoch 2$/m);
    // And back by REST.
    const put = await rest(second, '/control/v1/step_down', 'PUT');
    expect(put.status).toBe(200);
    expect(await put.json()).toEqual({ stepped_down: true, epoch: 2 });
    expect((await set.untilLeader((r) => r === first)).leadership.status().epoch).toBe(3);
    const audit = await first.db.prisma.auditEntry.findMany({ orderBy: { at: 'asc' } });
    expect(audit.map((a) => [a.action, a.outcome])).toEqual(
      expect.arrayContaining([
        ['stepDown', 'PRECONDITION_FAILED'],
        ['stepDown', 'OK'],
        ['PUT /control/v1/step_down', 'OK'],
      ]),
    );
  });

  it('ha:E1, ha:E2: a commit on the leader wakes the event-log readers of a stand-by (NOTIFY carries only the seq), which read it from their cursor', async () => {
    set = await startReplicas(await createPostgresDatabase(), 2, { cluster: storageCluster(2) });
    const leader = await set.untilLeader();
    const standby = set.replicas.find((r) => r !== leader)!;
    const cursor = (await standby.gql('{ eventLog(first: 1000) { nextCursor } }')).data.eventLog.nextCursor;
    // No fallback poll within the test's time: only the NOTIFY can wake it.
    const woken = standby.app.eventWakeup.wait(3_600_000);
    const res = await leader.gql('mutation { configureNode(nodeId: "3", policy: PAUSE, reason: "e1") { __typename } }');
    expect(res.data.configureNode.__typename).toBe('ClusterNode');
    await woken;
    const page = (await standby.gql(`{ eventLog(after: ${cursor}) { events { seq type nodeId } } }`)).data.eventLog.events;
    expect(page).toEqual([{ seq: cursor + 1, type: 'NODE_POLICY_CHANGED', nodeId: '3' }]);
    // The stand-by's reads follow the leader's change (ha:R1).
    await until(() => (standby.app.storage.policyOf('3') === 'PAUSE' ? true : undefined), 'the stand-by to see the policy');
  });
});
