/**
 * ha:scenario-1 in full (high-availability.md §6), with real processes: `lockkeeper
 * simulator` (ha:B1) serving the Kubernetes + KubeVirt API, three pageservers and the compute
 * hook; three gateway replicas (`lockkeeper serve` on the real `kubevirt` and `pageserver`
 * plugins) on one real PostgreSQL database. A drain of the 200 shards pageserver 1 holds is
 * started on a stand-by, a VM maintenance of `node-1` beside it; the leader is `kill -9`ed ten
 * times in a row, each time once more steps have ended since the last kill (a seeded random
 * count: a state, never a length of time), and a replacement replica is started after each kill
 * so that two or three replicas stay alive. Cut-overs are held at the pageservers from each kill
 * until the replacement is up, so that the work left for the later kills does not depend on how
 * fast the machine starts a process (unheld, the drain of 200 shards could end before the tenth
 * kill on a quiet machine). Assertions are about outcomes and ownership
 * (which replica, at which epoch, sent each request), never durations.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import type { StepRow } from '../../campaign/invariants.ts';
import { createPrng } from '../../src/domain/prng.ts';
import { postGraphQL, until } from '../support/child-server.ts';
import { HaProcesses, leaderOf, nodesActive, type ReplicaProcess as Replica, type SimulatorProcess as Simulator } from '../support/ha-processes.ts';
import { createPostgresDatabase, postgresSkipReason } from '../support/test-database.ts';
import { CALLS_PATH } from '../../simulators/kubernetes/server.ts';
import { LOCATION_CONFIG_HOLD_PATH } from '../../simulators/pageserver/index.ts';

const skip = postgresSkipReason();
/** Short leases (ha:§6), as in acceptance.test.ts: long enough that a loaded two-core machine does not drop a healthy leader. */
const HA = { leaseTtlMs: 4000, leaseRenewMs: 1000 };
const KILLS = 10;
const NODES = 3;
const VMS_PER_NODE = 8;
/** Shards are spread round-robin over the three pageservers: 150 tenants of 4 shards put 200 on pageserver 1. */
const TENANTS = 150;
const SHARDS_PER_TENANT = 4;
const DRAINED_SHARDS = Math.ceil((TENANTS * SHARDS_PER_TENANT) / NODES);
/** Seed of the kill instants; another run of the same seed kills after the same numbers of ended steps. */
const SEED = Number(process.env.LOCKKEEPER_KILL_SEED ?? 23);
const TERMINAL_STEP_STATES = ['MOVED', 'STOPPED', 'SKIPPED', 'FAILED', 'ABANDONED'];

const processes = new HaProcesses();
const clients: pg.Client[] = [];
afterEach(async () => {
  await processes.stop();
  for (const c of clients.splice(0)) await c.end();
});

async function sql(url: string): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  clients.push(c);
  return c;
}

async function start(r: Replica, mutation: 'startNodeDrain' | 'enableMaintenanceMode', node: string): Promise<string> {
  const data = await postGraphQL(r.url, `mutation { ${mutation}(nodeId: "${node}") { __typename ... on Operation { id } ... on Error { message } } }`);
  expect(data[mutation], data[mutation].message).toMatchObject({ __typename: 'Operation' });
  return data[mutation].id as string;
}

async function states(db: pg.Client, ids: string[]): Promise<string[]> {
  const { rows } = await db.query<{ id: string; state: string }>(`SELECT "id", "state" FROM "Operation" WHERE "id" = ANY($1)`, [ids]);
  return ids.map((id) => rows.find((r) => r.id === id)!.state);
}

const unended = (s: string) => s === 'RUNNING' || s === 'CANCELLING' || s === 'PAUSED';

/** Steps of these operations that have ended (a terminal state), all together. */
async function endedSteps(db: pg.Client, ids: string[]): Promise<number> {
  const { rows } = await db.query<{ n: string }>(`SELECT count(*) AS n FROM "OperationStep" WHERE "operationId" = ANY($1) AND "state" = ANY($2)`, [
    ids,
    TERMINAL_STEP_STATES,
  ]);
  return Number(rows[0]!.n);
}

/** `host:pid:random@epoch/scope` (src/cluster/authority.ts) as pid and epoch; null when the call named no sender or no epoch. */
function senderOf(call: { sender?: string }): { pid: number; epoch: number } | null {
  const m = /^.*:(\d+):[0-9a-f]+@(\d+)\/[\w-]+$/.exec(call.sender ?? '');
  return m ? { pid: Number(m[1]), epoch: Number(m[2]) } : null;
}

/** The writes the simulated API server received, in arrival order, each with its `x-lockkeeper-sender` (ha:L3). */
async function writes(sim: Simulator): Promise<{ verb: string; resource: string; name?: string; sender?: string }[]> {
  const { items } = (await sim.get(CALLS_PATH)) as { items: { verb: string; resource: string; name?: string; sender?: string }[] };
  return items.filter((c) => !['get', 'list', 'watch'].includes(c.verb));
}

/**
 * Holds (or lets through) every `PUT …/location_config` on the pageservers: no cut-over step
 * makes progress while a replacement replica starts, so the work a kill interval uses is a count
 * of ended steps, not however many the machine got through while a process started.
 */
async function holdCutOvers(pageservers: { url: string }[], held: boolean): Promise<void> {
  for (const p of pageservers) {
    const r = await fetch(new URL(LOCATION_CONFIG_HOLD_PATH, p.url), { method: 'PUT', body: JSON.stringify({ held }) });
    expect(r.status).toBe(200);
  }
}

/** Every shard's attached locations across the simulated pageservers, by shard id (the pageservers' own view). */
async function attachments(pageservers: { id: number; url: string }[]): Promise<Map<string, number[]>> {
  const attached = new Map<string, number[]>();
  for (const p of pageservers) {
    const body = (await (await fetch(new URL('/v1/location_config', p.url))).json()) as { tenant_shards: [string, { mode: string }][] };
    for (const [shard, loc] of body.tenant_shards) {
      if (!loc.mode.startsWith('Attached')) continue;
      attached.set(shard, [...(attached.get(shard) ?? []), p.id]);
    }
  }
  return attached;
}

describe.skipIf(skip)(skip ?? 'acceptance scenario 1 with ten kills', () => {
  it(
    `ha:scenario-1, ha:L4, ha:L3, ha:R2: a drain of ${DRAINED_SHARDS} shards started on a stand-by and a maintenance of ${VMS_PER_NODE} VMs, the leader kill -9ed ${KILLS} times in a row: both end, every shard and VM has one outcome, no deposed leader's request after a new epoch`,
    { timeout: 600_000 },
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'lk-ha-kills-'));
      const sim = await processes.simulator(dir, [
        '--nodes',
        String(NODES),
        '--vms-per-node',
        String(VMS_PER_NODE),
        '--migrate-ms',
        '400',
        '--separate-hosts',
        '--tenants',
        String(TENANTS),
        '--shards-per-tenant',
        String(SHARDS_PER_TENANT),
      ]);
      const pageservers = (
        JSON.parse(readFileSync(sim.config, 'utf8')) as { plugins: { name: string; options: { pageservers?: { id: number; url: string }[] } }[] }
      ).plugins.find((p) => p.name === 'pageserver')!.options.pageservers!;
      // The drain and the maintenance run side by side (storage:S3's limit raised to two); one cut-over
      // in flight at a time so that steps end one by one and the ten kills fall over the whole run.
      const config = HaProcesses.config(dir, sim.config, {
        ha: HA,
        operations: { maxOutboundMigrationsPerNode: 2, maxConcurrentOperations: 2, maxConcurrentMoves: 1 },
      });
      const url = await createPostgresDatabase();
      const db = await sql(url);
      const replicas: Replica[] = [];
      let started = 0;
      const replica = () => processes.replica(`r${++started}`, config, dir, url);
      for (let i = 0; i < 3; i++) replicas.push(await replica());
      let { leader, epoch } = await leaderOf(replicas);
      const standby = replicas.find((r) => r !== leader)!;
      await nodesActive(standby, ['1', '2', '3', 'node-1', 'node-2', 'node-3']);
      // Nothing runs before the drain (a failover of a pageserver the first leader found OFFLINE
      // before its first heartbeat round would; ha:L8 and neon:H4 now run that round first).
      await until(
        async () => ((await db.query(`SELECT 1 FROM "Operation" WHERE "state" IN ('RUNNING', 'CANCELLING', 'PAUSED')`)).rowCount === 0 ? true : undefined),
        'no operation running before the drain',
        90_000,
        100,
      );
      const drainId = await start(standby, 'startNodeDrain', '1');
      const maintenanceId = await start(standby, 'enableMaintenanceMode', 'node-1');
      const ids = [drainId, maintenanceId];

      const random = createPrng(SEED);
      const killed: { pid: number; epoch: number; endedSteps: number }[] = [];
      let lastKill = 0;
      let replacement: Promise<unknown> = Promise.resolve();
      for (let kill = 1; kill <= KILLS; kill++) {
        // The replacement started after the last kill is up first: two or three replicas stay alive.
        // Cut-overs were held meanwhile (the VM migrations were not: eight steps only).
        await replacement;
        await holdCutOvers(pageservers, false);
        // Kill once 1–4 more steps have ended since the last kill (a state, not a time).
        const more = 1 + Math.floor(random() * 4);
        const ended = await until(
          async () => {
            const n = await endedSteps(db, ids);
            if (!(await states(db, ids)).some(unended))
              throw new Error(`both operations ended after ${kill - 1} kills (${n} steps): too little work for ${KILLS} kills (${JSON.stringify(killed)})`);
            return n >= lastKill + more ? n : undefined;
          },
          `${more} more steps ended before kill ${kill}`,
          180_000,
          20,
        );
        lastKill = ended;
        await holdCutOvers(pageservers, true);
        // The leader now (under load the lease may have changed hands since the last take-over).
        ({ leader, epoch } = await leaderOf(replicas));
        killed.push({ pid: leader.child.pid!, epoch, endedSteps: ended });
        leader.child.kill('SIGKILL');
        await leader.exited;
        // A replacement, so that two or three replicas stay alive; it may be the one that takes over.
        replacement = replica().then((r) => replicas.push(r));
        // Awaited before the next kill; a test that fails meanwhile must not leave it unhandled.
        replacement.catch(() => {});
        ({ leader, epoch } = await leaderOf(replicas, epoch));
      }
      await replacement;
      await holdCutOvers(pageservers, false);
      expect(killed).toHaveLength(KILLS);
      expect(new Set(killed.map((k) => k.pid)).size).toBe(KILLS);

      const ended = await until(
        async () => {
          const s = await states(db, ids);
          return s.some(unended) ? undefined : s;
        },
        'the drain and the maintenance to end',
        300_000,
        100,
      ).catch(async (e: unknown) => {
        const ops = await db.query(`SELECT "kind", "nodeId", "state", "counts", "waitingOn", "error" FROM "Operation" ORDER BY "createdAt"`);
        const vmims = (await sim.get('/apis/kubevirt.io/v1/namespaces/default/virtualmachineinstancemigrations')) as { items: unknown[] };
        const stuck = (
          (await sim.get('/apis/kubevirt.io/v1/namespaces/default/virtualmachineinstances')) as { items: { metadata: { name: string }; status: unknown }[] }
        ).items.filter((v) => JSON.stringify(v.status).includes('node-1'));
        const st = await db.query(`SELECT "operationId", "state", "reason", count(*) FROM "OperationStep" GROUP BY 1, 2, 3`);
        const logs = replicas
          .filter((r) => r.child.exitCode === null && r.child.signalCode === null)
          .map(
            (r) =>
              `${r.name}: ${r
                .stdout()
                .split('\n')
                .filter((l) => /"level":(40|50)/.test(l))
                .slice(-15)
                .join('\n')}`,
          );
        throw new Error(
          `${String(e)}\n${JSON.stringify(vmims.items)}\n${JSON.stringify(stuck)}\n${JSON.stringify(ops.rows, null, 1)}\n${JSON.stringify(st.rows)}\n${logs.join('\n')}`,
        );
      });
      expect(ended).toEqual(['SUCCEEDED', 'SUCCEEDED']);

      // Every step has exactly one row, in a terminal state: every shard and VM one outcome.
      const { rows: steps } = await db.query<StepRow>(
        `SELECT "operationId", "workloadKind", "workloadId", "state", "reason", "error" FROM "OperationStep" WHERE "operationId" = ANY($1)`,
        [ids],
      );
      const drainSteps = steps.filter((s) => s.operationId === drainId);
      const vmSteps = steps.filter((s) => s.operationId === maintenanceId && s.workloadKind === 'vm');
      expect(drainSteps).toHaveLength(DRAINED_SHARDS);
      expect(new Set(drainSteps.map((s) => s.workloadId)).size).toBe(DRAINED_SHARDS);
      expect(drainSteps.filter((s) => s.state !== 'MOVED').map((s) => `${s.workloadId} ${s.state} ${s.reason}: ${s.error}`)).toEqual([]);
      expect(vmSteps).toHaveLength(VMS_PER_NODE);
      expect(new Set(vmSteps.map((s) => s.workloadId)).size).toBe(VMS_PER_NODE);
      expect(vmSteps.filter((s) => s.state !== 'MOVED').map((s) => `${s.workloadId} ${s.state} ${s.reason}: ${s.error}`)).toEqual([]);
      expect(steps.filter((s) => !TERMINAL_STEP_STATES.includes(s.state))).toEqual([]);

      // Every shard attached exactly once, by the pageservers' own account, none on the drained pageserver.
      // A cut-over the last leader finished after a take-over leaves the origin's stale attachment to
      // the reconciler (neon:C9): wait for the pageservers to settle (a state), then every shard once.
      const attached = await until(
        async () => {
          const a = await attachments(pageservers);
          return [...a.values()].every((on) => on.length === 1) ? a : undefined;
        },
        'every shard attached once on the pageservers',
        120_000,
        250,
      ).catch(() => attachments(pageservers));
      expect(attached.size).toBe(TENANTS * SHARDS_PER_TENANT);
      expect([...attached].filter(([, on]) => on.length !== 1)).toEqual([]);
      expect([...attached].filter(([, on]) => on.includes(1))).toEqual([]);
      for (const s of drainSteps) expect(attached.get(s.workloadId), s.workloadId).toBeDefined();

      // Every VM has one VMI, running, none on the node in maintenance.
      const vmis = (await sim.get('/apis/kubevirt.io/v1/namespaces/default/virtualmachineinstances')) as {
        items: { metadata: { name: string }; status: { nodeName: string; phase: string } }[];
      };
      const names = vmis.items.map((v) => v.metadata.name);
      expect(new Set(names).size).toBe(names.length);
      expect(names).toHaveLength(NODES * VMS_PER_NODE);
      expect(vmis.items.filter((v) => v.status.nodeName === 'node-1')).toEqual([]);
      expect(vmis.items.filter((v) => v.status.phase !== 'Running')).toEqual([]);

      // The lease is at the last leader's epoch, one more than each killed leader's at least.
      const { rows: lease } = await db.query<{ epoch: number }>(`SELECT "epoch" FROM "LeaderLease"`);
      expect(lease[0]!.epoch).toBe(epoch);
      expect(killed.every((k, i) => k.epoch < (killed[i + 1]?.epoch ?? epoch))).toBe(true);

      // Who sent each write to the API server, in arrival order (the simulator's record): every write
      // names a leader at an epoch; the epochs never go down (no request of a deposed leader after a
      // new epoch began) and each epoch is one process's.
      const sent = (await writes(sim)).map(senderOf);
      expect(sent.length).toBeGreaterThan(0);
      expect(sent.filter((s) => s === null)).toEqual([]);
      const epochs = sent.map((s) => s!.epoch);
      expect(epochs).toEqual([...epochs].sort((a, b) => a - b));
      const pidsOf = new Map<number, Set<number>>();
      for (const s of sent) pidsOf.set(s!.epoch, (pidsOf.get(s!.epoch) ?? new Set()).add(s!.pid));
      expect([...pidsOf].filter(([, pids]) => pids.size !== 1)).toEqual([]);
      // A killed leader sent nothing at an epoch above the one it held when it was killed.
      for (const k of killed) expect(sent.filter((s) => s!.pid === k.pid && s!.epoch > k.epoch)).toEqual([]);
    },
  );
});
