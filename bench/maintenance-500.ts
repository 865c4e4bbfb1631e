/**
 * Maintenance throughput: enable VM maintenance on a node running 500 migratable VMs, with
 * KubeVirt's default migration limits (5 in flight per cluster, 2 outbound per node) and a
 * simulated live-migration latency of 200 ms, on the real clock and a real SQLite file.
 * The figure is wall time from the enable request to phase COMPLETED over the ideal
 * ⌈500 / 2⌉ × 200 ms (the per-node outbound limit binds): what validation, planning,
 * persistence and the run's scheduling add to the migrations themselves.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSimulatedCluster, type TopologySpec } from '../plugins/fake/index.ts';
import type { ClusterBackend } from '../src/cluster/backend.ts';
import { createLogger } from '../src/logger.ts';
import { DEFAULT_CONFIG } from '../src/config/defaults.ts';
import { buildApp } from '../src/server.ts';
import { openDatabase } from '../src/store/database.ts';
import type { Benchmark, BenchReport } from './benchmark.ts';

const VMS = 500;
const NODES = 4;
const LATENCY_MS = 200;
const PER_CLUSTER = 5;
const PER_NODE = 2;
const GOAL = 1.15;

function topology(): TopologySpec {
  const nodes = Array.from({ length: NODES }, (_, i) => ({ id: String(i + 1), roles: ['worker'] }));
  const vms = Array.from({ length: VMS }, (_, i) => ({
    namespace: `ns-${i % 5}`,
    name: `vm-${String(i).padStart(3, '0')}`,
    nodeId: '1',
    volumes: [{ name: 'rootdisk', replicas: [{ nodeId: '1' }, { nodeId: String(2 + (i % (NODES - 1))) }] }],
  }));
  return { nodes, vms };
}

interface Run {
  wallMs: number;
  /** Enable request → first migration asked of the backend (validation, plan, persistence). */
  firstMigrationMs: number;
  /** Last migration done → phase COMPLETED (the run noticing the node is empty, finishing). */
  tailMs: number;
  /** Mean time from one migration's end to the next one leaving the node (slot hand-over). */
  handOverMs: number;
  /** Mean duration of one migration as the engine sees it (the simulated 200 ms plus timer lateness). */
  migrationMs: number;
  peakOutbound: number;
  peakRss: number;
}

/** Counts migrations in flight and stamps them, around the simulated backend. */
function instrument(backend: ClusterBackend) {
  const stats = { inFlight: 0, peak: 0, starts: [] as number[], ends: [] as number[], busyMs: 0 };
  const wrapped = new Proxy(backend, {
    get(target, prop) {
      if (prop === 'migrateVm') {
        return async (...args: Parameters<ClusterBackend['migrateVm']>) => {
          const at = performance.now();
          stats.starts.push(at);
          stats.peak = Math.max(stats.peak, ++stats.inFlight);
          try {
            return await target.migrateVm(...args);
          } finally {
            stats.inFlight--;
            const end = performance.now();
            stats.ends.push(end);
            stats.busyMs += end - at;
          }
        };
      }
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { wrapped, stats };
}

async function once(): Promise<Run> {
  const dir = mkdtempSync(join(tmpdir(), 'lockkeeper-maintenance-bench-'));
  const db = await openDatabase({ url: `file:${join(dir, 'bench.db')}` });
  const cluster = createSimulatedCluster({ topology: topology(), latenciesMs: { migrate: LATENCY_MS, cordon: 0 } });
  const { wrapped, stats } = instrument(cluster);
  const app = buildApp({
    backend: wrapped,
    log: createLogger('warn'),
    prisma: db.prisma,
    hotPath: db.hotPath,
    config: {
      ...DEFAULT_CONFIG,
      operations: { ...DEFAULT_CONFIG.operations, maxParallelMigrations: PER_CLUSTER, maxOutboundMigrationsPerNode: PER_NODE },
    },
    onClose: () => db.close(),
  });
  await app.ready();
  let peakRss = process.memoryUsage().rss;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 50);
  try {
    const started = performance.now();
    const op = await app.maintenance.enable('1', { force: false }, { actor: 'bench', reason: null });
    for (;;) {
      const phase = app.maintenance.stateOf('1')?.phase;
      if (phase === 'COMPLETED') break;
      if (phase !== 'DRAINING' && phase !== 'EVACUATING') throw new Error(`maintenance ended in phase ${phase ?? 'none'}`);
      await new Promise((r) => setTimeout(r, 2));
    }
    const completedAt = performance.now();
    const wallMs = completedAt - started;

    // Wrong answers fail the benchmark: every VM migrated once, within the limits, and recorded.
    const done = await app.operations.getOperation(op.id);
    if (done?.state !== 'SUCCEEDED' || done.counts.moved !== VMS) throw new Error(`maintenance did not migrate every VM: ${JSON.stringify(done)}`);
    const rows = await db.prisma.operationStep.count({ where: { operationId: op.id, state: 'MOVED' } });
    if (rows !== VMS) throw new Error(`only ${rows} steps persisted as MOVED`);
    const left = (await cluster.listVms({ nodeId: '1' })).length;
    if (left !== 0) throw new Error(`${left} VMs still on node 1`);
    if (stats.starts.length !== VMS) throw new Error(`${stats.starts.length} migrations for ${VMS} VMs`);
    if (stats.peak > PER_NODE) throw new Error(`${stats.peak} migrations in flight from one node (limit ${PER_NODE})`);

    // Hand-over: each start after the first PER_NODE waits for an end; its delay is start − that end.
    const ends = [...stats.ends].sort((a, b) => a - b);
    const starts = [...stats.starts].sort((a, b) => a - b);
    let handOver = 0;
    for (let i = PER_NODE; i < starts.length; i++) handOver += starts[i]! - ends[i - PER_NODE]!;
    return {
      wallMs,
      firstMigrationMs: starts[0]! - started,
      tailMs: completedAt - ends[ends.length - 1]!,
      handOverMs: handOver / (starts.length - PER_NODE),
      migrationMs: stats.busyMs / stats.starts.length,
      peakOutbound: stats.peak,
      peakRss: Math.max(peakRss, process.memoryUsage().rss),
    };
  } finally {
    clearInterval(sampler);
    await app.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export const maintenance500: Benchmark = {
  name: 'maintenance-500',
  title: `VM maintenance of a node with ${VMS} migratable VMs at ${LATENCY_MS} ms migrations, ${PER_CLUSTER} per cluster and ${PER_NODE} outbound per node, wall time over the ideal`,
  async run(options, progress): Promise<BenchReport> {
    const ideal = Math.ceil(VMS / PER_NODE) * LATENCY_MS;
    const runs: Run[] = [];
    for (let i = 0; i < options.rounds; i++) {
      const r = await once();
      progress(
        `  run ${i + 1}: ${r.wallMs.toFixed(0)} ms (${(r.wallMs / ideal).toFixed(3)} × ideal); first migration after ${r.firstMigrationMs.toFixed(0)} ms, ` +
          `migration ${r.migrationMs.toFixed(2)} ms, slot hand-over ${r.handOverMs.toFixed(2)} ms, tail ${r.tailMs.toFixed(0)} ms, peak RSS ${(r.peakRss / 1024 ** 2).toFixed(0)} MiB`,
      );
      runs.push(r);
    }
    const best = Math.min(...runs.map((r) => r.wallMs));
    const ratio = best / ideal;
    const rss = Math.max(...runs.map((r) => r.peakRss)) / 1024 ** 2;
    const verdict = ratio <= GOAL ? `meets the goal of ≤ ${GOAL}` : `**misses the goal of ≤ ${GOAL}**`;
    return {
      summary: `maintenance-500: ${best.toFixed(0)} ms, ${ratio.toFixed(3)} × ideal (${verdict}), peak RSS ${rss.toFixed(0)} MiB`,
      markdown: [
        `Cluster: ${NODES} worker nodes; node 1 runs all ${VMS} VMs (unlabelled, so Migrate; each with a volume replicated on node 1 and one other node), nothing blocks.`,
        `Enable goes through the full engine (validation, plan, operation and ${VMS} steps persisted in SQLite, steps and events group-committed) over the simulated cluster on the real clock,`,
        `with \`maxParallelMigrations: ${PER_CLUSTER}\` and \`maxOutboundMigrationsPerNode: ${PER_NODE}\` (KubeVirt's defaults); the clock stops when the node's phase is COMPLETED.`,
        `Ideal: ⌈${VMS} / ${PER_NODE}⌉ × ${LATENCY_MS} ms = ${ideal} ms. Checked: operation SUCCEEDED with ${VMS} steps MOVED in the database, node 1 empty, one migration per VM, never more than ${PER_NODE} in flight.`,
        '',
        '| run | wall time ms | × ideal | enable → first migration ms | one migration ms (mean) | slot hand-over ms (mean) | last migration → COMPLETED ms | peak outbound | peak RSS MiB |',
        '|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
        ...runs.map(
          (r, i) =>
            `| ${i + 1} | ${r.wallMs.toFixed(0)} | ${(r.wallMs / ideal).toFixed(3)} | ${r.firstMigrationMs.toFixed(0)} | ${r.migrationMs.toFixed(2)} | ${r.handOverMs.toFixed(2)} | ${r.tailMs.toFixed(0)} | ${r.peakOutbound} | ${(r.peakRss / 1024 ** 2).toFixed(0)} |`,
        ),
        '',
        `**Best: ${ratio.toFixed(3)} × ideal** (${verdict}); peak RSS ${rss.toFixed(0)} MiB (whole benchmark process).`,
        '',
        `Where the time above the ideal goes (${ideal / LATENCY_MS} rounds of 2 migrations): before the first migration (validation, plan, one transaction for the`,
        'operation and its steps); per round, the simulated migration overrunning its 200 ms (timer lateness) plus the hand-over of the',
        'freed slot to the next VM (limiter, step bookkeeping, backend read); and after the last migration, the run seeing the node empty',
        'and committing COMPLETED. Columns 4–7 measure each part.',
      ].join('\n'),
    };
  },
};
