import type { OperationSnapshot, StepRecord } from '../../domain/operations.ts';
import type { LoggedEvent } from '../../store/event-log.ts';
import type { PendingWrite } from '../../store/pending-write.ts';
import type { Repositories } from '../../store/repositories.ts';

/** What a run writes through: the journal, or a proxy of it (a part run inside another operation). */
export type JournalWriter = Pick<Journal, 'step' | 'operation' | 'event'>;

/** How long changes gather before a background flush writes them (real time, not the cluster's clock). */
const GROUP_COMMIT_MS = 50;

/**
 * Group commit for the hot path of an operation. Step changes, operation counters and
 * event-log rows queue here and are written together, one transaction per flush, with
 * one multi-row statement per table. A drain of 10 000 shards thus costs a few hundred
 * transactions, not tens of thousands.
 *
 * Step writes may trail the backend by one flush: that is safe because every backend
 * action is idempotent, so a step found PLANNED or MOVING after a crash is simply run
 * again (the cut-over of a shard already at its destination resolves at once).
 */
export class Journal {
  /** By operation, then workload kind, then workload id (no key string to build at each change). */
  private steps = new Map<string, Map<string, Map<string, StepRecord>>>();
  private stepCount = 0;
  private operations = new Map<string, OperationSnapshot>();
  private events: LoggedEvent[] = [];
  private flushing: Promise<void> | null = null;
  private scheduled = false;
  /** Bumped by discard(): a batch of an older generation that fails is not queued again. */
  private generation = 0;

  constructor(
    private readonly store: Pick<Repositories, 'commitJournal'>,
    private readonly afterFlush: (operations: OperationSnapshot[], steps: { operationId: string; step: StepRecord }[]) => void,
  ) {}

  /** Queues the step; it is copied when the flush writes it (a step changed twice before a flush is written once, as last changed). */
  step(operationId: string, step: StepRecord): void {
    this.put(operationId, step, true);
    this.schedule();
  }

  /** Queues `step` (`replace`: also over one already queued); false when one was queued and kept. */
  private put(operationId: string, step: StepRecord, replace: boolean): boolean {
    let kinds = this.steps.get(operationId);
    if (!kinds) this.steps.set(operationId, (kinds = new Map()));
    let ids = kinds.get(step.workloadKind);
    if (!ids) kinds.set(step.workloadKind, (ids = new Map()));
    const had = ids.has(step.workloadId);
    if (had && !replace) return false;
    if (!had) this.stepCount++;
    ids.set(step.workloadId, step);
    return true;
  }

  /** Queues the operation's record; it is read (not copied) when the flush writes it. */
  operation(snapshot: OperationSnapshot): void {
    this.operations.set(snapshot.id, snapshot);
    this.schedule();
  }

  event(event: LoggedEvent): void {
    this.events.push(event);
    this.schedule();
  }

  /** Writes everything queued so far; resolves when it is committed. */
  flush(): Promise<void> {
    return this.flushWith(null);
  }

  /**
   * Writes everything queued together with the writes `also` returns, in one transaction.
   * `also` runs once no flush is in flight, just before the queue is taken, so the changes it
   * queues (a run's last step changes) are in that transaction with its own writes (the end
   * of the run, ha:R2). If that transaction fails, none of it is queued again: the records
   * stay as last committed, whole, for the next start to resume.
   */
  async flushWith(also: (() => PendingWrite[]) | null): Promise<void> {
    while (this.flushing) await this.flushing;
    const extra = also?.() ?? [];
    if (!this.stepCount && !this.operations.size && !this.events.length && !extra.length) return;
    // Copies: what is written (and then published) is the step as it is now, not as it will be.
    const steps: { operationId: string; step: StepRecord }[] = [];
    for (const [operationId, kinds] of this.steps)
      for (const ids of kinds.values()) for (const step of ids.values()) steps.push({ operationId, step: { ...step } });
    const operations = [...this.operations.values()];
    const events = this.events;
    this.steps = new Map();
    this.stepCount = 0;
    this.operations = new Map();
    this.events = [];
    this.flushing = this.write(steps, operations, events, extra).finally(() => {
      this.flushing = null;
    });
    await this.flushing;
    this.afterFlush(operations, steps);
  }

  /**
   * Forgets everything queued, and a failing batch in flight is not queued again: this
   * replica stopped leading (ha:L3), so its writes would be refused, and the next leader
   * resumes from what was committed.
   */
  discard(): void {
    this.generation++;
    this.steps = new Map();
    this.stepCount = 0;
    this.operations = new Map();
    this.events = [];
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    // A short window gathers the changes of many moves into one transaction; explicit
    // flushes (operation end, step reads) do not wait for it.
    setTimeout(() => {
      this.scheduled = false;
      this.flush().catch(() => {
        // A failed background flush is retried by the next explicit flush, which rethrows.
      });
    }, GROUP_COMMIT_MS).unref();
  }

  private async write(steps: { operationId: string; step: StepRecord }[], operations: OperationSnapshot[], events: LoggedEvent[], also: PendingWrite[]) {
    const generation = this.generation;
    try {
      await this.store.commitJournal({ steps, operations, events }, also);
    } catch (e) {
      if (generation !== this.generation || also.length) throw e;
      // Put the batch back so nothing is lost; newer queued values win over older ones.
      for (const s of steps) this.put(s.operationId, s.step, false);
      for (const op of operations) if (!this.operations.has(op.id)) this.operations.set(op.id, op);
      this.events = [...events, ...this.events];
      throw e;
    }
  }
}
