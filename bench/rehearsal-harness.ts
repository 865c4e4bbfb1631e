/**
 * What every case of the rehearsal accuracy benchmark (issue 33 point 4) shares: the "truth" of
 * a cluster (each workload's typical duration per action, drawn around per run), real runs that
 * keep their history, rehearsals measured for CPU and wall time, and the goals' arithmetic.
 *
 * A real run here is the rollout run by the real engines against the strict simulators stood up
 * from the cluster's snapshot (rehearsal/loaders), on a database that is kept, with the durations
 * of that run's truth; a rehearsal sample is the same with durations drawn from the history the
 * real runs left. The operator is the same in both (rehearsal/run-samples.ts): so the benchmark
 * measures what the history and the snapshot predict, not a difference of drivers.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BackendSnapshot } from '../src/cluster/rehearsal.ts';
import { createPrng } from '../src/domain/prng.ts';
import { aggregateSamples } from '../src/domain/rehearsal/report.ts';
import type { DurationSampler, HistoryRecord, RehearsalReport, RehearsalSample, RehearsedAction } from '../src/domain/rehearsal/types.ts';
import { readHistory } from '../src/rehearsal/history-read.ts';
import type { RehearsalRequest } from '../src/rehearsal/request.ts';
import { openDatabase, type Database } from '../src/store/database.ts';
import { runSamples } from '../rehearsal/run-samples.ts';

/** Real runs per case, and how much slower the drift case's runs are than the history (shared by every case). */
export const REAL_RUNS = 10;
export const DRIFT = 1.2;
/** A VM's typical migration (30 s to 3 min) and a node's typical restart (2 to 5 min); each run draws log-normally around them with σ. */
export const MIGRATE_MS = [30_000, 180_000] as const;
export const MIGRATE_SIGMA = 0.3;
export const RESTART_MS = [120_000, 300_000] as const;
export const RESTART_SIGMA = 0.2;

/** A cluster's nature: each (action, workload)'s typical duration in ms, and each action's log-normal spread per run. */
export interface Nature {
  typicalMs: ReadonlyMap<string, number>;
  sigma: Partial<Record<RehearsedAction, number>>;
}

export const natureKey = (action: RehearsedAction, workloadId: string) => `${action}\u0000${workloadId}`;

/** A string's 32-bit FNV-1a hash: a seed per (run, workload) that does not depend on the order of the draws. */
function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/**
 * One real run's durations: each (action, workload) of the nature drawn once, log-normally
 * around its typical value (median-preserving mean: exp(σz − σ²/2)), times `factor` (the drift
 * case). An action the nature does not know falls to the simulators' own defaults (source
 * DEFAULT, 0 ms: the loaders then keep their backend's delay).
 */
function truthSampler(nature: Nature, seed: number, factor = 1): DurationSampler {
  const drawn = new Map<string, number>();
  return {
    draw(action, workloadId) {
      const key = natureKey(action, workloadId);
      const typical = nature.typicalMs.get(key);
      if (typical === undefined) return { ms: 0, source: 'DEFAULT' };
      let ms = drawn.get(key);
      if (ms === undefined) {
        const random = createPrng(hash(`${seed}\u0000${key}`));
        const sigma = nature.sigma[action] ?? 0;
        const normal = Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
        ms = Math.round(typical * factor * Math.exp(sigma * normal - (sigma * sigma) / 2));
        drawn.set(key, ms);
      }
      return { ms, source: 'WORKLOAD' };
    },
  };
}

export async function withDatabase<T>(fn: (db: Database) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'lk-bench-rehearsal-'));
  const db = await openDatabase({ url: `file:${join(dir, 'bench.db')}` });
  try {
    return await fn(db);
  } finally {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

interface RealRun {
  sample: RehearsalSample;
  pauseKeys: string[];
  cpuMicros: number;
  /** The cluster as the run left it (the next history run starts there). */
  after: BackendSnapshot[];
}

/** One real run of `request`'s rollout from its snapshots, durations from the truth of `seed`, on `db` (kept). */
async function realRun(request: RehearsalRequest, nature: Nature, seed: number, factor: number, db: Database): Promise<RealRun> {
  const cpu = process.cpuUsage();
  let after: BackendSnapshot[] = [];
  const [sample] = await runSamples({ ...request, history: [], samples: 1, seed }, undefined, {
    sampler: (s) => truthSampler(nature, s, factor),
    database: db,
    afterRun: async (backend) => {
      after = (await backend.snapshot?.()) ?? [];
    },
  });
  const used = process.cpuUsage(cpu);
  return { sample: sample!, pauseKeys: [...new Set(sample!.pauses.map((p) => p.key))], cpuMicros: used.user + used.system, after };
}

/**
 * `runs` real runs on one database, each starting from the cluster as the previous one left it,
 * `gapMs` of quiet between them; the history read back from that database, with the time each
 * run ended (so a rehearsal can be given the first k runs' records only).
 */
async function historyRuns(
  request: RehearsalRequest,
  nature: Nature,
  runs: number,
  seed0: number,
  progress: (line: string) => void,
): Promise<{ history: HistoryRecord[]; ends: number[]; last: BackendSnapshot[] }> {
  return withDatabase(async (db) => {
    let snapshots = request.snapshots;
    const ends: number[] = [];
    for (let k = 0; k < runs; k++) {
      const r = await realRun({ ...request, snapshots }, nature, seed0 + k, 1, db);
      progress(`  history run ${k + 1}: ${min(r.sample.durationMs)} ${r.sample.outcome}`);
      // The next run starts an hour after this one ended (the snapshot's takenAt is its clock's start).
      const endedAt = Math.max(...r.after.map((s) => s.takenAt));
      ends.push(endedAt);
      snapshots = r.after.map((s) => ({ ...s, takenAt: endedAt + 3600_000 }));
    }
    return { history: await readHistory(db.prisma), ends, last: snapshots };
  });
}

/** `count` real runs of the same request, each on its own database, seeds seed0…. */
async function realRuns(request: RehearsalRequest, nature: Nature, count: number, seed0: number, factor: number, progress: (l: string) => void, label: string) {
  const runs: RealRun[] = [];
  for (let i = 0; i < count; i++) {
    const r = await withDatabase((db) => realRun(request, nature, seed0 + i, factor, db));
    progress(`  ${label} run ${i + 1}: ${min(r.sample.durationMs)} ${r.sample.outcome}, pauses ${r.pauseKeys.join(', ') || 'none'}`);
    runs.push(r);
  }
  return runs;
}

interface MeasuredRehearsal {
  report: RehearsalReport;
  samples: RehearsalSample[];
  wallMs: number;
  /** CPU (user + system, µs) per sample. */
  sampleCpu: number;
}

/** The rehearsal: `request`'s samples through runSamples (history drawn as the gateway draws it), aggregated as the gateway does. */
export async function rehearse(request: RehearsalRequest): Promise<MeasuredRehearsal> {
  const cpu = process.cpuUsage();
  const wall = performance.now();
  const samples = await runSamples(request);
  const wallMs = performance.now() - wall;
  const used = process.cpuUsage(cpu);
  const waves = [...new Set(samples.flatMap((s) => s.nodes.map((n) => n.wave)))]
    .sort((a, b) => a - b)
    .map((w) => samples[0]!.nodes.filter((n) => n.wave === w).map((n) => n.nodeId));
  return { report: aggregateSamples(samples, waves), samples, wallMs, sampleCpu: (used.user + used.system) / request.samples };
}

const median = (xs: readonly number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
export const min = (ms: number) => `${(ms / 60_000).toFixed(1)} min`;
const pct = (x: number) => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)} %`;
export const mark = (ok: boolean) => (ok ? 'met' : '**missed**');

interface Accuracy {
  inside: number;
  actualMedian: number;
  p50Error: number;
  pausesMissed: string[];
  pausesFalse: string[];
  durations: number[];
  /** Each pause key seen in the real runs, with how many runs saw it. */
  seen: Map<string, number>;
}

/**
 * The goals' arithmetic: actual durations inside the predicted p10–p90; the p50 against the
 * actual median; a pause seen in at least half of the real runs must be predicted with p ≥ 0.5,
 * and a pause predicted with p ≥ 0.5 must be seen in at least one real run.
 */
function accuracy(report: RehearsalReport, durations: readonly number[], pauseKeys: readonly (readonly string[])[]): Accuracy {
  const actualMedian = median(durations);
  const seen = new Map<string, number>();
  for (const keys of pauseKeys) for (const k of new Set(keys)) seen.set(k, (seen.get(k) ?? 0) + 1);
  const predicted = new Map(report.pauses.map((p) => [p.key, p.probability]));
  return {
    inside: durations.filter((d) => d >= report.durationMs.p10 && d <= report.durationMs.p90).length,
    actualMedian,
    p50Error: (report.durationMs.p50 - actualMedian) / actualMedian,
    pausesMissed: [...seen].filter(([k, n]) => n >= pauseKeys.length / 2 && (predicted.get(k) ?? 0) < 0.5).map(([k]) => k),
    pausesFalse: [...predicted].filter(([k, p]) => p >= 0.5 && !seen.has(k)).map(([k]) => k),
    durations: [...durations],
    seen,
  };
}

/** Whether a case met its three accuracy goals (coverage ≥ 7 of 10 is scaled to the number of real runs). */
function goalsMet(a: Accuracy): { coverage: boolean; p50: boolean; pauses: boolean } {
  return {
    coverage: a.inside >= Math.ceil(0.7 * a.durations.length),
    p50: Math.abs(a.p50Error) <= 0.1,
    pauses: !a.pausesMissed.length && !a.pausesFalse.length,
  };
}

export const ACCURACY_HEADER = [
  '| Case | History | Real runs | Predicted p10 / p50 / p90 | Actual median (min–max) | Inside p10–p90 (goal ≥ 7 of 10) | p50 error (goal ±10 %) | Pauses: missed / false (goal 0 / 0) |',
  '|---|---|---|---|---|---|---|---|',
];

/** One row of the accuracy table; `goals` false for the drift case (error reported, no goal). */
function accuracyRow(caseName: string, history: string, runs: string, report: RehearsalReport, a: Accuracy, goals: boolean): string {
  const q = report.durationMs;
  const ok = goalsMet(a);
  const range = `${min(median(a.durations))} (${min(Math.min(...a.durations))}–${min(Math.max(...a.durations))})`;
  const with_ = (text: string, met: boolean) => (goals ? `${text} (${mark(met)})` : text);
  return `| ${caseName} | ${history} | ${runs} | ${min(q.p10)} / ${min(q.p50)} / ${min(q.p90)} | ${range} | ${with_(`${a.inside} of ${a.durations.length}`, ok.coverage)} | ${with_(pct(a.p50Error), ok.p50)} | ${with_(`${a.pausesMissed.length} / ${a.pausesFalse.length}`, ok.pauses)} |`;
}

/** One case of the accuracy benchmark. */
export interface AccuracyCase {
  /** Short name, the first column of the table. */
  name: string;
  /** The case in words for bench/RESULTS.md: cluster, latencies, history, what is planted. */
  describe: string;
  /** The rollout and config, with the cluster's snapshots before the history runs. */
  request: RehearsalRequest;
  nature: Nature;
  /** Earlier real runs the history is read from: the rehearsal is measured with the first k of them for each k. */
  historySizes: readonly number[];
  /** Plants the case's blockers in the cluster the history runs left (they are not in the history). */
  plant(snapshots: BackendSnapshot[]): BackendSnapshot[];
  realRuns: number;
  /** The drift case: real runs this much slower than the history (error reported, no goal). */
  drift: number;
  samples: number;
}

export interface CaseResult {
  rows: string[];
  summary: string;
  /** Durations and pauses in words, for the markdown under the table. */
  notes: string[];
  /** Per history size: one sample's CPU over one real run's, and the wall time of all samples. */
  cost: { size: number; ratio: number; wallMs: number; sampleCpuMs: number }[];
  realCpuMs: number;
  met: boolean;
}

/** History runs, the blockers planted, a rehearsal per history size, real runs (same and drift), the goals. */
export async function measureCase(c: AccuracyCase, progress: (line: string) => void): Promise<CaseResult> {
  const runs = Math.max(...c.historySizes);
  const { history, ends, last } = await historyRuns(c.request, c.nature, runs, 1000, progress);
  const planted = c.plant(last);
  const rehearsals: { size: number; m: MeasuredRehearsal }[] = [];
  for (const size of c.historySizes) {
    const records = history.filter((h) => h.at <= ends[size - 1]!);
    const m = await rehearse({ ...c.request, snapshots: planted, history: records, samples: c.samples, seed: 7 });
    const r = m.report;
    progress(
      `  ${c.name}: rehearsal on ${size} runs' history (${records.length} records): p10 ${min(r.durationMs.p10)}, p50 ${min(r.durationMs.p50)}, p90 ${min(r.durationMs.p90)}; ` +
        `pauses ${r.pauses.map((p) => `${p.key} (${p.probability})`).join(', ') || 'none'}; outcomes ${JSON.stringify(r.outcomes)}; sources ${JSON.stringify(r.durationSources)}`,
    );
    rehearsals.push({ size, m });
  }
  const request = { ...c.request, snapshots: planted };
  const same = await realRuns(request, c.nature, c.realRuns, 5000, 1, progress, `${c.name} real`);
  const drift = await realRuns(request, c.nature, c.realRuns, 6000, c.drift, progress, `${c.name} drift`);
  const realCpu = same.reduce((a, r) => a + r.cpuMicros, 0) / same.length;
  const rows: string[] = [];
  const summary: string[] = [];
  let met = true;
  for (const { size, m } of rehearsals) {
    const a = accuracy(
      m.report,
      same.map((r) => r.sample.durationMs),
      same.map((r) => r.pauseKeys),
    );
    const d = accuracy(
      m.report,
      drift.map((r) => r.sample.durationMs),
      drift.map((r) => r.pauseKeys),
    );
    const ok = goalsMet(a);
    met &&= ok.coverage && ok.p50 && ok.pauses && m.sampleCpu / realCpu <= 2;
    rows.push(
      accuracyRow(c.name, `${size} runs`, 'same distribution', m.report, a, true),
      accuracyRow(c.name, `${size} runs`, `drift: ${pct(c.drift - 1)} slower (no goal)`, m.report, d, false),
    );
    summary.push(
      `${c.name} history ${size}: inside ${a.inside}/${a.durations.length}, p50 ${pct(a.p50Error)}, pauses missed ${a.pausesMissed.length} false ${a.pausesFalse.length}`,
    );
  }
  const seen = accuracy(
    rehearsals[0]!.m.report,
    same.map((r) => r.sample.durationMs),
    same.map((r) => r.pauseKeys),
  ).seen;
  const notes = [
    `${c.name}: actual durations (min): ${same.map((r) => (r.sample.durationMs / 60_000).toFixed(1)).join(', ')}; drift: ${drift.map((r) => (r.sample.durationMs / 60_000).toFixed(1)).join(', ')}.`,
    `${c.name}: pauses in the real runs: ${[...seen].map(([k, n]) => `\`${k}\` in ${n} of ${c.realRuns}`).join(', ') || 'none'}. Predicted: ${rehearsals
      .map(({ size, m }) => `history of ${size} runs: ${m.report.pauses.map((p) => `\`${p.key}\` p=${p.probability}`).join(', ') || 'none'}`)
      .join('; ')}.`,
  ];
  return {
    rows,
    summary: summary.join('; '),
    notes,
    cost: rehearsals.map(({ size, m }) => ({ size, ratio: m.sampleCpu / realCpu, wallMs: m.wallMs, sampleCpuMs: m.sampleCpu / 1000 })),
    realCpuMs: realCpu / 1000,
    met,
  };
}
