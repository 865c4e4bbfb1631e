/**
 * One drain through the full engine, as the drain benchmarks run it: a 10-node cluster
 * whose node 1 holds every measured shard (each with one warm secondary on nodes 2–10,
 * round robin), a real SQLite file, the simulated cluster on the real clock. A small
 * extra node is drained first in the same process, so one-time costs (JIT, Prisma query
 * compilation) are not counted. After the drain it checks what a benchmark must not
 * trade away: the operation SUCCEEDED, every step is persisted as MOVED, every
 * SHARD_MOVED event is in the event log, and every step change reached the progress
 * stream subscribers read.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createSimulatedCluster, type TopologySpec } from '../plugins/fake/index.ts';
import { DEFAULT_CONFIG } from '../src/config/defaults.ts';
import { createLogger } from '../src/logger.ts';
import { buildApp } from '../src/server.ts';
import { openDatabase } from '../src/store/database.ts';

export const DRAIN_NODES = 10;
/** Shards on the warm-up node: twice the default width, so the pool fills and drains once. */
export const WARMUP_SHARDS = 128;
const WARMUP_NODE = String(DRAIN_NODES + 1);

function drainTopology(shards: number): TopologySpec {
  const nodes = Array.from({ length: DRAIN_NODES + 1 }, (_, i) => ({ id: String(i + 1), zone: 'zone-a' }));
  const secondary = (i: number) => [{ nodeId: String(2 + (i % (DRAIN_NODES - 1))) }];
  const warmup = Array.from({ length: WARMUP_SHARDS }, (_, i) => ({
    tenantId: 'warmup',
    shardNumber: i,
    shardCount: WARMUP_SHARDS,
    attachedNodeId: WARMUP_NODE,
    secondaries: secondary(i),
    sizeBytes: 1024,
  }));
  const measured = Array.from({ length: shards }, (_, i) => ({
    tenantId: `tenant${String(Math.floor(i / 100)).padStart(4, '0')}`,
    shardNumber: i % 100,
    shardCount: 100,
    attachedNodeId: '1',
    secondaries: secondary(i),
    sizeBytes: 1024,
  }));
  return { nodes, shards: [...warmup, ...measured] };
}

export interface DrainRun {
  wallMs: number;
  /** Process CPU time (user + system) from the start call to the drain's end, in µs. */
  cpuUs: number;
  moved: number;
  peakRss: number;
}

/** One measured drain; on a fresh SQLite file, or on the empty database `databaseUrl` names (PostgreSQL: bench/drain-10k-postgresql.ts). */
export async function drainOnce(options: { shards: number; width: number; latencyMs: number; databaseUrl?: string }): Promise<DrainRun> {
  const dir = mkdtempSync(join(tmpdir(), 'lockkeeper-drain-bench-'));
  const db = await openDatabase({ url: options.databaseUrl ?? `file:${join(dir, 'bench.db')}` });
  const cluster = createSimulatedCluster({ topology: drainTopology(options.shards), latenciesMs: { cutOver: options.latencyMs } });
  const app = buildApp({
    backend: cluster,
    log: createLogger('warn'),
    prisma: db.prisma,
    hotPath: db.hotPath,
    config: { ...DEFAULT_CONFIG, operations: { ...DEFAULT_CONFIG.operations, maxConcurrentMoves: options.width } },
    onClose: () => db.close(),
  });
  await app.ready();
  try {
    await app.storage.startDrain(WARMUP_NODE, { actor: 'bench', reason: 'warm-up' });
    await app.storage.settled(WARMUP_NODE);
    // What earlier runs (and the set-up above) left is collected now, not charged to this drain's CPU.
    collectGarbage();
    const profile = await startProfile();
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    const op = await app.storage.startDrain('1', { actor: 'bench', reason: null });
    // What a subscriber of operationProgress sees: every step that changed (the first publish comes after a flush).
    const published = new Set<string>();
    const stopListening = listenToProgress(app.bus, op.id, published);
    await app.storage.settled('1');
    const wallMs = performance.now() - started;
    const cpu = process.cpuUsage(cpuBefore);
    await profile?.();
    stopListening();
    const done = await app.operations.getOperation(op.id);
    if (done?.state !== 'SUCCEEDED' || done.counts.moved !== options.shards) throw new Error(`drain did not move every shard: ${JSON.stringify(done)}`);
    const rows = await db.prisma.operationStep.count({ where: { operationId: op.id, state: 'MOVED' } });
    if (rows !== options.shards) throw new Error(`only ${rows} steps persisted as MOVED`);
    const events = await db.prisma.event.count({ where: { operationId: op.id, type: 'SHARD_MOVED' } });
    if (events !== options.shards) throw new Error(`only ${events} SHARD_MOVED events in the event log`);
    if (published.size !== options.shards) throw new Error(`only ${published.size} moved steps published on operationProgress`);
    // The kernel's high-water mark: sampling RSS on a timer would cost CPU the figure counts.
    return { wallMs, cpuUs: cpu.user + cpu.system, moved: done.counts.moved, peakRss: process.resourceUsage().maxRSS * 1024 };
  } finally {
    await app.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A full garbage collection (the JavaScript engine's gc(), reached without --expose-gc on the command line). */
function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

/** With LOCKKEEPER_BENCH_PROFILE=FILE, a CPU profile (.cpuprofile) of the measured drain only (warm-up and checks left out) is written to FILE. */
async function startProfile(): Promise<(() => Promise<void>) | null> {
  const file = process.env.LOCKKEEPER_BENCH_PROFILE;
  if (!file) return null;
  const { Session } = await import('node:inspector/promises');
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return async () => {
    const { profile } = await session.post('Profiler.stop');
    writeFileSync(file, JSON.stringify(profile));
    session.disconnect();
  };
}

function listenToProgress(bus: ReturnType<typeof buildApp>['bus'], operationId: string, moved: Set<string>): () => void {
  const iterator = bus.subscribe('operationProgress', operationId)[Symbol.asyncIterator]();
  let stopped = false;
  void (async () => {
    while (!stopped) {
      const next = await iterator.next();
      if (next.done) return;
      for (const s of next.value.steps) if (s.state === 'MOVED') moved.add(s.workloadId);
    }
  })();
  return () => {
    stopped = true;
    void iterator.return?.();
  };
}
