import { randomInt } from 'node:crypto';
import type { Clock } from '../cluster/clock.ts';
import type { BackendSnapshot } from '../cluster/rehearsal.ts';
import type { OperationSettings, PluginEntry } from '../config/schema.ts';
import { ConflictError, InvalidInputError, LockkeeperError, NotFoundError, PreconditionFailedError } from '../domain/errors.ts';
import type { RequestMeta } from '../domain/operations.ts';
import { describeChanges, planChanges, type PlanBasis, type PlanChange } from '../domain/rehearsal/plan-changes.ts';
import type { HistoryRecord, RehearsalReport, RehearsalSample } from '../domain/rehearsal/types.ts';
import type { Logger } from '../logger.ts';
import type { RolloutInput, RolloutPlanView } from '../operations/rollouts/engine.ts';
import type { PendingWrite } from '../store/pending-write.ts';
import type { PrismaClient } from '../store/index.ts';
import type { RehearsalRequest } from './request.ts';
import type { RunInWorkerOptions } from './run-in-worker.ts';

export const REHEARSAL_STATES = ['RUNNING', 'SUCCEEDED', 'FAILED'] as const;
type RehearsalState = (typeof REHEARSAL_STATES)[number];

/** Bounds of `samples` (issue 33: a distribution, not one number; 200 bounds one rehearsal's cost). */
const SAMPLES = { default: 20, min: 1, max: 200 } as const;

/** What a gateway that stopped mid-rehearsal leaves: the next leader says so (the worker died with the process). */
const INTERRUPTED = 'interrupted by a restart';

/** A rehearsal as stored. */
export interface RehearsalRecord {
  id: string;
  state: RehearsalState;
  createdAt: Date;
  finishedAt: Date | null;
  actor: string;
  reason: string | null;
  input: RolloutInput;
  samples: number;
  seed: number;
  error: string | null;
  report: RehearsalReport | null;
  planBasis: PlanBasis;
  snapshotTakenAt: Date | null;
  /** The rollout started with it (startRollout(rehearsal:)). */
  rolloutId: string | null;
}

export interface RehearsalServiceDeps {
  prisma: PrismaClient;
  clock: Clock;
  log: Logger;
  /** The config the worker runs the rollout with: the plugin entries (the loaders replace their addresses) and the operations' settings. */
  config: () => { plugins: PluginEntry[]; operations: OperationSettings };
  /** startRollout's admission and plan (rolloutPlan): bad input is refused before anything runs. */
  plan: (input: RolloutInput) => Promise<RolloutPlanView>;
  /** The live cluster through the configured backends (`backend.snapshot`). */
  snapshot: () => Promise<BackendSnapshot[]>;
  /** Finished actions of earlier real runs (the durations are drawn from them). */
  history: () => Promise<HistoryRecord[]>;
  /** Runs the samples (runRehearsalInWorker in production). */
  runSamples: (request: RehearsalRequest, options: RunInWorkerOptions) => Promise<RehearsalSample[]>;
  aggregate: (samples: RehearsalSample[], waves: string[][]) => RehearsalReport;
  /** What the rollout's plan rests on, read now (planBasisOf); stored with the rehearsal and compared by startRollout(rehearsal:). */
  planBasis: (input: RolloutInput, plan: RolloutPlanView) => Promise<PlanBasis>;
}

interface RehearsalRow {
  id: string;
  createdAt: Date;
  finishedAt: Date | null;
  actor: string;
  reason: string | null;
  input: string;
  samples: number;
  seed: number;
  state: string;
  error: string | null;
  report: string | null;
  planBasis: string;
  snapshotTakenAt: Date | null;
  rolloutId: string | null;
}

const recordOf = (row: RehearsalRow): RehearsalRecord => ({
  ...row,
  state: row.state as RehearsalState,
  input: JSON.parse(row.input) as RolloutInput,
  report: row.report === null ? null : (JSON.parse(row.report) as RehearsalReport),
  planBasis: JSON.parse(row.planBasis) as PlanBasis,
});

/** Thrown by startRollout(rehearsal:) when the cluster changed since the rehearsal in a way that changes the plan. */
export class RehearsalStaleError extends LockkeeperError {
  readonly code = 'REHEARSAL_STALE';
  constructor(
    readonly rehearsalId: string,
    readonly changes: PlanChange[],
  ) {
    super(`rehearsal ${rehearsalId} is stale: ${describeChanges(changes)}; rehearse again`);
  }
}

/**
 * Rehearsals of rollouts (issue 33). `rehearse` admits the input as startRollout would,
 * reads the live cluster and the history, writes a RUNNING row and returns at once; the
 * samples run in a worker thread, and the report (or the error) is written when it answers.
 *
 * One rehearsal at a time per gateway: a rehearsal's samples take a core for a while, and
 * the engines' own work must keep its share of the machine. Rehearsals run where mutations
 * run, on the leader (over HTTP a stand-by forwards mutations to it, ha:R4); a rehearsal changes
 * nothing but its own row, so it needs no fencing. The state lives in the row: a leader that
 * starts (after a restart or a take-over) marks RUNNING rows FAILED, since their worker died
 * with the process that ran them.
 */
export class RehearsalService {
  private active: { id: string | null; abort: AbortController; done: Promise<void> } | null = null;
  private readonly progress = new Map<string, { done: number; total: number }>();

  constructor(private readonly deps: RehearsalServiceDeps) {}

  /** Marks the rehearsals left RUNNING by a gateway that stopped FAILED (called when this replica starts leading). */
  async recover(): Promise<number> {
    const ours = this.active?.id;
    const { count } = await this.deps.prisma.rehearsal.updateMany({
      where: { state: 'RUNNING', ...(ours && { id: { not: ours } }) },
      data: { state: 'FAILED', error: INTERRUPTED, finishedAt: new Date(this.deps.clock.now()) },
    });
    if (count) this.deps.log.warn({ rehearsals: count }, `${count} rehearsal(s) left running by a stopped gateway marked FAILED (${INTERRUPTED})`);
    return count;
  }

  /** Admits and starts a rehearsal; resolves once its RUNNING row is written, not when it ends. */
  async rehearse(input: RolloutInput, options: { samples?: number | null; seed?: number | null }, meta: RequestMeta): Promise<RehearsalRecord> {
    const samples = options.samples ?? SAMPLES.default;
    if (!Number.isInteger(samples) || samples < SAMPLES.min || samples > SAMPLES.max)
      throw new InvalidInputError('samples', String(samples), `samples must be an integer from ${SAMPLES.min} to ${SAMPLES.max}`);
    if (options.seed != null && (!Number.isSafeInteger(options.seed) || options.seed < 0))
      throw new InvalidInputError('seed', String(options.seed), 'seed must be a non-negative integer');
    // Recorded, so that the same rehearsal can be run again.
    const seed = options.seed ?? randomInt(2 ** 31 - SAMPLES.max);
    if (this.active) throw new ConflictError(`a rehearsal is already running${this.active.id ? ` (${this.active.id})` : ''}; one at a time per gateway`);
    const abort = new AbortController();
    let release!: () => void;
    const slot = { id: null as string | null, abort, done: new Promise<void>((r) => (release = r)) };
    this.active = slot;
    try {
      const plan = await this.deps.plan(input);
      const snapshots = await this.deps.snapshot();
      const history = await this.deps.history();
      const basis = await this.deps.planBasis(input, plan);
      const takenAt = snapshots.length ? Math.min(...snapshots.map((s) => s.takenAt)) : null;
      const row = (await this.deps.prisma.rehearsal.create({
        data: {
          actor: meta.actor,
          reason: meta.reason,
          input: JSON.stringify(input),
          samples,
          seed,
          state: 'RUNNING',
          planBasis: JSON.stringify(basis),
          createdAt: new Date(this.deps.clock.now()),
          snapshotTakenAt: takenAt === null ? null : new Date(takenAt),
        },
      })) as RehearsalRow;
      slot.id = row.id;
      const request: RehearsalRequest = { config: this.deps.config(), snapshots, history, input, samples, seed };
      this.deps.log.info(
        { rehearsal: row.id, samples, seed, nodes: plan.order.length },
        `rehearsal ${row.id} started: ${samples} sample(s) of ${plan.order.length} node(s)`,
      );
      void this.run(row.id, request, plan.waves, abort.signal).finally(() => {
        this.progress.delete(row.id);
        if (this.active === slot) this.active = null;
        release();
      });
      return recordOf(row);
    } catch (e) {
      this.active = null;
      release();
      throw e;
    }
  }

  private async run(id: string, request: RehearsalRequest, waves: string[][], signal: AbortSignal): Promise<void> {
    this.progress.set(id, { done: 0, total: request.samples });
    let outcome: { state: RehearsalState; report: string | null; error: string | null };
    try {
      const samples = await this.deps.runSamples(request, { signal, onProgress: (done, total) => this.progress.set(id, { done, total }) });
      outcome = { state: 'SUCCEEDED', report: JSON.stringify(this.deps.aggregate(samples, waves)), error: null };
    } catch (e) {
      outcome = { state: 'FAILED', report: null, error: e instanceof Error ? e.message : String(e) };
    }
    try {
      // Only a RUNNING row: a new leader may have marked it FAILED meanwhile (recover).
      await this.deps.prisma.rehearsal.updateMany({ where: { id, state: 'RUNNING' }, data: { ...outcome, finishedAt: new Date(this.deps.clock.now()) } });
      this.deps.log.info({ rehearsal: id, state: outcome.state, error: outcome.error }, `rehearsal ${id} ${outcome.state.toLowerCase()}`);
    } catch (e) {
      this.deps.log.warn({ err: e, rehearsal: id }, `rehearsal ${id}: storing its outcome failed; the next leader marks it FAILED`);
    }
  }

  /** Samples done so far of a rehearsal running here; null when none runs here under that id. */
  progressOf(id: string): { done: number; total: number } | null {
    return this.progress.get(id) ?? null;
  }

  /** Resolves when the rehearsal running here (if any) has stored its outcome. */
  async settled(): Promise<void> {
    await this.active?.done;
  }

  async get(id: string): Promise<RehearsalRecord | null> {
    const row = (await this.deps.prisma.rehearsal.findUnique({ where: { id } })) as RehearsalRow | null;
    return row ? recordOf(row) : null;
  }

  /** Newest first; `after` is the id of the last row of the previous page. */
  async list(first: number, after: string | null): Promise<{ rows: RehearsalRecord[]; hasNextPage: boolean; totalCount: number }> {
    const [rows, totalCount] = await Promise.all([
      this.deps.prisma.rehearsal.findMany({
        orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
        take: first + 1,
        ...(after !== null && { cursor: { id: after }, skip: 1 }),
      }) as Promise<RehearsalRow[]>,
      this.deps.prisma.rehearsal.count(),
    ]);
    return { rows: rows.slice(0, first).map(recordOf), hasNextPage: rows.length > first, totalCount };
  }

  /** The rehearsal a rollout was started with. */
  async ofRollout(rolloutId: string): Promise<RehearsalRecord | null> {
    const row = (await this.deps.prisma.rehearsal.findUnique({ where: { rolloutId } })) as RehearsalRow | null;
    return row ? recordOf(row) : null;
  }

  /**
   * startRollout(rehearsal:): the rehearsal must exist and have SUCCEEDED, and the plan must
   * rest on what it rested on then. Returns the write that records the rollout on the
   * rehearsal, committed with the rollout's start.
   */
  async checkStillValid(id: string, input: RolloutInput): Promise<(rolloutId: string) => PendingWrite> {
    const rehearsal = await this.get(id);
    if (!rehearsal) throw new NotFoundError('rehearsal', id);
    if (rehearsal.state !== 'SUCCEEDED')
      throw new PreconditionFailedError(
        'REHEARSAL_NOT_SUCCEEDED',
        `rehearsal ${id} is ${rehearsal.state}${rehearsal.error ? ` (${rehearsal.error})` : ''}; only a SUCCEEDED rehearsal can stand for a rollout`,
      );
    if (rehearsal.rolloutId) throw new ConflictError(`rehearsal ${id} already stands for rollout ${rehearsal.rolloutId}; rehearse again`, rehearsal.rolloutId);
    const plan = await this.deps.plan(input);
    const now = await this.deps.planBasis(input, plan);
    const changes = planChanges(rehearsal.planBasis, now);
    if (changes.length) throw new RehearsalStaleError(id, changes);
    return (rolloutId) => this.deps.prisma.rehearsal.update({ where: { id }, data: { rolloutId } });
  }

  /** Ends the rehearsal running here (the gateway stops): its row is left to the next leader's recover. */
  async stop(): Promise<void> {
    const slot = this.active;
    if (!slot) return;
    slot.abort.abort(new Error(INTERRUPTED));
    await slot.done;
  }
}
