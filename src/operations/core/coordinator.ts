import { underAuthority, type LeaseAuthority } from '../../cluster/authority.ts';
import type { Clock } from '../../cluster/clock.ts';
import type { RemainingWorkload } from '../../domain/remaining.ts';
import { UnavailableError } from '../../domain/errors.ts';
import { unreachableDetail } from '../../store/database-availability.ts';
import type { OperationKind, OperationOutcome, OperationSnapshot, OperationState, RequestMeta, StepRecord } from '../../domain/operations.ts';
import type { EventBus } from '../../events/bus.ts';
import type { Logger } from '../../logger.ts';
import type { LoggedEvent } from '../../store/event-log.ts';
import type { OperationFilter } from '../../store/operation-repository.ts';
import type { PendingWrite } from '../../store/pending-write.ts';
import type { Repositories } from '../../store/repositories.ts';
import { Journal, type JournalWriter } from './journal.ts';
import { LiveRuns, type LiveRun } from './live-runs.ts';
import { Mutex } from './mutex.ts';
import type { OperationObserver } from './observer.ts';
import type { OperationKindEngine, PartPlan } from './operation-kind.ts';

/** How an operation ends, beyond its outcome (OperationCoordinator.close). */
export interface CloseOptions {
  at?: number;
  alsoWrite?: PendingWrite[];
  committed?: () => void;
  keepWaitingOn?: boolean;
  /** What the operation leaves on its node (drain, maintenance: domain/remaining.ts); any is also a WORKLOADS_REMAIN event. */
  remaining?: RemainingWorkload[] | null;
}

export interface CoordinatorDeps {
  store: Repositories;
  bus: EventBus;
  clock: Clock;
  log: Logger;
  observer: OperationObserver;
  /** False on a stand-by replica (ha:L2): it admits and changes nothing; default always true. */
  mayAct?: () => boolean;
  /** ha:L9: this replica's authority now; each run is launched under it, named as the run. Absent: runs are not scoped. */
  authority?: () => LeaseAuthority;
}

/**
 * What every kind of operation shares: one admission lock, the runs of every kind while
 * they run, the journal they write through, progress events, reads that prefer the live
 * record, and the start (resumption, kind by kind) and stop of them all.
 */
export class OperationCoordinator {
  readonly live = new LiveRuns();
  readonly journal: Journal;
  private readonly lock = new Mutex();
  private readonly engines: OperationKindEngine[] = [];
  private readonly progressWatchers = new Set<(operation: OperationSnapshot) => void>();
  private stopping = false;

  constructor(private readonly deps: CoordinatorDeps) {
    this.journal = new Journal(deps.store, (operations, steps) => this.published(operations, steps));
  }

  /** Engines call this when they are built; start() prepares and resumes them in this order. */
  register(engine: OperationKindEngine): void {
    this.engines.push(engine);
  }

  /** Prepares every engine and resumes the operations that were running when the process stopped (or the previous leader lost its lease: ha:L4). */
  async start(): Promise<void> {
    this.stopping = false;
    for (const engine of this.engines) {
      if (!(await engine.prepare())) continue;
      // One another replica admitted may already have been adopted meanwhile (ha:R2).
      for (const operation of await this.deps.store.operations.interrupted(engine.kinds)) if (!this.live.get(operation.snapshot.id)) engine.resume(operation);
    }
  }

  /** Whether this replica leads (always, alone on SQLite): only then does an admission launch its run here. */
  get leads(): boolean {
    return this.deps.mayAct?.() ?? true;
  }

  /**
   * The leader takes up what other replicas admitted or asked for (ha:R2, ha:R4), woken by
   * their NOTIFY or its poll: operations not ended that no run of it runs, of the engines
   * that adopt, are resumed as after a restart; a cancel recorded in the database reaches the
   * run. Under the admission lock, so that it never races this replica's own admissions.
   */
  async adopt(): Promise<void> {
    if (this.stopping || !this.leads) return;
    await this.lock.run(async () => {
      if (this.stopping || !this.leads) return;
      for (const engine of this.engines) await engine.sync?.();
      const rows = await this.deps.store.operations.unended();
      for (const row of rows) {
        const run = this.live.get(row.id);
        if (run && row.state === 'CANCELLING' && run.snapshot.state === 'RUNNING') {
          this.deps.log.info(
            { operation: row.id, node: row.nodeId },
            `${row.kind.toLowerCase()} of node ${row.nodeId} cancelling (recorded by another replica)`,
          );
          run.snapshot.state = 'CANCELLING';
          this.publishProgress(run.snapshot, []);
          run.nudge();
        }
      }
      for (const engine of this.engines) {
        if (!engine.adopt) continue;
        const ids = rows.filter((r) => engine.kinds.includes(r.kind) && !this.live.get(r.id)).map((r) => r.id);
        if (!ids.length) continue;
        for (const operation of await this.deps.store.operations.interrupted(engine.kinds, ids)) {
          if (this.stopping || this.live.get(operation.snapshot.id)) continue;
          await engine.adopt(operation);
        }
      }
    });
  }

  /**
   * Runs an admission (a start, a cancel, a policy change) alone among every admission and
   * state change of this replica. Unlike `exclusive`, also on a stand-by when the database
   * admits (ha:R2): the database then decides against every replica's admissions.
   */
  admission<T>(fn: () => Promise<T>): Promise<T> {
    if (!this.deps.store.shared) return this.exclusive(fn);
    return this.lock.run(fn);
  }

  /**
   * Read-your-writes for the event log: what this replica's runs have queued (group commit)
   * is written before a read, so a caller who saw a step end finds its event. A write that
   * fails (a deposed leader's, refused by the fence) leaves the read to what is committed.
   */
  async writeQueued(): Promise<void> {
    await this.journal.flush().catch((error: unknown) => this.deps.log.debug({ err: error }, 'queued writes not written before a read'));
  }

  /** Stops following the backend and writes what is queued; runs are left for the next start to resume. */
  async shutdown(): Promise<void> {
    this.stopping = true;
    for (const engine of this.engines) engine.stop();
    for (const run of this.live.all()) run.halt();
    await this.journal.flush();
  }

  /**
   * This replica stopped leading (ha:L3): halt every run at once, as on shutdown, and write
   * nothing more (what is queued is dropped: the fence would refuse it, and the next leader
   * resumes from what was committed). start() takes them up again if it leads again.
   */
  suspend(): void {
    this.stopping = true;
    for (const engine of this.engines) engine.stop();
    for (const run of this.live.all()) run.halt();
    this.live.clear();
    this.journal.discard();
  }

  /** True once shutdown (or suspend) began: runs that end now leave their record for the next start. */
  get stopped(): boolean {
    return this.stopping;
  }

  /** Runs `fn` alone among every admission and state change of every operation kind; refused on a stand-by. */
  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    if (this.deps.mayAct && !this.deps.mayAct()) {
      return Promise.reject(new UnavailableError('this replica is a stand-by: the leader runs operations (GET /control/v1/leader says which replica leads)'));
    }
    return this.lock.run(fn);
  }

  /** Registers the run and starts it. */
  launch(run: LiveRun): void {
    this.live.add(run);
    // ha:L9: the run's backend requests carry its epoch and id, and end with the epoch.
    const authority = this.deps.authority?.().forRun(run.snapshot.id);
    (authority ? underAuthority(authority, () => run.start()) : run.start()).catch((e: unknown) => {
      const fields = { err: e, operation: run.snapshot.id, kind: run.snapshot.kind };
      // The database went away under the run (issue 27): its committed record stays, and the
      // leader that has the database again resumes it (ha:L4). An outage, not a crash.
      const outage = unreachableDetail(e);
      if (outage === null) {
        this.deps.log.error(fields, 'operation run crashed');
        return;
      }
      // No longer live, so that adopt() resumes it once the database is back (server.ts).
      run.halt();
      this.live.remove(run);
      this.deps.log.warn({ ...fields, detail: outage }, 'operation run stopped: database unavailable; it resumes from its last commit');
    });
  }

  /**
   * Moves a running operation to another state (CANCELLING; a pause would be another) with
   * an event saying why; subscribers hear of it and the run looks again. Hold the lock.
   */
  async changeState(run: LiveRun, state: OperationState, event: Omit<LoggedEvent, 'nodeId' | 'operationId' | 'at'>): Promise<void> {
    const { snapshot } = run;
    const at = this.deps.clock.now();
    await this.deps.store.commit([
      this.deps.store.operations.setState(snapshot.id, state),
      this.deps.store.events.append({ ...event, at, nodeId: snapshot.nodeId, operationId: snapshot.id }),
    ]);
    snapshot.state = state;
    this.publishProgress(snapshot, []);
    run.nudge();
  }

  /**
   * Ends an operation: its final record and OPERATION_FINISHED, committed with `alsoWrite`
   * (the kind's own end transitions); then `committed`, the run leaves the registry and
   * subscribers hear the end. Hold the lock.
   */
  async close(run: LiveRun, outcome: OperationOutcome, error: string | null, options: CloseOptions = {}): Promise<void> {
    const end = this.closing(run, outcome, error, options);
    await this.deps.store.commit(end.writes);
    end.committed();
  }

  /**
   * `close` in two halves, for a caller that commits the end inside a transaction of its own
   * (a FAILOVER ends the lost node's drain in the transaction that admits it, ha:R2): the
   * writes, and what to do once they are committed. Hold the lock until then.
   */
  closing(run: LiveRun, outcome: OperationOutcome, error: string | null, options: CloseOptions = {}): { writes: PendingWrite[]; committed: () => void } {
    const { snapshot } = run;
    const now = options.at ?? this.deps.clock.now();
    const remaining = options.remaining ?? null;
    // The live record says "ended" only once that is committed: whoever looks meanwhile
    // (a rollout following this operation) must not act on an end whose transitions
    // (`alsoWrite`, `committed`) have not happened yet.
    const ended = { state: outcome, error, finishedAt: now, etaAt: null, waitingOn: options.keepWaitingOn ? snapshot.waitingOn : null, remaining };
    const { store } = this.deps;
    const warning = remaining?.length
      ? [
          store.events.append({
            at: now,
            type: 'WORKLOADS_REMAIN',
            nodeId: snapshot.nodeId,
            operationId: snapshot.id,
            payload: { outcome, safeToRestart: false, remaining },
          }),
        ]
      : [];
    const writes = [
      store.operations.finish({ ...snapshot, ...ended }),
      store.events.append({
        at: now,
        type: 'OPERATION_FINISHED',
        nodeId: snapshot.nodeId,
        operationId: snapshot.id,
        payload: { outcome, error, counts: snapshot.counts },
      }),
      ...warning,
      ...(options.alsoWrite ?? []),
    ];
    const committed = () => {
      Object.assign(snapshot, ended);
      options.committed?.();
      this.live.remove(run);
      this.deps.observer.operationFinished(snapshot.kind, outcome);
      this.publishProgress(snapshot, []);
    };
    return { writes, committed };
  }

  async getOperation(id: string): Promise<OperationSnapshot | null> {
    return this.live.get(id)?.snapshot ?? (await this.deps.store.operations.find(id));
  }

  /** Newest first. Live operations come from memory, the rest from the database. */
  async listOperations(filter: OperationFilter = {}): Promise<OperationSnapshot[]> {
    const stored = await this.deps.store.operations.list(filter);
    return stored.map((op) => this.live.get(op.id)?.snapshot ?? op).filter((op) => !filter.states?.length || filter.states.includes(op.state));
  }

  async getSteps(operationId: string, states?: StepRecord['state'][]): Promise<StepRecord[]> {
    await this.journal.flush();
    const steps = await this.deps.store.operations.steps(operationId);
    return states?.length ? steps.filter((s) => states.includes(s.state)) : steps;
  }

  publishProgress(operation: OperationSnapshot, steps: StepRecord[]): void {
    this.deps.bus.publish('operationProgress', operation.id, { operation: { ...operation, counts: structuredClone(operation.counts) }, steps });
    for (const watcher of this.progressWatchers) watcher(operation);
  }

  /** Hears the progress and the end of every operation (a rollout follows its nodes' operations); returns the unsubscribe function. */
  watchProgress(watcher: (operation: OperationSnapshot) => void): () => void {
    this.progressWatchers.add(watcher);
    return () => this.progressWatchers.delete(watcher);
  }

  /** The part `kind` would run on the node for another operation; null when it would run none. */
  planPart(kind: OperationKind, nodeId: string, now: number): Promise<PartPlan | null> {
    return this.partEngine(kind)?.plan(nodeId, now) ?? Promise.resolve(null);
  }

  /** Runs a part of `kind` under `owner`'s record; it holds the node for its kind until it ends or is released. */
  runPart(
    kind: OperationKind,
    owner: OperationSnapshot,
    steps: StepRecord[],
    journal: JournalWriter,
    onEnd: (outcome: OperationOutcome, failure: string | null) => void,
  ): LiveRun {
    const engine = this.partEngine(kind);
    if (!engine) throw new Error(`no engine runs ${kind} parts`);
    return engine.run(owner, steps, journal, onEnd);
  }

  /** The owner is done with the node: the part's engine undoes what it changed (and refills, unless `refill: false`). Hold the lock. */
  async releasePart(
    kind: OperationKind,
    nodeId: string,
    meta: RequestMeta,
    options: { refill?: boolean } = {},
  ): Promise<{ operationId: string | null; warning: string | null }> {
    return (await this.partEngine(kind)?.release(nodeId, meta, options)) ?? { operationId: null, warning: null };
  }

  private partEngine(kind: OperationKind) {
    return this.engines.find((e) => e.kinds.includes(kind))?.parts;
  }

  private published(operations: OperationSnapshot[], steps: { operationId: string; step: StepRecord }[]): void {
    for (const op of operations) {
      const live = this.live.get(op.id)?.snapshot ?? op;
      this.publishProgress(
        live,
        steps.filter((s) => s.operationId === op.id).map((s) => s.step),
      );
    }
  }
}
