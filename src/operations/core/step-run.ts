import { keepAuthority } from '../../cluster/authority.ts';
import type { Clock } from '../../cluster/clock.ts';
import {
  countTransition,
  type OperationCounts,
  type OperationOutcome,
  type OperationSnapshot,
  type StepRecord,
  type WaitingOn,
} from '../../domain/operations.ts';
import { etaAt, expectedDuration, FinishedDurations, overBy, stallsAt, type StalledStep } from '../../domain/stall.ts';
import type { Logger } from '../../logger.ts';
import type { JournalWriter } from './journal.ts';
import type { LiveRun } from './live-runs.ts';
import type { OperationObserver } from './observer.ts';
import type { StallBasis } from './stall-basis.ts';

export type FinishedStepState = 'MOVED' | 'STOPPED' | 'SKIPPED' | 'FAILED';

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
  /** Expected step durations for stall detection (domain/stall.ts); absent: the kind's steps are not watched (a rollout's are whole node operations, which watch their own). */
  stall?: StallBasis;
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
  private begin!: (run: () => Promise<void>) => void;
  private wakeUp: () => void = () => {};
  private firstStartAt: number | null = null;
  private finishedSteps = 0;
  /** Durations of the steps that finished with an outcome (MOVED, STOPPED): the median is the expected duration. */
  private readonly durations = new FinishedDurations();
  /** Steps past twice their expected duration, by workload id. */
  private readonly stalled = new Map<string, StalledStep>();
  /**
   * The other steps under way, by workload id, with when each is next looked at (`due`, as its own
   * timer would have been set); one timer for them all, at the earliest `due` (a timer per step
   * cost more than the rest of a zero-latency move's bookkeeping).
   */
  private readonly watched = new Map<string, { step: StepRecord; startedAt: number; due: number }>();
  private stallTimer: { at: number; cancel: () => void } | null = null;
  /** What the kind last said it waits on, before the stalls are added to it. */
  private waiting: WaitingOn | null = null;

  constructor(
    protected readonly host: StepRunHost<R>,
    readonly snapshot: OperationSnapshot,
  ) {
    this.counts = snapshot.counts;
    this.done = new Promise<() => Promise<void>>((resolve) => {
      this.begin = resolve;
    }).then((run) => run());
  }

  /** The operation's node; null for a rollout. Per-node kinds narrow it. */
  get nodeId(): string | null {
    return this.snapshot.nodeId;
  }

  start(): Promise<void> {
    // ha:L9: the loop runs under the authority it is started under (its epoch and run), not the constructor's.
    this.begin(keepAuthority(() => this.run()));
    return this.done;
  }

  /**
   * The gateway is shutting down, or the operation was ended from outside: start nothing,
   * record nothing more. A persisted record left RUNNING is resumed by the next start.
   */
  halt(): void {
    this.halted = true;
    this.stallTimer?.cancel();
    this.stallTimer = null;
    this.watched.clear();
    this.onHalt();
    this.wakeUp();
  }

  /**
   * `force: true` on a cancel or a disable (issue 17): the steps in flight are recorded
   * ABANDONED with their last known state, and the run stops at once (halted: nothing more
   * is recorded, whatever the backend answers later). The caller ends the operation.
   * `abandonReason` says why on each abandoned step: FORCED, or NODE_OFFLINE when a failover
   * took the node's shards (neon:H5).
   */
  abandonInFlight(
    inFlight: StepRecord[],
    lastKnown: (step: StepRecord) => string,
    unattempted: StepRecord[] = [],
    skipReason = 'CANCELLED',
    abandonReason = 'FORCED',
  ): StepRecord[] {
    // A step still checking (e.g. a secondary's warmth) had not asked the backend for anything: not attempted.
    this.skipUnattempted([...unattempted, ...inFlight.filter((s) => s.state === 'PLANNED')], skipReason);
    const abandoned: StepRecord[] = [];
    for (const step of inFlight) {
      if (step.state !== 'MOVING') continue;
      const stall = this.stalled.get(step.workloadId);
      const note = `${lastKnown(step)}${stall ? `; stalled, ${Math.round(overBy(stall, this.host.clock.now()) / 1000)} s over its expected ${stall.expectedMs} ms` : ''}`;
      this.update(step, { state: 'ABANDONED', reason: abandonReason, error: note, finishedAt: this.host.clock.now() });
      this.host.journal.event({
        type: 'STEP_ABANDONED',
        nodeId: this.stepNodeId(step),
        operationId: this.snapshot.id,
        at: this.host.clock.now(),
        payload: { [step.workloadKind]: step.workloadId, action: step.action, from: step.fromNodeId, to: step.toNodeId, lastKnown: note },
      });
      this.host.observer.stepAbandoned(this.snapshot.kind, step);
      abandoned.push({ ...step });
    }
    this.stalled.clear();
    this.snapshot.waitingOn = null;
    this.halt();
    return abandoned;
  }

  /** Something the run waits on may have changed (node, policy, a cancel, a step's end): look again. */
  nudge(): void {
    this.wakeUp();
  }

  protected abstract run(): Promise<void>;

  protected abstract stepEvent(step: StepRecord, state: FinishedStepState, reason: string | null, error: string | null): { type: string; payload: object };

  protected onHalt(): void {}

  /** A step that legitimately waits without end (e.g. a VM stopped until its node's maintenance ends) is never stalled. */
  protected stallExempt(_step: StepRecord): boolean {
    return false;
  }

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
    this.update(step, { state: 'MOVING', ...change, startedAt: now });
    this.watchForStall(step);
  }

  /** The step's expected duration now: the median of finished steps, else the backend's declared latency, else the configured default. */
  private expectedMs(step: StepRecord, basis: StallBasis): number {
    const finishedMedian = this.durations.median();
    // The declared latency is asked for only when it is used (it is a backend call).
    return expectedDuration({ finishedMedian, declaredMs: finishedMedian === null ? basis.declaredMs(step) : null, defaultMs: basis.defaultMs });
  }

  /** Looks at the step again when it would be stalled; the expected duration may have changed by then (more steps finished). */
  private watchForStall(step: StepRecord): void {
    const basis = this.host.stall;
    if (!basis || step.startedAt === null || this.halted) return;
    const due = stallsAt(step.startedAt, this.expectedMs(step, basis));
    // Re-inserted: the map stays in start order.
    this.watched.delete(step.workloadId);
    this.watched.set(step.workloadId, { step, startedAt: step.startedAt, due });
    this.armStallTimer(due);
  }

  private armStallTimer(at: number): void {
    if (this.stallTimer && this.stallTimer.at <= at) return;
    this.stallTimer?.cancel();
    const { clock } = this.host;
    this.stallTimer = {
      at,
      cancel: clock.setTimer(Math.max(0, at - clock.now()), () => {
        this.stallTimer = null;
        this.lookForStalls();
      }),
    };
  }

  /** Each watched step whose time came: stalled, or looked at again later if its expected duration grew meanwhile. */
  private lookForStalls(): void {
    const basis = this.host.stall;
    if (this.halted || !basis) return;
    const now = this.host.clock.now();
    let next = Number.POSITIVE_INFINITY;
    for (const [id, watch] of this.watched) {
      if (watch.due > now) {
        next = Math.min(next, watch.due);
        continue;
      }
      const { step, startedAt } = watch;
      if (step.state !== 'MOVING' || step.startedAt !== startedAt || this.stallExempt(step)) {
        this.watched.delete(id);
        continue;
      }
      const expected = this.expectedMs(step, basis);
      const due = stallsAt(startedAt, expected);
      if (now < due) {
        watch.due = due;
        next = Math.min(next, due);
        continue;
      }
      this.watched.delete(id);
      this.markStalled(step, expected);
      if (this.halted) return;
    }
    if (next < Number.POSITIVE_INFINITY) this.armStallTimer(next);
  }

  private markStalled(step: StepRecord, expectedMs: number): void {
    const now = this.host.clock.now();
    const stall: StalledStep = { workloadKind: step.workloadKind, workloadId: step.workloadId, action: step.action, since: step.startedAt ?? now, expectedMs };
    this.stalled.set(step.workloadId, stall);
    this.host.observer.stepStalled(this.snapshot.kind, step);
    const overMs = overBy(stall, now);
    this.host.journal.event({
      type: 'STEP_STALLED',
      nodeId: this.stepNodeId(step),
      operationId: this.snapshot.id,
      at: now,
      payload: { [step.workloadKind]: step.workloadId, action: step.action, since: new Date(stall.since).toISOString(), expectedMs, overMs },
    });
    this.host.log.warn(
      { operation: this.snapshot.id, [step.workloadKind]: step.workloadId, expectedMs, overMs },
      `${step.workloadKind} ${step.workloadId}: ${step.action.toLowerCase()} stalled (running ${Math.round((now - stall.since) / 1000)} s, expected ${expectedMs} ms)`,
    );
    this.showWaitingWithStalls();
  }

  private unwatch(step: StepRecord): void {
    // The shared timer stays: it finds nothing due for this step and is set again for the others.
    this.watched.delete(step.workloadId);
    if (this.stalled.delete(step.workloadId)) this.showWaitingWithStalls();
  }

  protected finishStep(step: StepRecord, state: FinishedStepState, reason: string | null, error: string | null): void {
    if (this.halted) return;
    const now = this.host.clock.now();
    const duration = step.startedAt === null ? null : now - step.startedAt;
    // Counted before the update, so that the ETA it computes includes this step.
    if (state !== 'SKIPPED') this.finishedSteps++;
    if ((state === 'MOVED' || state === 'STOPPED') && duration !== null) this.durations.add(duration);
    this.unwatch(step);
    // A step that keeps the reason it was planned for (e.g. a fill's HOME_AZ) passes null.
    this.update(step, { state, reason: reason ?? step.reason, error, finishedAt: now });
    this.host.observer.stepFinished(this.snapshot.kind, step, state, reason, state === 'MOVED' ? duration : null);
    const { type, payload } = this.stepEvent(step, state, reason, error);
    this.host.journal.event({ type, nodeId: this.stepNodeId(step), operationId: this.snapshot.id, at: now, payload });
  }

  /** Steps the operation ended before: SKIPPED with `reason`, without an event each (the operation's end says why). */
  protected skipUnattempted(steps: StepRecord[], reason: string): void {
    for (const step of steps) {
      this.update(step, { state: 'SKIPPED', reason, finishedAt: this.host.clock.now() });
      this.host.observer.stepFinished(this.snapshot.kind, step, 'SKIPPED', reason, null);
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
    const now = this.host.clock.now();
    this.snapshot.etaAt = etaAt({
      now,
      firstStartAt: this.firstStartAt ?? now,
      finished: this.finishedSteps,
      planned: counts.planned,
      moving: counts.moving,
      stalled: this.stalled.size,
    }).at;
    this.host.journal.step(this.snapshot.id, step);
    this.host.journal.operation(this.snapshot);
  }

  /** Writes the waiting-on only when what it says changed (its `since` alone does not count). */
  protected setWaiting(waiting: WaitingOn): void {
    const prev = this.waiting;
    const shown = this.snapshot.waitingOn;
    const same = prev && prev.kind === waiting.kind && prev.description === waiting.description && sameIds(prev.workloadIds, waiting.workloadIds);
    if (same && shown && (shown === prev || shown.stalled)) return;
    this.waiting = waiting;
    this.showWaitingWithStalls();
  }

  /** The kind's waiting-on with the stalled steps named first (they are what an operator must look at). */
  private showWaitingWithStalls(): void {
    if (this.halted) return;
    const stalled = [...this.stalled.values()];
    if (!stalled.length) {
      if (this.snapshot.waitingOn?.stalled || this.waiting) this.snapshot.waitingOn = this.waiting;
      this.host.journal.operation(this.snapshot);
      return;
    }
    const base = this.waiting;
    const named = stalled
      .slice(0, 5)
      .map((s) => `${s.workloadKind} ${s.workloadId} (${s.action.toLowerCase()} since ${new Date(s.since).toISOString()}, expected ${s.expectedMs} ms)`);
    const ids = stalled.map((s) => s.workloadId);
    this.snapshot.waitingOn = {
      kind: base?.kind ?? 'MOVES_IN_FLIGHT',
      description: `${base ? `${base.description}; ` : ''}STALLED: ${stalled.length} step(s) past twice their expected duration: ${named.join(', ')}`,
      nodeId: base?.nodeId ?? this.nodeId,
      workloadIds: [...ids, ...(base?.workloadIds ?? []).filter((id) => !ids.includes(id))].slice(0, 20),
      since: Math.min(...stalled.map((s) => s.since)),
      stalled,
    };
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
