/**
 * One rehearsal's samples (issue 33, docs/rehearsal.md "How a sample runs"): each sample runs
 * the real engines, rules and config on a throw-away database and a virtual clock, against the
 * simulators the loaders stand up from the snapshots, and says how the rollout went.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ClusterBackend } from '../src/cluster/backend.ts';
import type { ClusterEvent } from '../src/cluster/types.ts';
import { VirtualClock } from '../src/cluster/virtual-clock.ts';
import { DEFAULT_CONFIG } from '../src/config/defaults.ts';
import { createBackendFromConfig } from '../src/config/plugin-registry.ts';
import type { PluginEntry } from '../src/config/schema.ts';
import type { DurationSampler, DurationSource, RehearsalSample, RehearsedAction, SampleNode, SamplePause } from '../src/domain/rehearsal/types.ts';
import { createLogger } from '../src/logger.ts';
import type { StepRecord } from '../src/domain/operations.ts';
import type { RolloutRun } from '../src/operations/rollouts/run.ts';
import type { RehearsalRequest } from '../src/rehearsal/request.ts';
import { buildApp, type App } from '../src/server.ts';
import { openDatabase, type Database } from '../src/store/database.ts';
import { PrismaPluginStore } from '../src/store/plugin-store.ts';
import { NO_FENCE } from '../src/store/repositories.ts';
import { createDurationSampler } from '../src/domain/rehearsal/history.ts';
import type { LoadedSimulators, RehearsalLoader } from './loaders/types.ts';

/** A draw with no history and no request default answers 0 ms from DEFAULT: the loaders then use their backend's own default (LoadedSimulators.defaults). */
const NO_DEFAULTS: Record<RehearsedAction, number> = { VM_MIGRATE: 0, VM_STOP: 0, VM_START: 0, POD_EVICT: 0, SHARD_CUT_OVER: 0, NODE_RESTART: 0 };

/** A sample that has not ended after this much virtual time gives up (GAVE_UP). */
const MAX_VIRTUAL_MS = 7 * 24 * 3600_000;
/** The longest the clock moves between two looks at the rollout (it moves to the next timer when that is sooner). */
const STEP_MS = 60_000;
/** Looks with no timer set anywhere before a sample is said to wait forever. */
const IDLE_LOOKS = 3;
const META = { actor: 'rehearsal', reason: 'rehearsal (issue 33)' };
const ENDED = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED']);

/** The rehearsal refused to run: it would have reached something that is not a simulator. */
export class RehearsalRefusedError extends Error {
  override readonly name = 'RehearsalRefusedError';
  constructor(
    message: string,
    /** The config path it is about, e.g. `plugins[0].options.url`. */
    readonly option: string,
  ) {
    super(message);
  }
}

export interface RunSamplesOptions {
  /** The durations of one sample; default: drawn from the request's history, seeded. */
  sampler?: (seed: number) => DurationSampler;
  /** The loader of a plugin; default rehearsal/loaders/<plugin>.ts (or .js, compiled). */
  loader?: (plugin: string) => Promise<RehearsalLoader>;
  /** Default 7 days of virtual time. */
  maxVirtualMs?: number;
  /**
   * Runs on this database instead of a throw-away one, and leaves it open: the accuracy
   * benchmark's real runs keep their steps and events there, to be read back as history.
   */
  database?: Database;
  /** Called after the rollout ended, before anything stops: the cluster as the sample left it. */
  afterRun?: (backend: ClusterBackend) => Promise<void>;
}

/** Runs the request's samples one after the other (sample i with seed `seed + i`). */
export async function runSamples(
  request: RehearsalRequest,
  onProgress?: (done: number, total: number) => void,
  options: RunSamplesOptions = {},
): Promise<RehearsalSample[]> {
  const samples: RehearsalSample[] = [];
  for (let i = 0; i < request.samples; i++) {
    samples.push(await runSample(request, request.seed + i, options));
    onProgress?.(i + 1, request.samples);
  }
  return samples;
}

/** rehearsal/loaders/<plugin>: loaded by name, like plugins, so that a plugin not configured costs nothing. */
async function loaderOf(plugin: string): Promise<RehearsalLoader> {
  if (!/^[a-z0-9][a-z0-9-]*$/.test(plugin)) throw new RehearsalRefusedError(`no rehearsal loader for a plugin named ${JSON.stringify(plugin)}`, 'plugins');
  const compiled = import.meta.url.endsWith('.js');
  const url = new URL(`./loaders/${plugin}.${compiled ? 'js' : 'ts'}`, import.meta.url);
  if (!existsSync(fileURLToPath(url)))
    throw new RehearsalRefusedError(`plugin ${plugin} cannot be rehearsed: it has no loader (rehearsal/loaders/${plugin}.ts)`, 'plugins');
  const mod = (await import(url.href)) as { default?: RehearsalLoader };
  if (typeof mod.default !== 'function') throw new Error(`rehearsal/loaders/${plugin} has no default export`);
  return mod.default;
}

/** Every string in `value` that names a network address (a URL with a host, or host:port), with its path. */
function addresses(value: unknown, path: string): { path: string; origin: string }[] {
  if (typeof value === 'string') {
    const hostPort = /^\[?([\w.:-]+?)\]?:(\d{1,5})$/.exec(value);
    if (hostPort && !/^\d+$/.test(value)) return [{ path, origin: `${hostPort[1]!.toLowerCase()}:${hostPort[2]}` }];
    if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) return [];
    try {
      const url = new URL(value);
      return url.host ? [{ path, origin: url.host.replace(/^\[|\](?=:|$)/g, '').toLowerCase() }] : [];
    } catch {
      return [];
    }
  }
  if (Array.isArray(value)) return value.flatMap((v, i) => addresses(v, `${path}[${i}]`));
  if (value && typeof value === 'object') return Object.entries(value).flatMap(([k, v]) => addresses(v, `${path}.${k}`));
  return [];
}

const hostOf = (url: string) => {
  const u = new URL(url);
  return u.host.replace(/^\[|\](?=:|$)/g, '').toLowerCase();
};

/**
 * Never a real backend: every address left in the options the plugins are created with must be
 * one the loaders' simulators listen on. Checked before any plugin is created.
 */
function assertOnlySimulators(entries: readonly PluginEntry[], urls: readonly string[]): void {
  const allowed = new Set(urls.map(hostOf));
  for (const [i, entry] of entries.entries()) {
    for (const { path, origin } of addresses(entry.options, `plugins[${i}].options`)) {
      if (!allowed.has(origin))
        throw new RehearsalRefusedError(
          `rehearsal refused: ${path} of plugin ${entry.name} names ${origin}, which is not one of the rehearsal's simulators (${[...allowed].join(', ') || 'none listen'})`,
          path,
        );
    }
  }
}

interface Loaded {
  entries: PluginEntry[];
  sims: LoadedSimulators[];
}

async function loadSimulators(
  request: RehearsalRequest,
  context: { clock: VirtualClock; durations: DurationSampler; seed: number },
  loaderFor: (plugin: string) => Promise<RehearsalLoader>,
  sims: LoadedSimulators[],
): Promise<Loaded> {
  const entries: PluginEntry[] = [];
  for (const [i, entry] of request.config.plugins.entries()) {
    const snapshots = request.snapshots.filter((s) => s.plugin === entry.name);
    if (snapshots.length !== 1)
      throw new RehearsalRefusedError(
        `rehearsal refused: plugins[${i}] (${entry.name}) has ${snapshots.length} snapshots; it needs exactly one to be rehearsed`,
        `plugins[${i}]`,
      );
    const loader = await loaderFor(entry.name);
    const loaded = await loader(snapshots[0]!, entry.options, { ...context, ...(request.defaults && { defaults: request.defaults }) });
    sims.push(loaded);
    entries.push({ ...entry, options: loaded.options as PluginEntry['options'] });
  }
  assertOnlySimulators(
    entries,
    sims.flatMap((s) => s.urls),
  );
  return { entries, sims };
}

/** What a sample watches while the rollout runs. */
class SampleRecorder {
  readonly pauses: SamplePause[] = [];
  readonly left = new Map<string, string[]>();
  readonly reachedRestart = new Set<string>();
  readonly restarted = new Set<string>();
  readonly resumedFor = new Set<string>();
  readonly handledPauses = new Set<number>();
  peakOut = 0;
  /** A resume that failed: the sample fails with it at the next look. */
  resumeError: unknown = null;
  private readonly out = new Map<string, boolean>();

  nodeOut(id: string, out: boolean): void {
    this.out.set(id, out);
    this.peakOut = Math.max(this.peakOut, [...this.out.values()].filter(Boolean).length);
  }
}

async function runSample(request: RehearsalRequest, seed: number, options: RunSamplesOptions): Promise<RehearsalSample> {
  const start = Math.max(Date.UTC(2026, 0, 1), ...request.snapshots.map((s) => s.takenAt));
  const clock = new VirtualClock(start);
  const sources: Record<DurationSource, number> = { WORKLOAD: 0, NODE: 0, CLUSTER: 0, DEFAULT: 0 };
  const base = options.sampler?.(seed) ?? createDurationSampler(request.history, { ...NO_DEFAULTS, ...request.defaults }, seed);
  const durations: DurationSampler = {
    draw(action, workloadId, nodeId) {
      const drawn = base.draw(action, workloadId, nodeId);
      sources[drawn.source]++;
      return drawn;
    },
  };
  const dir = mkdtempSync(join(tmpdir(), 'lk-rehearsal-'));
  const sims: LoadedSimulators[] = [];
  let db: Database | null = null;
  let backend: ClusterBackend | null = null;
  let app: App | null = null;
  try {
    const { entries } = await loadSimulators(request, { clock, durations, seed }, options.loader ?? loaderOf, sims);
    db = options.database ?? (await openDatabase({ url: `file:${join(dir, 'rehearsal.db')}` }));
    const database = db;
    const owned = !options.database;
    const log = createLogger('silent');
    backend = await createBackendFromConfig(entries, {
      clock,
      configDir: dir,
      log,
      storeFor: (plugin) => new PrismaPluginStore(database.prisma, plugin, NO_FENCE),
    });
    for (const s of sims) s.attach?.(backend);
    app = buildApp({
      backend,
      log,
      prisma: database.prisma,
      hotPath: database.hotPath,
      clock,
      config: { ...DEFAULT_CONFIG, operations: request.config.operations },
      databaseName: 'the rehearsal database',
      onClose: async () => {
        if (owned) await database.close();
      },
    });
    await app.ready();
    const fallback = Object.assign({}, ...sims.map((s) => s.defaults ?? {})) as Partial<Record<RehearsedAction, number>>;
    const sample = await drive(request, {
      app,
      prisma: database.prisma,
      backend,
      clock,
      durations,
      sims,
      seed,
      sources,
      fallback,
      maxMs: options.maxVirtualMs ?? MAX_VIRTUAL_MS,
    });
    await options.afterRun?.(backend);
    return sample;
  } finally {
    if (app) await app.stop();
    else {
      await backend?.close();
      if (!options.database) await db?.close();
    }
    await Promise.allSettled(sims.map((s) => s.stop()));
    rmSync(dir, { recursive: true, force: true });
  }
}

interface Drive {
  app: App;
  prisma: Database['prisma'];
  backend: ClusterBackend;
  clock: VirtualClock;
  durations: DurationSampler;
  sims: LoadedSimulators[];
  seed: number;
  sources: Record<DurationSource, number>;
  fallback: Partial<Record<RehearsedAction, number>>;
  maxMs: number;
}

const isOut = (n: { availability: string; cordoned: boolean }) => n.availability !== 'ACTIVE' || n.cordoned;

async function drive(request: RehearsalRequest, d: Drive): Promise<RehearsalSample> {
  const { app, backend, clock } = d;
  const rec = new SampleRecorder();
  for (const n of await backend.listNodes()) rec.nodeOut(n.id, isOut(n));
  const unwatch = backend.watch((e: ClusterEvent) => {
    if (e.type === 'nodeChanged') rec.nodeOut(e.node.id, isOut(e.node));
  });
  // A backend without VMs (the pageserver plugin alone) refuses listVms: nothing can be left stopped there.
  const vmsNow = async () => (backend.capabilities.vms ? await backend.listVms() : []);
  const runningBefore = new Set((await vmsNow()).filter((vm) => vm.status === 'Running').map((vm) => vm.id));
  const startedAt = clock.now();
  const op = await app.rollouts.start(request.input, META);
  const restartMs = (nodeId: string) => {
    const drawn = d.durations.draw('NODE_RESTART', nodeId, nodeId);
    return drawn.source === 'DEFAULT' && request.defaults?.NODE_RESTART === undefined ? (d.fallback.NODE_RESTART ?? drawn.ms) : drawn.ms;
  };
  let outcome: RehearsalSample['outcome'] | null = null;
  let idle = 0;
  let endedAt = startedAt;
  let run = app.operations.live.get(op.id) as RolloutRun | undefined;
  const steps = () => run?.steps ?? [];
  let lastSteps = steps().map((s) => ({ ...s }));
  let lastDetails = new Map(run?.details ?? []);
  try {
    while (outcome === null) {
      if (rec.resumeError) throw rec.resumeError;
      run = app.operations.live.get(op.id) as RolloutRun | undefined;
      if (!run) {
        const ended = await app.operations.getOperation(op.id);
        if (ended && ENDED.has(ended.state)) {
          outcome = ended.state as RehearsalSample['outcome'];
          endedAt = ended.finishedAt ?? clock.now();
          lastSteps = await app.operations.getSteps(op.id);
          break;
        }
      } else {
        lastSteps = run.steps.map((s) => ({ ...s }));
        lastDetails = new Map(run.details);
        for (const [nodeId, detail] of run.details) {
          if (detail.blockers.length)
            rec.left.set(
              nodeId,
              detail.blockers.map((b) => b.id),
            );
          const atRestart = detail.phase === 'WAITING_FOR_RESTART' || detail.phase === 'WAITING_FOR_CONFIRM';
          if (atRestart) rec.reachedRestart.add(nodeId);
          const key = `${nodeId}@${detail.since}`;
          if (atRestart && !rec.restarted.has(key)) {
            rec.restarted.add(key);
            const ms = restartMs(nodeId);
            for (const s of d.sims) await s.restartNode(nodeId, ms);
            if (detail.phase === 'WAITING_FOR_CONFIRM') {
              const id = op.id;
              // Refused only when the rollout has moved on meanwhile (cancelled, given up): nothing to confirm then.
              clock.setTimer(ms, () => void app.rollouts.continueNode(id, nodeId).catch(() => {}));
            }
          }
        }
        if (run.snapshot.state === 'PAUSED') {
          const gaveUp = await onPause(d, rec, op.id, startedAt);
          if (gaveUp) {
            outcome = 'GAVE_UP';
            endedAt = clock.now();
            break;
          }
        }
      }
      const next = clock.nextDueAt();
      idle = next === null ? idle + 1 : 0;
      // Nothing due any more, looked at again after the work in flight settled: the rollout waits for what will never come.
      if (clock.now() - startedAt >= d.maxMs || idle > IDLE_LOOKS) {
        outcome = 'GAVE_UP';
        endedAt = clock.now();
        break;
      }
      // Straight to the next timer, then a look: restarts and resumes happen at the virtual instant they are due.
      await clock.advance(next === null ? 0 : Math.min(STEP_MS, Math.max(0, next - clock.now())));
    }
  } finally {
    unwatch();
  }
  recordFailures(lastSteps, rec, startedAt);
  const vmsAfter = new Map((await vmsNow()).map((vm) => [vm.id, vm.status]));
  return {
    seed: d.seed,
    durationMs: endedAt - startedAt,
    outcome,
    nodes: nodesOf(lastSteps, lastDetails, rec, startedAt),
    pauses: rec.pauses,
    vmsLeftStopped: [...runningBefore].filter((id) => vmsAfter.has(id) && vmsAfter.get(id) !== 'Running'),
    peakNodesOut: rec.peakOut,
    durationSources: { ...d.sources },
  };
}

/**
 * docs/rehearsal.md, pauses: a careful operator resumes once, with the override scoped to the
 * node the rollout paused on; a second pause on the same node ends the sample (GAVE_UP).
 * Returns true when the sample gives up.
 */
async function onPause(d: Drive, rec: SampleRecorder, operationId: string, startedAt: number): Promise<boolean> {
  const { app } = d;
  await app.operations.journal.flush();
  const event = await lastPause(d, operationId);
  if (!event || rec.handledPauses.has(event.seq)) return false;
  rec.handledPauses.add(event.seq);
  const payload = event.payload as { why?: string; node?: string; blockers?: { id: string; reasons: string[] }[]; failure?: string };
  const nodeId = payload.node ?? null;
  const run = app.operations.live.get(operationId) as RolloutRun | undefined;
  const step = run?.steps.find((s) => s.workloadId === nodeId);
  const detail = nodeId ? run?.details.get(nodeId) : undefined;
  const blockers = payload.blockers ?? detail?.blockers ?? [];
  const reason = detail?.phase === 'UNSAFE_TO_RESTART' ? 'UNSAFE_TO_RESTART' : (step?.reason ?? 'PAUSED');
  const workload = blockers[0]?.id ?? null;
  rec.pauses.push({
    key: `${reason}:${nodeId}:${workload}`,
    reason,
    nodeId,
    workload,
    message: payload.why ?? '',
    atMs: event.at - startedAt,
  });
  const scope = nodeId ?? '(rollout)';
  if (rec.resumedFor.has(scope)) return true;
  rec.resumedFor.add(scope);
  // Not awaited: the resume may start the next nodes' maintenances, whose first moves wait on
  // the sample's clock (a cordon's latency), and only this loop moves that clock on.
  app.rollouts.resumeRollout(operationId, nodeId ? { allowUnsafeRestartNodes: [nodeId] } : {}, META).catch((e: unknown) => {
    rec.resumeError ??= e;
  });
  return false;
}

async function lastPause(d: Drive, operationId: string): Promise<{ seq: number; at: number; payload: unknown } | null> {
  const row = await d.prisma.event.findFirst({ where: { operationId, type: 'ROLLOUT_PAUSED' }, orderBy: { seq: 'desc' } });
  return row && { seq: row.seq, at: row.at.getTime(), payload: JSON.parse(row.payload) as unknown };
}

/**
 * A node step that failed where the rollout did not pause (its last node, or pauseOnFailure
 * off) is reported as a pause too: it is what the operator would meet.
 */
function recordFailures(steps: readonly StepRecord[], rec: SampleRecorder, startedAt: number): void {
  for (const step of steps) {
    if (step.state !== 'FAILED' || rec.pauses.some((p) => p.nodeId === step.workloadId)) continue;
    const blockers = step.detail ? ((JSON.parse(step.detail) as { blockers?: { id: string }[] }).blockers ?? []) : [];
    if (blockers.length)
      rec.left.set(
        step.workloadId,
        blockers.map((b) => b.id),
      );
    const reason = step.reason ?? 'FAILED';
    const workload = blockers[0]?.id ?? null;
    rec.pauses.push({
      key: `${reason}:${step.workloadId}:${workload}`,
      reason,
      nodeId: step.workloadId,
      workload,
      message: `${step.workloadId}: ${step.error ?? 'failed'}`,
      atMs: (step.finishedAt ?? startedAt) - startedAt,
    });
  }
}

function nodesOf(
  steps: readonly { workloadId: string; startedAt: number | null; finishedAt: number | null }[],
  details: ReadonlyMap<string, { wave: number }>,
  rec: SampleRecorder,
  startedAt: number,
): SampleNode[] {
  return steps.map((s) => {
    const left = rec.left.get(s.workloadId) ?? [];
    const reached = rec.reachedRestart.has(s.workloadId) || left.length > 0;
    return {
      nodeId: s.workloadId,
      wave: (details.get(s.workloadId)?.wave ?? 0) + 1,
      startedAtMs: s.startedAt === null ? null : s.startedAt - startedAt,
      finishedAtMs: s.finishedAt === null ? null : s.finishedAt - startedAt,
      leftOnNode: left,
      safeToRestart: reached ? left.length === 0 : null,
    };
  });
}
