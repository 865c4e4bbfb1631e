/**
 * drain-10k on PostgreSQL (high-availability.md §8): the same drain as drain-10k.ts, with the
 * gateway's database on a real PostgreSQL server — the one `LOCKKEEPER_BENCH_POSTGRES_URL`
 * names (a fresh database is created on it per run), else a throw-away server started for
 * the benchmark (test/support/postgres-server.ts) and removed after. Goal: wall / ideal ≤ 1.15.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { startThrowawayPostgres } from '../test/support/postgres-server.ts';
import type { Benchmark, BenchReport } from './benchmark.ts';
import { GOAL, LATENCY_MS, SHARDS, WIDTH } from './drain-10k.ts';
import { drainOnce } from './drain-harness.ts';

async function freshDatabase(serverUrl: string): Promise<string> {
  const name = `lk_bench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

export const drain10kPostgresql: Benchmark = {
  name: 'drain-10k-postgresql',
  title: `Drain of ${SHARDS.toLocaleString('en')} shards at maxConcurrentMoves = ${WIDTH} and ${LATENCY_MS} ms cut-overs on PostgreSQL, wall time over the ideal`,
  async run(options, progress): Promise<BenchReport> {
    const given = process.env.LOCKKEEPER_BENCH_POSTGRES_URL;
    const server = given ? null : await startThrowawayPostgres();
    const serverUrl = given ?? server!.url;
    const ideal = Math.ceil(SHARDS / WIDTH) * LATENCY_MS;
    const runs = [];
    try {
      for (let i = 0; i < options.rounds; i++) {
        const r = await drainOnce({ shards: SHARDS, width: WIDTH, latencyMs: LATENCY_MS, databaseUrl: await freshDatabase(serverUrl) });
        progress(`  run ${i + 1}: ${r.wallMs.toFixed(0)} ms (${(r.wallMs / ideal).toFixed(3)} × ideal), peak RSS ${(r.peakRss / 1024 ** 2).toFixed(0)} MiB`);
        runs.push(r);
      }
    } finally {
      server?.stop();
    }
    const best = Math.min(...runs.map((r) => r.wallMs));
    const ratio = best / ideal;
    const verdict = ratio <= GOAL ? `meets the goal of ≤ ${GOAL}` : `**misses the goal of ≤ ${GOAL}**`;
    return {
      summary: `drain-10k-postgresql: ${best.toFixed(0)} ms, ${ratio.toFixed(3)} × ideal (${verdict})`,
      markdown: [
        `As drain-10k, with the gateway's database on PostgreSQL (${given ? 'the server LOCKKEEPER_BENCH_POSTGRES_URL names' : 'a throw-away local server, fsync off'}); a fresh database per run.`,
        `Ideal: ⌈${SHARDS} / ${WIDTH}⌉ × ${LATENCY_MS} ms = ${ideal} ms.`,
        '',
        '| run | wall time ms | × ideal | peak RSS MiB |',
        '|---:|---:|---:|---:|',
        ...runs.map((r, i) => `| ${i + 1} | ${r.wallMs.toFixed(0)} | ${(r.wallMs / ideal).toFixed(3)} | ${(r.peakRss / 1024 ** 2).toFixed(0)} |`),
        '',
        `**Best: ${ratio.toFixed(3)} × ideal** (${verdict}).`,
      ].join('\n'),
    };
  },
};
