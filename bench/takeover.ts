/**
 * Take-over time (high-availability.md §8): `lockkeeper simulator` and two replicas of
 * `lockkeeper serve` on PostgreSQL at the default leases (ttl 10 s, renew 2 s) run a long VM
 * maintenance; ten times the leader is killed with SIGKILL at a random instant and a
 * replacement replica started. Measured per kill: from the kill to the new leader's first
 * action, i.e. the first event row committed after the kill (every step the resumed run
 * takes is one). Goal: median and max ≤ leaseTtlMs + leaseRenewMs. The PostgreSQL server is
 * the one `LOCKKEEPER_BENCH_POSTGRES_URL` names, else a throw-away one.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { postGraphQL, until } from '../test/support/child-server.ts';
import { HaProcesses, leaderOf } from '../test/support/ha-processes.ts';
import { startThrowawayPostgres } from '../test/support/postgres-server.ts';
import type { Benchmark, BenchReport } from './benchmark.ts';

const KILLS = 10;
const TTL_MS = 10_000;
const RENEW_MS = 2000;

async function freshDatabase(serverUrl: string): Promise<string> {
  const name = `lk_takeover_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`).finally(() => admin.end());
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

export const takeover: Benchmark = {
  name: 'takeover',
  title: `Take-over from kill -9 of the leader to the new leader's first action, median and max over ${KILLS} kills (goal ≤ ${TTL_MS + RENEW_MS} ms)`,
  async run(_options, progress): Promise<BenchReport> {
    const given = process.env.LOCKKEEPER_BENCH_POSTGRES_URL;
    const server = given ? null : await startThrowawayPostgres();
    const processes = new HaProcesses();
    const databaseUrl = await freshDatabase(given ?? server!.url);
    const db = new pg.Client({ connectionString: databaseUrl });
    const figures: number[] = [];
    try {
      await db.connect();
      const dir = mkdtempSync(join(tmpdir(), 'lk-bench-takeover-'));
      // Long enough for ten take-overs: 200 VMs on node-1, two migrations at a time, 3 s each.
      const sim = await processes.simulator(dir, ['--nodes', '3', '--vms-per-node', '200', '--migrate-ms', '3000']);
      const config = HaProcesses.config(dir, sim.config, {
        ha: { leaseTtlMs: TTL_MS, leaseRenewMs: RENEW_MS },
        operations: { maxOutboundMigrationsPerNode: 2 },
      });
      const replicas = [await processes.replica('r1', config, dir, databaseUrl), await processes.replica('r2', config, dir, databaseUrl)];
      let { leader, epoch } = await leaderOf(replicas);
      const data = await postGraphQL(leader.url, `mutation { enableMaintenanceMode(nodeId: "node-1") { __typename ... on Operation { id } } }`);
      if (data.enableMaintenanceMode.__typename !== 'Operation') throw new Error(`maintenance did not start: ${JSON.stringify(data)}`);
      const maxSeq = async () => Number((await db.query(`SELECT coalesce(max("seq"), 0) AS s FROM "Event"`)).rows[0].s);
      for (let k = 1; k <= KILLS; k++) {
        await new Promise((resolve) => setTimeout(resolve, 500 + Math.random() * RENEW_MS));
        const seqAtKill = await maxSeq();
        const killedAt = performance.now();
        leader.child.kill('SIGKILL');
        await until(async () => ((await maxSeq()) > seqAtKill ? true : undefined), 'the new leader’s first action', 120_000, 10);
        const ms = performance.now() - killedAt;
        figures.push(ms);
        progress(`  kill ${k}: ${ms.toFixed(0)} ms`);
        ({ leader, epoch } = await leaderOf(replicas, epoch));
        replicas.push(await processes.replica(`r${replicas.length + 1}`, config, dir, databaseUrl));
      }
    } finally {
      await processes.stop();
      await db.end().catch(() => {});
      server?.stop();
    }
    const sorted = [...figures].sort((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)]!;
    const max = sorted.at(-1)!;
    const goal = TTL_MS + RENEW_MS;
    const verdict = max <= goal ? `meets the goal of ≤ ${goal} ms` : `**misses the goal of ≤ ${goal} ms**`;
    return {
      summary: `takeover: median ${median.toFixed(0)} ms, max ${max.toFixed(0)} ms (${verdict})`,
      markdown: [
        `Two replicas (plus a replacement after each kill) on PostgreSQL with the simulator process, leases ttl ${TTL_MS} ms / renew ${RENEW_MS} ms, a VM maintenance running throughout.`,
        'Per kill: from `SIGKILL` of the leader to the first event row committed after it (the resumed run’s first step), polled every 10 ms.',
        '',
        '| kill | ms |',
        '|---:|---:|',
        ...figures.map((f, i) => `| ${i + 1} | ${f.toFixed(0)} |`),
        '',
        `**Median ${median.toFixed(0)} ms, max ${max.toFixed(0)} ms** (${verdict}).`,
      ].join('\n'),
    };
  },
};
