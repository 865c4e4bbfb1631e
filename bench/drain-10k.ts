/**
 * Drain throughput: one node holding 10 000 attached shards, their warm secondaries
 * spread over the other 9 nodes of a 10-node cluster, drained at maxConcurrentMoves = 64
 * with a simulated cut-over latency of 20 ms, on the real clock and a real SQLite file.
 * The figure is wall time over the ideal ⌈N / 64⌉ × 20 ms: what the engine's planning,
 * persistence (group-committed steps and events) and scheduling add to the moves
 * themselves. Peak RSS of the process is reported beside it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSimulatedCluster, type TopologySpec } from '../plugins/fake/index.ts';
import { createLogger } from '../src/logger.ts';
import { DEFAULT_CONFIG } from '../src/config/defaults.ts';
import { buildApp } from '../src/server.ts';
import { openDatabase } from '../src/store/database.ts';
import type { Benchmark, BenchReport } from './benchmark.ts';

export const SHARDS = 10_000;
const NODES = 10;
export const WIDTH = 64;
export const LATENCY_MS = 20;
export const GOAL = 1.15;

/** A small node drained first, so one-time costs (JIT, query compilation) are not counted. */
const WARMUP_NODE = String(NODES + 1);
const WARMUP_SHARDS = 2 * WIDTH;

function topology(): TopologySpec {
  const nodes = Array.from({ length: NODES + 1 }, (_, i) => ({ id: String(i + 1), zone: 'zone-a' }));
  const warmup = Array.from({ length: WARMUP_SHARDS }, (_, i) => ({
    tenantId: 'warmup',
    shardNumber: i,
    shardCount: WARMUP_SHARDS,
    attachedNodeId: WARMUP_NODE,
    secondaries: [{ nodeId: String(2 + (i % (NODES - 1))) }],
    sizeBytes: 1024,
  }));
  const shards = Array.from({ length: SHARDS }, (_, i) => ({
    tenantId: `tenant${String(Math.floor(i / 100)).padStart(4, '0')}`,
    shardNumber: i % 100,
    shardCount: 100,
    attachedNodeId: '1',
    secondaries: [{ nodeId: String(2 + (i % (NODES - 1))) }],
    sizeBytes: 1024,
  }));
  return { nodes, shards: [...warmup, ...shards] };
}

/** One measured drain; on a fresh SQLite file, or on the empty database `databaseUrl` names (PostgreSQL: bench/drain-10k-postgresql.ts). */
export async function drainOnce(databaseUrl?: string): Promise<{ wallMs: number; moved: number; peakRss: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'lockkeeper-drain-bench-'));
  const db = await openDatabase({ url: databaseUrl ?? `file:${join(dir, 'bench.db')}` });
  const cluster = createSimulatedCluster({ topology: topology(), latenciesMs: { cutOver: LATENCY_MS } });
  const app = buildApp({
    backend: cluster,
    log: createLogger('warn'),
    prisma: db.prisma,
    hotPath: db.hotPath,
    config: { ...DEFAULT_CONFIG, operations: { ...DEFAULT_CONFIG.operations, maxConcurrentMoves: WIDTH } },
    onClose: () => db.close(),
  });
  await app.ready();
  let peakRss = process.memoryUsage().rss;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 20);
  try {
    await app.storage.startDrain(WARMUP_NODE, { actor: 'bench', reason: 'warm-up' });
    await app.storage.settled(WARMUP_NODE);
    const started = performance.now();
    const op = await app.storage.startDrain('1', { actor: 'bench', reason: null });
    await app.storage.settled('1');
    const wallMs = performance.now() - started;
    const done = await app.operations.getOperation(op.id);
    if (done?.state !== 'SUCCEEDED' || done.counts.moved !== SHARDS) throw new Error(`drain did not move every shard: ${JSON.stringify(done)}`);
    const rows = await db.prisma.operationStep.count({ where: { operationId: op.id, state: 'MOVED' } });
    if (rows !== SHARDS) throw new Error(`only ${rows} steps persisted as MOVED`);
    return { wallMs, moved: done.counts.moved, peakRss: Math.max(peakRss, process.memoryUsage().rss) };
  } finally {
    clearInterval(sampler);
    await app.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export const drain10k: Benchmark = {
  name: 'drain-10k',
  title: `Drain of ${SHARDS.toLocaleString('en')} shards at maxConcurrentMoves = ${WIDTH} and ${LATENCY_MS} ms cut-overs, wall time over the ideal`,
  async run(options, progress): Promise<BenchReport> {
    const ideal = Math.ceil(SHARDS / WIDTH) * LATENCY_MS;
    const runs = [];
    for (let i = 0; i < options.rounds; i++) {
      const r = await drainOnce();
      progress(`  run ${i + 1}: ${r.wallMs.toFixed(0)} ms (${(r.wallMs / ideal).toFixed(3)} × ideal), peak RSS ${(r.peakRss / 1024 ** 2).toFixed(0)} MiB`);
      runs.push(r);
    }
    const best = Math.min(...runs.map((r) => r.wallMs));
    const ratio = best / ideal;
    const rss = Math.max(...runs.map((r) => r.peakRss)) / 1024 ** 2;
    const verdict = ratio <= GOAL ? `meets the goal of ≤ ${GOAL}` : `**misses the goal of ≤ ${GOAL}**`;
    return {
      summary: `drain-10k: ${best.toFixed(0)} ms, ${ratio.toFixed(3)} × ideal (${verdict}), peak RSS ${rss.toFixed(0)} MiB`,
      markdown: [
        `Cluster: ${NODES} nodes; node 1 holds all ${SHARDS.toLocaleString('en')} attached shards, each with one warm secondary on one of nodes 2–${NODES} (round robin).`,
        `Before the measured drain, the same process drains a small extra node (${WARMUP_SHARDS} shards) once, so one-time costs (JIT, Prisma query compilation) are not counted; the measured drain starts from a warm gateway, as in production.`,
        `The drain runs through the full engine (plan persisted in SQLite, steps and events group-committed, warmth checked per shard) over the simulated cluster on the real clock.`,
        `Ideal: ⌈${SHARDS} / ${WIDTH}⌉ × ${LATENCY_MS} ms = ${ideal} ms.`,
        '',
        '| run | wall time ms | × ideal | peak RSS MiB |',
        '|---:|---:|---:|---:|',
        ...runs.map((r, i) => `| ${i + 1} | ${r.wallMs.toFixed(0)} | ${(r.wallMs / ideal).toFixed(3)} | ${(r.peakRss / 1024 ** 2).toFixed(0)} |`),
        '',
        `**Best: ${ratio.toFixed(3)} × ideal** (${verdict}); peak RSS ${rss.toFixed(0)} MiB (whole benchmark process).`,
        '',
        'Where the time above the ideal went when last profiled (timings around the engine, `--cpu-prof`): about 0.35 s before the first move',
        '(planning, and one transaction writing the operation, its 10 000 planned steps and the policy change; the steps go in as one',
        'JSON parameter through `json_each`, since Prisma `createMany` took 3 s and 300 MiB), and about 0.25 s spread over the run',
        '(each 20 ms cut-over completes in ~21.5 ms: event-loop time of group commits every 50 ms and of the next move’s checks).',
      ].join('\n'),
    };
  },
};
