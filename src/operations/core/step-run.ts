import type { Clock } from '../../cluster/clock.ts';
import {
  countTransition,
  type OperationCounts,
  type OperationOutcome,
  type OperationSnapshot,
  type StepRecord,
  type WaitingOn,
} from '../../domain/operations.ts';
import type { Logger } from '../../logger.ts';
import { estimateCompletion } from './eta.ts';
import type { JournalWriter } from './journal.ts';
import type { LiveRun } from './live-runs.ts';
import type { OperationObserver } from './observer.ts';

export type FinishedStepState = 'MOVED' | 'SKIPPED' | 'FAILED';

function sameIds(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** What every run needs of the engine that started it. */
export interface StepRunHost<R> {
  clock: Clock;
  journal: JournalWriter;
  observer: OperationObserver;
  log: Logger;
  /** Ends the operation (its kind's final transitions and record) once the run has stopped. */
  finish(run: R, outcome: OperationOutcome, failure: string | null): Promise<void>;
}

/**
 * The part every kind of operation run shares: a start deferred until the engine has
 * registered the run, `halt` and `nudge` with a wake-up that no nudge can slip past,
 * step transitions that keep counts, the ETA and the journal in step, a waiting-on
 * that is written only when it changes, and the hand-over to the engine at the end.
 *
 * A kind implements `run()` (its loop) and `stepEvent()` (how its step changes read in the
 * event log).
 */
export abstract class StepRun<R extends StepRun<R>> implements LiveRun {
  readonly done: Promise<void>;
  protected halted = false;
  /** Counts of this run's own steps; `snapshot.counts` is `totalCounts()`. */
  protected counts: OperationCounts;
  private begin!: () => void;
  private wakeUp: () => void = () => {};
  private firstStartAt: number | null = null;
  private finishedSteps = 0;

  constructor(
    protected readonly host: StepRunHost<R>,
    readonly snapshot: OperationSnapshot,
  ) {
    this.counts = snapshot.counts;
    this.done = new Promise<void>((resolve) => {
      this.begin = resolve;
    }).then(() => this.run());
  }

  /** The operation's node; null for a rollout. Per-node kinds narrow it. */
  get nodeId(): string | null {
    return this.snapshot.nodeId;
  }

  start(): Promise<void> {
    this.begin();
    return this.done;
  }

  /**
   * The gateway is shutting down, or the operation was ended from outside: start nothing,
   * record nothing more. A persisted record left RUNNING is resumed by the next start.
   */
  halt(): void {
    this.halted = true;
    this.onHalt();
    this.wakeUp();
  }

  /** Something the run waits on may have changed (node, policy, a cancel, a step's end): look again. */
  nudge(): void {
    this.wakeUp();
  }

  protected abstract run(): Promise<void>;

  protected abstract stepEvent(step: StepRecord, state: FinishedStepState, reason: string | null, error: string | null): { type: string; payload: object };

  protected onHalt(): void {}

  /** The node a step's events are about: the operation's own node, unless the kind says otherwise (a rollout's step is a node). */
  protected stepNodeId(_step: StepRecord): string | null {
    return this.nodeId;
  }

  /** The counts shown on the operation: by default this run's own. */
  protected totalCounts(): OperationCounts {
    return this.counts;
  }

  /** Call before looking at what to do, await after: a nudge in between resolves it, so none is lost. */
  protected nextWakeUp(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.wakeUp = resolve;
    });
  }

  /** Waits for `wakeUp` (from nextWakeUp) or at most `ms` of the cluster's clock. */
  protected async waitAtMost(wakeUp: Promise<void>, ms: number): Promise<void> {
    const cancel = this.host.clock.setTimer(ms, () => this.wakeUp());
    await wakeUp;
    cancel();
  }

  /** Runs one step's work in the background; a crash fails the step, and the run looks again when it ends. */
  protected launch(step: StepRecord, work: () => Promise<void>, settled?: () => void): void {
    void this.runStep(step, work, settled);
  }

  private async runStep(step: StepRecord, work: () => Promise<void>, settled: (() => void) | undefined): Promise<void> {
    try {
      await work();
    } catch (e) {
      this.host.log.error({ err: e, operation: this.snapshot.id, [step.workloadKind]: step.workloadId }, 'step crashed');
      this.finishStep(step, 'FAILED', 'INTERNAL', String(e));
    } finally {
      settled?.();
      this.wakeUp();
    }
  }

  /** The step is under way from now; the first one anchors the ETA. */
  protected startStep(step: StepRecord, change: Partial<StepRecord> = {}): void {
    if (this.halted) return;
    const now = this.host.clock.now();
    this.firstStartAt ??= now;
    const { state, reason } = step;
    step.state = 'MOVING';
    Object.assign(step, change);
    step.startedAt = now;
    this.changed(step, state, reason);
  }

  protected finishStep(step: StepRecord, state: FinishedStepState, reason: string | null, error: string | null): void {
    if (this.halted) return;
    const now = this.host.clock.now();
    const duration = step.startedAt === null ? null : now - step.startedAt;
    // Counted before the update, so that the ETA it computes includes this step.
    if (state !== 'SKIPPED') this.finishedSteps++;
    const before = step.state;
    const beforeReason = step.reason;
    step.state = state;
    // A step that keeps the reason it was planned for (e.g. a fill's HOME_AZ) passes null.
    if (reason !== null) step.reason = reason;
    step.error = error;
    step.finishedAt = now;
    this.changed(step, before, beforeReason);
    this.host.observer.stepFinished(this.snapshot.kind, state, reason, state === 'MOVED' ? duration : null);
    const { type, payload } = this.stepEvent(step, state, reason, error);
    this.host.journal.event({ type, nodeId: this.stepNodeId(step), operationId: this.snapshot.id, at: now, payload });
  }

  /** Steps the operation ended before: SKIPPED with `reason`, without an event each (the operation's end says why). */
  protected skipUnattempted(steps: StepRecord[], reason: string): void {
    for (const step of steps) {
      this.update(step, { state: 'SKIPPED', reason, finishedAt: this.host.clock.now() });
      this.host.observer.stepFinished(this.snapshot.kind, 'SKIPPED', reason, null);
    }
  }

  protected update(step: StepRecord, change: Partial<StepRecord>): void {
    if (this.halted) return;
    const { state, reason } = step;
    Object.assign(step, change);
    this.changed(step, state, reason);
  }

  /** After a step changed in place (it was `state`/`reason` before): counts, ETA and the journal follow. */
  private changed(step: StepRecord, state: StepRecord['state'], reason: string | null): void {
    countTransition(this.counts, { state, reason }, step);
    this.snapshot.counts = this.totalCounts();
    const { counts } = this.snapshot;
    this.snapshot.etaAt = estimateCompletion({
      now: this.host.clock.now(),
      firstMoveAt: this.firstStartAt,
      finished: this.finishedSteps,
      remaining: counts.planned + counts.moving,
    });
    this.host.journal.step(this.snapshot.id, step);
    this.host.journal.operation(this.snapshot);
  }

  /** Writes the waiting-on only when what it says changed (its `since` alone does not count). */
  protected setWaiting(waiting: WaitingOn): void {
    const prev = this.snapshot.waitingOn;
    if (prev && prev.kind === waiting.kind && prev.description === waiting.description && sameIds(prev.workloadIds, waiting.workloadIds)) return;
    this.snapshot.waitingOn = waiting;
    this.host.journal.operation(this.snapshot);
  }

  /** Re-publishes the operation's counts (e.g. a part's changed). */
  protected publishCounts(): void {
    if (this.halted) return;
    this.snapshot.counts = this.totalCounts();
    this.host.journal.operation(this.snapshot);
  }

  /** Hands the stopped run to its engine, which ends the operation. */
  protected end(outcome: OperationOutcome, failure: string | null): Promise<void> {
    return this.host.finish(this as unknown as R, outcome, failure);
  }
}
