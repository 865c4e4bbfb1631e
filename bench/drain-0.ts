/**
 * Engine throughput: a drain of shards whose cut-overs take no time, so that the figure
 * is what the engine itself costs per move (planning, step bookkeeping, group-committed
 * steps and events in SQLite, progress published to subscribers, the simulated cluster's
 * own reads and moves): moves per second of wall time, and process CPU time per move.
 */
import type { Benchmark, BenchReport } from './benchmark.ts';
import { drainOnce, type DrainRun } from './drain-harness.ts';

const SHARDS = 20_000;
const WIDTH = 64;
/** Issue 29 point 6. */
const GOAL_MOVES_PER_S = 30_000;
const GOAL_CPU_US = 35;
/** Measured runs (issue 29: the best of at least five, after a warm-up run that is not counted). */
const MIN_RUNS = 5;

const movesPerS = (r: DrainRun) => r.moved / (r.wallMs / 1000);
const cpuPerMove = (r: DrainRun) => r.cpuUs / r.moved;

export const drain0: Benchmark = {
  name: 'drain-0',
  title: `Drain of ${SHARDS.toLocaleString('en')} shards with zero-latency cut-overs at maxConcurrentMoves = ${WIDTH}: moves/s and process CPU per move`,
  async run(options, progress): Promise<BenchReport> {
    const runs: DrainRun[] = [];
    const warm = await drainOnce({ shards: SHARDS, width: WIDTH, latencyMs: 0 });
    progress(`  warm-up (not counted): ${warm.wallMs.toFixed(0)} ms, ${movesPerS(warm).toFixed(0)} moves/s, ${cpuPerMove(warm).toFixed(1)} µs CPU/move`);
    for (let i = 0; i < Math.max(options.rounds, MIN_RUNS); i++) {
      const r = await drainOnce({ shards: SHARDS, width: WIDTH, latencyMs: 0 });
      progress(`  run ${i + 1}: ${r.wallMs.toFixed(0)} ms, ${movesPerS(r).toFixed(0)} moves/s, ${cpuPerMove(r).toFixed(1)} µs CPU/move`);
      runs.push(r);
    }
    const sorted = [...runs].sort((a, b) => movesPerS(b) - movesPerS(a));
    const best = sorted[0]!;
    const median = sorted[Math.floor(sorted.length / 2)]!;
    const bestCpu = Math.min(...runs.map(cpuPerMove));
    const meets = movesPerS(best) >= GOAL_MOVES_PER_S && bestCpu <= GOAL_CPU_US;
    const verdict = meets
      ? `meets the goals of ≥ ${GOAL_MOVES_PER_S.toLocaleString('en')} moves/s and ≤ ${GOAL_CPU_US} µs/move`
      : `**misses the goals of ≥ ${GOAL_MOVES_PER_S.toLocaleString('en')} moves/s and ≤ ${GOAL_CPU_US} µs/move**`;
    return {
      summary: `drain-0: best ${movesPerS(best).toFixed(0)} moves/s, ${bestCpu.toFixed(1)} µs CPU/move (${verdict})`,
      markdown: [
        `The cluster and checks of drain-10k (a 10-node simulated cluster, node 1 holding ${SHARDS.toLocaleString('en')} shards, a real SQLite file, a warm-up drain first), with cut-overs of 0 ms; one whole run first that is not counted (JIT), then ${MIN_RUNS} or more:`,
        "wall time and process CPU (user + system, `process.cpuUsage()`) from the `startDrain` call to the drain's end — planning, the plan's transaction, every move and the last flush included.",
        'Each run checks that the operation SUCCEEDED, that every step is persisted as MOVED, that every SHARD_MOVED event is in the event log and that every moved step reached an `operationProgress` subscriber.',
        'The simulated cluster runs in the same process, so its reads and cut-overs are in the CPU figure.',
        '',
        '| run | wall time ms | moves/s | CPU ms | CPU µs/move | peak RSS MiB |',
        '|---:|---:|---:|---:|---:|---:|',
        ...runs.map(
          (r, i) =>
            `| ${i + 1} | ${r.wallMs.toFixed(0)} | ${movesPerS(r).toFixed(0)} | ${(r.cpuUs / 1000).toFixed(0)} | ${cpuPerMove(r).toFixed(1)} | ${(r.peakRss / 1024 ** 2).toFixed(0)} |`,
        ),
        '',
        `**Best: ${movesPerS(best).toFixed(0)} moves/s, ${bestCpu.toFixed(1)} µs CPU per move; median ${movesPerS(median).toFixed(0)} moves/s** (${verdict}).`,
      ].join('\n'),
    };
  },
};
