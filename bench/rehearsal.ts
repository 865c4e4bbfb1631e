/**
 * Issue 33 point 4: how well a rehearsal predicts the rollout that follows it, and what a sample
 * costs. Case "fake-16": 16 nodes in 2 zones with 4 VMs each on the fake simulated cluster, on a
 * virtual clock. Every VM has its own typical migration time and every node its own restart
 * time; each run draws around them (log-normal, seeded), so no two runs are alike.
 *
 * 1. History: K real rollouts (MAINTENANCE, one node at a time) on one database; the history is
 *    what readHistory reads from its steps and events, nothing else.
 * 2. A blocker planted after them: a VM that cannot be live-migrated on node 16 (the last).
 * 3. The rehearsal: a snapshot of that cluster, N seeded samples through runSamples, aggregated.
 * 4. Ten real rollouts of the same snapshot with other seeds (same latency distribution), driven
 *    by the same operator the samples play (restart each handed-over node, resume a pause once
 *    scoped to its node, give up on a second pause there), measured: duration and pauses.
 * 5. Goals: actual inside p10–p90 in ≥ 7 of 10; p50 within ±10 % of the actual median; every
 *    pause in ≥ half the real runs predicted with p ≥ 0.5, every pause predicted with p ≥ 0.5
 *    seen in a real run. Drift (real runs 20 % slower than the history): error reported, no goal.
 *    Cost: CPU of one sample over the CPU of one real run of the same moves, goal ≤ 2×.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSimulatedCluster, type FakeSnapshotData, type TopologySpec } from '../plugins/fake/index.ts';
import type { BackendSnapshot } from '../src/cluster/rehearsal.ts';
import { VirtualClock } from '../src/cluster/virtual-clock.ts';
import { DEFAULT_CONFIG } from '../src/config/defaults.ts';
import { createPrng } from '../src/domain/prng.ts';
import { aggregateSamples } from '../src/domain/rehearsal/report.ts';
import type { HistoryRecord, RehearsalReport } from '../src/domain/rehearsal/types.ts';
import { createLogger } from '../src/logger.ts';
import type { RolloutInput } from '../src/operations/rollouts/engine.ts';
import type { RolloutRun } from '../src/operations/rollouts/run.ts';
import { readHistory } from '../src/rehearsal/history-read.ts';
import type { RehearsalRequest } from '../src/rehearsal/request.ts';
import { buildApp } from '../src/server.ts';
import { openDatabase, type Database } from '../src/store/database.ts';
import { runSamples } from '../rehearsal/run-samples.ts';
import type { Benchmark, BenchReport } from './benchmark.ts';

const NODES = 16;
const VMS_PER_NODE = 4;
/** Earlier real runs the history is read from: the rehearsal is measured with the first 5 of them and with all 10. */
const HISTORY_SIZES = [5, 10] as const;
const HISTORY_RUNS = HISTORY_SIZES[HISTORY_SIZES.length - 1]!;
const SAMPLES = 20;
const REAL_RUNS = 10;
/** Each VM's typical migration: 30 s to 3 min; a run draws log-normally around it (σ below). */
const MIGRATE_MS = [30_000, 180_000] as const;
const MIGRATE_SIGMA = 0.3;
/** Each node's typical restart (down, back, then a heartbeat later ACTIVE): 2 to 5 min. */
const RESTART_MS = [120_000, 300_000] as const;
const RESTART_SIGMA = 0.2;
const HEARTBEAT_MS = 1_000;
const DRIFT = 1.2;
const BLOCKER = { node: String(NODES), vm: 'prod/pinned' };
const INPUT: RolloutInput = { nodes: Array.from({ length: NODES }, (_, i) => String(i + 1)), action: 'MAINTENANCE', maxUnavailable: 1 };
const META = { actor: 'bench', reason: 'rehearsal accuracy (issue 33)' };
const START = Date.UTC(2026, 0, 1);
const MAX_VIRTUAL_MS = 7 * 24 * 3600_000;

function topology(): TopologySpec {
  const nodes = Array.from({ length: NODES }, (_, i) => ({ id: String(i + 1), zone: i < NODES / 2 ? 'zone-a' : 'zone-b', roles: ['worker'] }));
  const vms = nodes.flatMap((n) =>
    Array.from({ length: VMS_PER_NODE }, (_, j) => ({ namespace: 'prod', name: `vm-${n.id}-${j}`, nodeId: n.id, maintenanceStrategyLabel: 'Migrate' })),
  );
  return { nodes, vms, shards: [] };
}

/** The cluster's "nature": every VM's and node's typical duration, fixed across runs (seed 1). */
function typical(): { vm: Map<string, number>; node: Map<string, number> } {
  const random = createPrng(1);
  const between = ([lo, hi]: readonly [number, number]) => lo + random() * (hi - lo);
  const vm = new Map<string, number>();
  const node = new Map<string, number>();
  for (const v of topology().vms ?? []) vm.set(`${v.namespace}/${v.name}`, between(MIGRATE_MS));
  vm.set(BLOCKER.vm, between(MIGRATE_MS));
  for (let i = 1; i <= NODES; i++) node.set(String(i), between(RESTART_MS));
  return { vm, node };
}

/** One run's draws: log-normal around the typical value (Box–Muller), times `factor`. */
function drawer(seed: number, factor: number) {
  const random = createPrng(seed);
  const normal = () => Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
  return (typicalMs: number, sigma: number) => Math.round(typicalMs * factor * Math.exp(sigma * normal() - (sigma * sigma) / 2));
}

interface RealRun {
  durationMs: number;
  outcome: string;
  pauseKeys: string[];
  cpuMicros: number;
  snapshot: BackendSnapshot[];
  endedAt: number;
}

/**
 * One real rollout of `topo` on the simulated cluster, in virtual time, with latencies drawn for
 * this run (`seed`, `factor`), on `db` (kept open: the history runs share one). The operator is the
 * one the rehearsal's samples play (rehearsal/run-samples.ts): restarts every node handed over,
 * resumes a pause once scoped to its node, gives up on a second pause on the same node.
 */
async function realRun(topo: TopologySpec, db: Database, seed: number, factor: number, start: number): Promise<RealRun> {
  const cpu = process.cpuUsage();
  const nature = typical();
  const draw = drawer(seed, factor);
  const workloadLatenciesMs: Record<string, { migrate: number }> = {};
  const present = new Set((topo.vms ?? []).map((v) => `${v.namespace}/${v.name}`));
  // Drawn for every VM of the cluster's nature in one order, so a seed means the same draws whatever the layout.
  for (const [id, ms] of [...nature.vm].sort(([a], [b]) => a.localeCompare(b))) {
    const drawn = draw(ms, MIGRATE_SIGMA);
    if (present.has(id)) workloadLatenciesMs[id] = { migrate: drawn };
  }
  const restartMs = new Map([...nature.node].map(([id, ms]) => [id, draw(ms, RESTART_SIGMA)]));
  const clock = new VirtualClock(start);
  const cluster = createSimulatedCluster({
    topology: topo,
    clock,
    latenciesMs: { migrate: 60_000, stop: 10_000, start: 10_000, cordon: 100, cutOver: 1_000 },
    workloadLatenciesMs,
    restartDelayMs: 1_000,
    heartbeatIntervalMs: HEARTBEAT_MS,
    seed,
  });
  const app = buildApp({
    backend: cluster,
    log: createLogger('silent'),
    prisma: db.prisma,
    hotPath: db.hotPath,
    clock,
    config: { ...DEFAULT_CONFIG },
    databaseName: 'the bench database',
    onClose: async () => {},
  });
  await app.ready();
  try {
    const startedAt = clock.now();
    const op = await app.rollouts.start(INPUT, META);
    const restarted = new Set<string>();
    const handled = new Set<number>();
    const resumed = new Set<string>();
    const pauseKeys: string[] = [];
    let outcome: string | null = null;
    let endedAt = startedAt;
    let idle = 0;
    while (outcome === null) {
      const run = app.operations.live.get(op.id) as RolloutRun | undefined;
      if (!run) {
        const ended = await app.operations.getOperation(op.id);
        if (ended && ['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(ended.state)) {
          outcome = ended.state;
          endedAt = ended.finishedAt ?? clock.now();
          break;
        }
      } else {
        for (const [nodeId, detail] of run.details) {
          const atRestart = detail.phase === 'WAITING_FOR_RESTART' || detail.phase === 'WAITING_FOR_CONFIRM';
          const key = `${nodeId}@${detail.since}`;
          if (!atRestart || restarted.has(key)) continue;
          restarted.add(key);
          const down = restartMs.get(nodeId)!;
          await cluster.simulation.restartNode(nodeId);
          await cluster.simulation.setNodeOnline(nodeId, false);
          clock.setTimer(down, () => void cluster.simulation.setNodeOnline(nodeId, true).catch(() => {}));
          if (detail.phase === 'WAITING_FOR_CONFIRM') clock.setTimer(down, () => void app.rollouts.continueNode(op.id, nodeId).catch(() => {}));
        }
        if (run.snapshot.state === 'PAUSED') {
          await app.operations.journal.flush();
          const row = await db.prisma.event.findFirst({ where: { operationId: op.id, type: 'ROLLOUT_PAUSED' }, orderBy: { seq: 'desc' } });
          if (row && !handled.has(row.seq)) {
            handled.add(row.seq);
            const payload = JSON.parse(row.payload) as { node?: string; blockers?: { id: string }[] };
            const nodeId = payload.node ?? null;
            const detail = nodeId ? run.details.get(nodeId) : undefined;
            const step = run.steps.find((s) => s.workloadId === nodeId);
            const reason = detail?.phase === 'UNSAFE_TO_RESTART' ? 'UNSAFE_TO_RESTART' : (step?.reason ?? 'PAUSED');
            const workload = (payload.blockers ?? detail?.blockers ?? [])[0]?.id ?? null;
            pauseKeys.push(`${reason}:${nodeId}:${workload}`);
            const scope = nodeId ?? '(rollout)';
            if (resumed.has(scope)) {
              outcome = 'GAVE_UP';
              endedAt = clock.now();
              break;
            }
            resumed.add(scope);
            await app.rollouts.resumeRollout(op.id, nodeId ? { allowUnsafeRestartNodes: [nodeId] } : {}, META);
          }
        }
      }
      const next = clock.nextDueAt();
      idle = next === null ? idle + 1 : 0;
      if (clock.now() - startedAt >= MAX_VIRTUAL_MS || idle > 3) {
        outcome = 'GAVE_UP';
        endedAt = clock.now();
        break;
      }
      await clock.advance(next === null ? 0 : Math.min(60_000, Math.max(0, next - clock.now())));
    }
    // As the samples do (recordFailures): a node that failed where the rollout did not pause (its last) counts as a pause.
    for (const step of await app.operations.getSteps(op.id)) {
      if (step.state !== 'FAILED' || pauseKeys.some((k) => k.split(':')[1] === step.workloadId)) continue;
      const blockers = step.detail ? ((JSON.parse(step.detail) as { blockers?: { id: string }[] }).blockers ?? []) : [];
      pauseKeys.push(`${step.reason ?? 'FAILED'}:${step.workloadId}:${blockers[0]?.id ?? null}`);
    }
    const snapshot = await cluster.snapshot();
    const used = process.cpuUsage(cpu);
    return { durationMs: endedAt - startedAt, outcome, pauseKeys, cpuMicros: used.user + used.system, snapshot, endedAt: clock.now() };
  } finally {
    await app.stop();
  }
}

async function withDatabase<T>(fn: (db: Database) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'lk-bench-rehearsal-'));
  const db = await openDatabase({ url: `file:${join(dir, 'bench.db')}` });
  try {
    return await fn(db);
  } finally {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The snapshot's topology with the blocker planted: a VM on the last node that cannot be live-migrated. */
function withBlocker(topo: TopologySpec): TopologySpec {
  return {
    ...topo,
    vms: [
      ...(topo.vms ?? []),
      {
        namespace: 'prod',
        name: 'pinned',
        nodeId: BLOCKER.node,
        maintenanceStrategyLabel: 'Migrate',
        liveMigratable: false,
        liveMigratableReason: 'HostDeviceNotLiveMigratable',
      } as never,
    ],
  };
}

const median = (xs: readonly number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const min = (ms: number) => `${(ms / 60_000).toFixed(1)} min`;

interface Accuracy {
  inside: number;
  actualMedian: number;
  p50Error: number;
  pausesMissed: string[];
  pausesFalse: string[];
  durations: number[];
}

async function realRuns(topo: TopologySpec, seed0: number, factor: number, start: number, progress: (l: string) => void, label: string) {
  const runs: RealRun[] = [];
  for (let i = 0; i < REAL_RUNS; i++) {
    const r = await withDatabase((db) => realRun(topo, db, seed0 + i, factor, start));
    progress(`  ${label} run ${i + 1}: ${min(r.durationMs)} ${r.outcome}, pauses ${r.pauseKeys.join(', ') || 'none'}`);
    runs.push(r);
  }
  return runs;
}

function accuracy(report: RehearsalReport, runs: readonly RealRun[]): Accuracy {
  const durations = runs.map((r) => r.durationMs);
  const actualMedian = median(durations);
  const seen = new Map<string, number>();
  for (const r of runs) for (const k of new Set(r.pauseKeys)) seen.set(k, (seen.get(k) ?? 0) + 1);
  const predicted = new Map(report.pauses.map((p) => [p.key, p.probability]));
  return {
    inside: durations.filter((d) => d >= report.durationMs.p10 && d <= report.durationMs.p90).length,
    actualMedian,
    p50Error: (report.durationMs.p50 - actualMedian) / actualMedian,
    pausesMissed: [...seen].filter(([k, n]) => n >= runs.length / 2 && (predicted.get(k) ?? 0) < 0.5).map(([k]) => k),
    pausesFalse: [...predicted].filter(([k, p]) => p >= 0.5 && !seen.has(k)).map(([k]) => k),
    durations,
  };
}

export const rehearsal: Benchmark = {
  name: 'rehearsal',
  title: `Rehearsal accuracy and cost (issue 33): ${NODES} nodes × ${VMS_PER_NODE} VMs on the fake simulator, history from ${HISTORY_SIZES.join(' or ')} real runs, ${SAMPLES} samples against ${REAL_RUNS} real runs`,
  async run(_options, progress): Promise<BenchReport> {
    // 1. History: real rollouts on one database, each on the cluster as the previous one left it.
    let topo = topology();
    let start = START;
    const ends: number[] = [];
    const history: HistoryRecord[] = await withDatabase(async (db) => {
      for (let k = 0; k < HISTORY_RUNS; k++) {
        const r = await realRun(topo, db, 1000 + k, 1, start);
        progress(`  history run ${k + 1}: ${min(r.durationMs)} ${r.outcome}`);
        topo = (r.snapshot[0]!.data as FakeSnapshotData).topology;
        ends.push(r.endedAt);
        start = r.endedAt + 3600_000;
      }
      return readHistory(db.prisma);
    });

    // 2. The blocker, planted after the history; 3. the snapshot the rehearsals start from.
    const planted = withBlocker(topo);
    const cluster = createSimulatedCluster({
      topology: planted,
      clock: new VirtualClock(start),
      latenciesMs: { migrate: 60_000, stop: 10_000, start: 10_000, cordon: 100, cutOver: 1_000 },
      restartDelayMs: 1_000,
      heartbeatIntervalMs: HEARTBEAT_MS,
    });
    const snapshots = await cluster.snapshot();
    await cluster.close();

    const rehearsals = [];
    for (const size of HISTORY_SIZES) {
      // The first `size` runs' records: each run's records finished before it ended.
      const records = history.filter((h) => h.at <= ends[size - 1]!);
      const byAction = records.reduce<Record<string, number>>((a, h) => ({ ...a, [h.action]: (a[h.action] ?? 0) + 1 }), {});
      const request: RehearsalRequest = {
        config: { plugins: [{ name: 'fake', options: {} }], operations: DEFAULT_CONFIG.operations },
        snapshots,
        history: records,
        input: INPUT,
        samples: SAMPLES,
        seed: 7,
      };
      const cpu = process.cpuUsage();
      const wall = performance.now();
      const samples = await runSamples(request);
      const wallMs = performance.now() - wall;
      const used = process.cpuUsage(cpu);
      const waves = [...new Set(samples.flatMap((s) => s.nodes.map((n) => n.wave)))]
        .sort((a, b) => a - b)
        .map((w) => samples[0]!.nodes.filter((n) => n.wave === w).map((n) => n.nodeId));
      const report = aggregateSamples(samples, waves);
      progress(
        `  rehearsal (history of ${size} runs, ${JSON.stringify(byAction)}): p10 ${min(report.durationMs.p10)}, p50 ${min(report.durationMs.p50)}, p90 ${min(report.durationMs.p90)}; ` +
          `pauses ${report.pauses.map((p) => `${p.key} (${p.probability})`).join(', ') || 'none'}; outcomes ${JSON.stringify(report.outcomes)}; sources ${JSON.stringify(report.durationSources)}`,
      );
      rehearsals.push({ size, byAction, report, wallMs, sampleCpu: (used.user + used.system) / SAMPLES });
    }

    // 4. Real runs of the same snapshot, other seeds; then the drift case.
    const realSame = await realRuns(planted, 5000, 1, start, progress, 'real');
    const realDrift = await realRuns(planted, 6000, DRIFT, start, progress, 'drift');
    const realCpu = realSame.reduce((a, r) => a + r.cpuMicros, 0) / realSame.length;

    const mark = (ok: boolean) => (ok ? 'met' : '**missed**');
    const pct = (x: number) => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)} %`;
    const range = (xs: readonly number[]) => `${min(median(xs))} (${min(Math.min(...xs))}–${min(Math.max(...xs))})`;
    const rows = [
      '| History | Real runs | Predicted p10 / p50 / p90 | Actual median (min–max) | Inside p10–p90 (goal ≥ 7 of 10) | p50 error (goal ±10 %) | Pauses: missed / false (goal 0 / 0) |',
      '|---|---|---|---|---|---|---|',
    ];
    const summary: string[] = [];
    const pauses: string[] = [];
    for (const { size, report } of rehearsals) {
      const q = report.durationMs;
      const same = accuracy(report, realSame);
      const drift = accuracy(report, realDrift);
      const ok = { coverage: same.inside >= 7, p50: Math.abs(same.p50Error) <= 0.1, pauses: !same.pausesMissed.length && !same.pausesFalse.length };
      rows.push(
        `| ${size} runs | same distribution | ${min(q.p10)} / ${min(q.p50)} / ${min(q.p90)} | ${range(same.durations)} | ${same.inside} (${mark(ok.coverage)}) | ${pct(same.p50Error)} (${mark(ok.p50)}) | ${same.pausesMissed.length} / ${same.pausesFalse.length} (${mark(ok.pauses)}) |`,
        `| ${size} runs | drift: ${pct(DRIFT - 1)} slower (no goal) | same | ${range(drift.durations)} | ${drift.inside} | ${pct(drift.p50Error)} | ${drift.pausesMissed.length} / ${drift.pausesFalse.length} |`,
      );
      pauses.push(`history of ${size} runs: ${report.pauses.map((p) => `\`${p.key}\` p=${p.probability}`).join(', ') || 'none'}`);
      summary.push(
        `history ${size}: inside ${same.inside}/${REAL_RUNS}, p50 error ${pct(same.p50Error)}, pauses missed ${same.pausesMissed.length} false ${same.pausesFalse.length}, drift p50 error ${pct(drift.p50Error)}`,
      );
    }
    const seen = new Map<string, number>();
    for (const r of realSame) for (const k of new Set(r.pauseKeys)) seen.set(k, (seen.get(k) ?? 0) + 1);
    const cost = rehearsals.map(
      ({ size, sampleCpu, wallMs }) =>
        `history of ${size} runs: one sample ${(sampleCpu / 1000).toFixed(0)} ms CPU = ${(sampleCpu / realCpu).toFixed(2)}× (goal ≤ 2×: ${mark(sampleCpu / realCpu <= 2)}); ${SAMPLES} samples ${(wallMs / 1000).toFixed(1)} s wall`,
    );
    const markdown = [
      `Cluster: ${NODES} nodes in 2 zones, ${VMS_PER_NODE} VMs each (live migration), rollout MAINTENANCE with maxUnavailable 1 over every node. ` +
        `Each VM has its own typical migration time (${min(MIGRATE_MS[0])}–${min(MIGRATE_MS[1])}) and each node its own restart (${min(RESTART_MS[0])}–${min(RESTART_MS[1])}); ` +
        `every run draws log-normally around them (σ ${MIGRATE_SIGMA} and ${RESTART_SIGMA}, seeded). History: ${HISTORY_RUNS} real runs on one database, read back with readHistory; the rehearsal is measured with the first ${HISTORY_SIZES[0]} runs' records and with all. ` +
        `Planted after them: ${BLOCKER.vm} on node ${BLOCKER.node} (the last), not live-migratable. The operator of the real runs is the samples' own: restarts each node handed over, resumes a pause once scoped to its node, gives up on a second pause there; a failed node where the rollout does not pause counts as a pause, as in the samples.`,
      '',
      ...rows,
      '',
      `Actual durations (min): ${realSame.map((r) => (r.durationMs / 60_000).toFixed(1)).join(', ')}; drift: ${realDrift.map((r) => (r.durationMs / 60_000).toFixed(1)).join(', ')}.`,
      `Pauses in the real runs: ${[...seen].map(([k, n]) => `\`${k}\` in ${n} of ${REAL_RUNS}`).join(', ') || 'none'}. Predicted: ${pauses.join('; ')}.`,
      '',
      `Cost (CPU of the process, process.cpuUsage, around all ${SAMPLES} samples / ${SAMPLES}, against the mean of the ${REAL_RUNS} real runs of the same moves on the same simulator, ${(realCpu / 1000).toFixed(0)} ms each): ${cost.join('; ')}.`,
      '',
      'Not measured yet: the pageserver case (16 pageservers, 4 000 shards), the Kubernetes case (pods and PDBs), the hyperconverged mix, and the wall time of 20 samples at 100 nodes, 10 000 VMs and 100 000 shards.',
    ].join('\n');
    return {
      markdown,
      summary: `rehearsal: ${summary.join('; ')}; sample CPU ${rehearsals.map((r) => (r.sampleCpu / realCpu).toFixed(2)).join(' / ')}× a real run`,
    };
  },
};
