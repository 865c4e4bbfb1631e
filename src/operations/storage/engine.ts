import { randomUUID } from 'node:crypto';
import type { ClusterEvent, ClusterNode } from '../../cluster/types.ts';
import { NotFoundError, PreconditionFailedError } from '../../domain/errors.ts';
import {
  countsOf,
  newOperation,
  nodeOf,
  type OperationKind,
  type OperationOutcome,
  type OperationSnapshot,
  type RequestMeta,
  type StepRecord,
  type StorageKind,
} from '../../domain/operations.ts';
import { checkAdmission } from '../../domain/storage/admission.ts';
import type { PolicyEvent, SchedulingPolicy } from '../../domain/storage/policy.ts';
import type { PlanNode } from '../../domain/storage/shards.ts';
import type { InterruptedOperation } from '../../store/operation-repository.ts';
import type { PendingWrite } from '../../store/pending-write.ts';
import type { PolicyTransition } from '../../store/policy-store.ts';
import type { JournalWriter } from '../core/journal.ts';
import { LIMITED_KINDS } from '../core/live-runs.ts';
import type { EngineDeps } from '../core/engine-deps.ts';
import { underKind } from '../core/observer.ts';
import type { OperationKindEngine, PartEngine, PartPlan } from '../core/operation-kind.ts';
import { RemainingReader, warnRemaining } from '../core/remaining-reader.ts';
import { planSteps } from './plan.ts';
import { refusalError } from './refusal.ts';
import { shardStepEvent, StorageRun, type StorageRunHost } from './run.ts';
import { planSkipEvents } from '../core/plan-skip-events.ts';
import { stallBasisOf } from '../core/stall-basis.ts';

const STORAGE_KINDS: readonly StorageKind[] = ['DRAIN', 'FILL'];
/** The node operations that hold a node and count toward `maxConcurrentOperations` with a drain or fill (neon:L4: a delete too). */
const NODE_OPERATION_KINDS: readonly OperationKind[] = ['DRAIN', 'FILL', 'DELETE'];
const POLICY_OF_KIND = { DRAIN: 'DRAINING', FILL: 'FILLING' } as const;
const END_EVENT: Record<StorageKind, Record<OperationOutcome, PolicyEvent['type']>> = {
  DRAIN: { SUCCEEDED: 'drainFinished', CANCELLED: 'drainCancelled', FAILED: 'drainFailed' },
  FILL: { SUCCEEDED: 'fillFinished', CANCELLED: 'fillCancelled', FAILED: 'fillFailed' },
};

/**
 * Storage drains and fills: admission (storage:S3, storage:S4), the persisted plan, runs, cancellation
 * (storage:S5), re-attach handling (storage:X2), configureNode, and resumption on start (storage:X1). A drain
 * also runs as a part of another operation (a hyperconverged node's maintenance).
 */
export class StorageEngine implements OperationKindEngine {
  readonly kinds = STORAGE_KINDS;
  readonly parts: PartEngine;
  private nodes = new Map<string, ClusterNode>();
  /** planNodes() as last built, and the policy version it was built at; dropped when a node changes. */
  private planNodesView: { map: ReadonlyMap<string, PlanNode>; policies: number } | null = null;
  /** Drains running as a part of another operation, by node. */
  private readonly partRuns = new Map<string, { run: StorageRun; onEnd: (outcome: OperationOutcome, failure: string | null) => void }>();
  private unwatch: (() => void) | null = null;
  private readonly host: StorageRunHost;
  private readonly remaining: RemainingReader;

  constructor(private readonly deps: EngineDeps) {
    this.remaining = new RemainingReader(deps.backend, deps.store.operations, deps.settings, deps.clock);
    this.host = {
      backend: deps.backend,
      clock: deps.clock,
      journal: deps.operations.journal,
      policies: deps.store.policies,
      settings: deps.settings,
      observer: deps.observer,
      log: deps.log,
      stall: stallBasisOf(deps.backend, deps.settings),
      planNodes: () => this.planNodes(),
      finish: (run, outcome, failure) => this.finishRun(run, outcome, failure),
    };
    this.parts = {
      plan: (nodeId, now) => this.planShardDrain(nodeId, now),
      run: (owner, steps, journal, onEnd) => this.runShardDrain(owner, steps, journal, onEnd),
      release: (nodeId, meta, options) => this.restoreNode(nodeId, meta, options?.refill ?? true),
    };
    deps.operations.register(this);
  }

  private get core() {
    return this.deps.operations;
  }

  private get policies() {
    return this.deps.store.policies;
  }

  /** Loads policies and nodes and starts following the backend. */
  async prepare(): Promise<boolean> {
    await this.policies.load();
    this.unwatch = this.deps.backend.watch((event) => this.onClusterEvent(event));
    await this.refreshNodes();
    for (const node of this.nodes.values()) this.deps.observer.policyChanged(node.id, this.policies.get(node.id));
    return true;
  }

  /** Another replica admitted the operation (ha:R2): its node's policy is what that replica wrote. */
  async adopt(operation: InterruptedOperation): Promise<void> {
    await this.policies.load();
    this.resume(operation);
    this.afterPolicyChange(nodeOf(operation.snapshot));
  }

  /** What other replicas changed meanwhile (configureNode, ha:R4): policies reloaded, changes published. Hold the lock. */
  async sync(): Promise<void> {
    const before = new Map([...this.nodes.keys()].map((id) => [id, this.policies.get(id)]));
    await this.policies.load();
    for (const [id, policy] of before) if (this.policies.get(id) !== policy) this.afterPolicyChange(id);
  }

  resume({ snapshot: stored, steps: recorded }: InterruptedOperation): void {
    // A move that was in flight when the process died runs again: cut-overs are idempotent.
    const steps = recorded.map((s) => (s.state === 'MOVING' ? { ...s, state: 'PLANNED' as const, startedAt: null } : s));
    const snapshot = { ...stored, counts: countsOf(steps), waitingOn: null };
    this.deps.log.info(
      { operation: snapshot.id, node: snapshot.nodeId, state: stored.state, left: snapshot.counts.planned },
      `resuming ${snapshot.kind.toLowerCase()} of node ${snapshot.nodeId}`,
    );
    this.core.launch(new StorageRun(this.host, snapshot, steps));
  }

  stop(): void {
    this.unwatch?.();
  }

  policyOf(nodeId: string): SchedulingPolicy {
    return this.policies.get(nodeId);
  }

  /** The drain, fill or delete on the node, or the operation whose part drains it. */
  activeOperation(nodeId: string): OperationSnapshot | null {
    return this.core.live.holder(nodeId, NODE_OPERATION_KINDS) ?? null;
  }

  /** The node operations running (drains, fills, deletes, maintenances), one entry each: what `maxConcurrentOperations` counts. */
  runningNodeOperations(): { kind: OperationKind; nodeId: string; operationId: string }[] {
    return this.busyNodeIds().map((nodeId) => {
      const op = this.core.live.holder(nodeId, LIMITED_KINDS)!;
      return { kind: op.kind, nodeId, operationId: op.id };
    });
  }

  /** Another engine changed a node's policy: metrics, subscribers and the node's run hear of it. */
  policyChanged(nodeId: string): void {
    this.afterPolicyChange(nodeId);
  }

  startDrain(nodeId: string, meta: RequestMeta): Promise<OperationSnapshot> {
    return this.core.admission(() => this.admitAndStart('DRAIN', nodeId, meta));
  }

  startFill(nodeId: string, meta: RequestMeta): Promise<OperationSnapshot> {
    return this.core.admission(() => this.admitAndStart('FILL', nodeId, meta));
  }

  /** `force`: do not wait for the moves in flight: they are recorded ABANDONED and the drain ends at once (issue 17). */
  cancelDrain(nodeId: string, meta: RequestMeta, options: { force?: boolean } = {}): Promise<OperationSnapshot> {
    return this.cancel('DRAIN', nodeId, meta, options.force ?? false);
  }

  cancelFill(nodeId: string, meta: RequestMeta, options: { force?: boolean } = {}): Promise<OperationSnapshot> {
    return this.cancel('FILL', nodeId, meta, options.force ?? false);
  }

  /** Sets a node's policy by hand; refused while an operation runs on it (neon #8727). */
  configureNode(nodeId: string, policy: SchedulingPolicy, meta: RequestMeta): Promise<SchedulingPolicy> {
    return this.core.admission(async () => {
      await this.requireNode(nodeId);
      if (this.deps.store.shared) await this.policies.load();
      const running = this.activeOperation(nodeId) ?? (await this.busyInDatabase()).find((r) => r.nodeId === nodeId);
      if (running) {
        throw new PreconditionFailedError(
          'OPERATION_RUNNING',
          `node ${nodeId} has a ${running.kind.toLowerCase()} running (operation ${running.id}); cancel it or wait for it to end`,
          running.id,
        );
      }
      // A durable request (ha:R4): recorded by whichever replica was asked, checked by the database against the others.
      const details = { actor: meta.actor, reason: meta.reason };
      const transition = this.policies.prepare(nodeId, { type: 'configure', policy }, null, this.deps.clock.now(), details);
      await this.deps.store.admit(transition.writes, { nodeId, conflictingKinds: STORAGE_KINDS, limit: null, policy: transition.from });
      transition.applied();
      this.deps.log.info(
        { node: nodeId, from: transition.from, to: transition.to, cause: 'configure' },
        `node ${nodeId} policy ${transition.from} -> ${transition.to}`,
      );
      if (transition.from !== transition.to) this.afterPolicyChange(nodeId);
      return policy;
    });
  }

  /**
   * neon:H5, ha:R2: the node is lost and a FAILOVER takes its shards: how its drain or fill
   * (or the drain part of its maintenance) ends FAILED with `NODE_OFFLINE` in the failover's
   * own transaction. `writes()` stops the run at once (moves in flight ABANDONED, the rest
   * skipped) and returns the end's writes (call it where the journal takes its queue:
   * Journal.flushWith); `committed()` applies the end once committed. Null when no drain or
   * fill holds the node. Hold the lock throughout.
   */
  async lostNodeEnd(nodeId: string): Promise<{ writes: () => PendingWrite[]; committed: () => void } | null> {
    const run = this.runOn(nodeId);
    const part = this.partRuns.get(nodeId);
    const storageRun = run instanceof StorageRun ? run : (part?.run ?? null);
    if (!storageRun) return null;
    const failure = 'NODE_OFFLINE';
    // A drain's end says what it left (a fill empties nothing): the backend is read before the synchronous part.
    const remaining = storageRun.kind === 'DRAIN' && !part ? await this.remaining.readForEnd(nodeId) : null;
    let after: (() => void) | null = null;
    const writes = (): PendingWrite[] => {
      storageRun.endForLostNode();
      const at = this.deps.clock.now();
      const transition = this.endTransition(storageRun, 'FAILED', failure, at);
      const applyTransition = () => {
        if (!transition) return;
        transition.applied();
        this.afterPolicyChange(nodeId);
      };
      if (part) {
        // The part ends inside its owner's record: its steps and its policy now, the owner hears of it after the commit.
        after = () => {
          applyTransition();
          this.forgetPart(nodeId);
          part.onEnd('FAILED', failure);
        };
        return transition?.writes ?? [];
      }
      const end = this.core.closing(storageRun, 'FAILED', failure, {
        at,
        remaining: remaining?.(storageRun.leftBecause()) ?? null,
        alsoWrite: transition?.writes ?? [],
        committed: applyTransition,
      });
      after = () => {
        end.committed();
        this.deps.log.warn(
          { operation: storageRun.snapshot.id, node: nodeId, outcome: 'FAILED', error: failure },
          `${storageRun.kind.toLowerCase()} of node ${nodeId} failed (${failure}): a failover took over its shards`,
        );
      };
      return end.writes;
    };
    return { writes, committed: () => after?.() };
  }

  /** Resolves when the node's current drain or fill has ended (tests and scripts). */
  async settled(nodeId: string): Promise<void> {
    await this.runOn(nodeId)?.done;
  }

  // --- a drain as a part of another operation

  /**
   * The shard part of another operation (VM maintenance of a hyperconverged node): the
   * same admission (storage:S3, except that the caller holds the operation), plan (storage:D1–D3) and
   * policy transitions as a drain, run inside the owner's operation record.
   */
  private async planShardDrain(nodeId: string, now: number): Promise<PartPlan | null> {
    const { backend } = this.deps;
    if (!backend.capabilities.shards) return null;
    if ((await backend.listShards({ attachedNodeId: nodeId })).length === 0) return null;
    await this.refreshNodes();
    const planNodes = [...this.planNodes().values()];
    const refusal = checkAdmission('DRAIN', nodeId, {
      nodes: planNodes,
      runningOperationNodeIds: this.busyNodeIds(),
      operationLimit: Number.POSITIVE_INFINITY,
    });
    const steps = refusal ? [] : await planSteps(backend, 'DRAIN', nodeId, planNodes, now);
    return {
      steps,
      refusal: refusal ? refusalError(refusal, nodeId, this.activeOperation(nodeId)?.id ?? null) : null,
      claim: (operationId) => this.policies.prepare(nodeId, { type: 'drainAccepted' }, operationId, now),
    };
  }

  private runShardDrain(
    owner: OperationSnapshot,
    steps: StepRecord[],
    journal: JournalWriter,
    onEnd: (outcome: OperationOutcome, failure: string | null) => void,
  ): StorageRun {
    this.core.live.addPart(nodeOf(owner), 'DRAIN', owner);
    this.afterPolicyChange(nodeOf(owner));
    const inner: OperationSnapshot = { ...owner, kind: 'DRAIN', counts: countsOf(steps), waitingOn: null, state: 'RUNNING' };
    const run = new StorageRun(
      {
        ...this.host,
        journal,
        observer: underKind(this.host.observer, owner.kind),
        finish: (r, outcome, failure) => this.endShardDrain(r, outcome, failure, onEnd),
      },
      inner,
      steps,
    );
    this.partRuns.set(nodeOf(owner), { run, onEnd });
    run.start().catch((e: unknown) => this.deps.log.error({ err: e, operation: owner.id }, 'embedded drain crashed'));
    return run;
  }

  private async endShardDrain(
    run: StorageRun,
    outcome: OperationOutcome,
    failure: string | null,
    onEnd: (outcome: OperationOutcome, failure: string | null) => void,
  ): Promise<void> {
    if (this.core.stopped) return;
    await this.core.exclusive(async () => {
      // The steps first, as finishRun does: a policy end committed before them left them open after a kill (storage:D7 then failed the resumed part).
      await this.core.journal.flush();
      const transition = this.endTransition(run, outcome, failure, this.deps.clock.now());
      if (transition) {
        await this.deps.store.commit(transition.writes);
        transition.applied();
        this.afterPolicyChange(run.nodeId);
      }
      if (this.partRuns.get(run.nodeId)?.run === run) this.forgetPart(run.nodeId);
    });
    onEnd(outcome, failure);
  }

  /** The node's drain part is over: it no longer holds the node. */
  private forgetPart(nodeId: string): void {
    this.partRuns.delete(nodeId);
    this.core.live.removePart(nodeId);
  }

  /** The owner is done with the node: its policy back to ACTIVE, then (with `refill`) a fill brings its shards back. */
  private async restoreNode(nodeId: string, meta: RequestMeta, refill: boolean): Promise<{ operationId: string | null; warning: string | null }> {
    const { backend } = this.deps;
    if (!backend.capabilities.shards) return { operationId: null, warning: null };
    // A part its owner left running (a maintenance that went to ERROR) stops here: the node is someone else's next.
    this.partRuns.get(nodeId)?.run.halt();
    this.forgetPart(nodeId);
    const policy = this.policies.get(nodeId);
    if (policy === 'DRAINING' || policy === 'PAUSE_FOR_RESTART')
      await this.changePolicy(nodeId, { type: 'configure', policy: 'ACTIVE' }, null, { actor: meta.actor, reason: meta.reason });
    if (!refill || (await backend.listShards({ secondaryNodeId: nodeId })).length === 0) return { operationId: null, warning: null };
    try {
      const fill = await this.admitAndStart('FILL', nodeId, meta);
      return { operationId: fill.id, warning: null };
    } catch (e) {
      const warning = `the fill of node ${nodeId}'s shards did not start: ${e instanceof Error ? e.message : String(e)}`;
      this.deps.log.warn({ node: nodeId }, warning);
      return { operationId: null, warning };
    }
  }

  // --- internals

  /** The drain or fill run on the node (not a part). */
  private runOn(nodeId: string) {
    return this.core.live.on(nodeId, STORAGE_KINDS);
  }

  private busyNodeIds(): string[] {
    return this.core.live.limitedNodes();
  }

  /**
   * Shared database (ha:R2): the storage operations running on any replica's admission, as
   * the database has them — drains and fills, and maintenances whose node drains its shards
   * (their part). Policies must be fresh. Empty on SQLite, where memory is the whole truth.
   */
  private async busyInDatabase(): Promise<{ id: string; kind: string; nodeId: string }[]> {
    if (!this.deps.store.shared) return [];
    const rows = await this.deps.store.operations.unended();
    const busy: { id: string; kind: string; nodeId: string }[] = [];
    for (const r of rows) {
      if (r.nodeId === null || r.state === 'PAUSED') continue;
      const storage = (STORAGE_KINDS as readonly string[]).includes(r.kind);
      if (storage || (r.kind === 'MAINTENANCE' && this.policies.get(r.nodeId) === 'DRAINING')) busy.push({ id: r.id, kind: r.kind, nodeId: r.nodeId });
    }
    return busy;
  }

  /** Node ids held for storage here or, on a shared database, by any replica's admission: one entry per operation. */
  private async busyNodesEverywhere(): Promise<{ nodeIds: string[]; operationOn: (nodeId: string) => string | null }> {
    const fromDb = await this.busyInDatabase();
    const here = this.busyNodeIds();
    const extra = fromDb.filter((r) => !this.core.live.get(r.id) && this.core.live.holder(r.nodeId)?.id !== r.id);
    return {
      nodeIds: [...here, ...extra.map((r) => r.nodeId)],
      operationOn: (nodeId) => this.activeOperation(nodeId)?.id ?? extra.find((r) => r.nodeId === nodeId)?.id ?? null,
    };
  }

  /** The nodes as the plans see them; built once per change of a node or a policy (every move of a drain reads it). */
  private planNodes(): ReadonlyMap<string, PlanNode> {
    const version = this.policies.version;
    if (this.planNodesView?.policies === version) return this.planNodesView.map;
    const map = new Map<string, PlanNode>();
    for (const n of this.nodes.values()) map.set(n.id, { id: n.id, zone: n.zone, availability: n.availability, policy: this.policies.get(n.id) });
    this.planNodesView = { map, policies: version };
    return map;
  }

  private setNode(node: ClusterNode): void {
    this.nodes.set(node.id, node);
    this.planNodesView = null;
  }

  private async refreshNodes(): Promise<ClusterNode[]> {
    const nodes = await this.deps.backend.listNodes();
    this.nodes = new Map(nodes.map((n) => [n.id, n]));
    this.planNodesView = null;
    return nodes;
  }

  private async requireNode(nodeId: string): Promise<ClusterNode> {
    const node = await this.deps.backend.getNode(nodeId);
    if (!node) throw new NotFoundError('node', nodeId);
    this.setNode(node);
    return node;
  }

  /**
   * storage:S3, storage:S4, and on a shared database ha:R2: the policies and running
   * operations of every replica's admissions read from the database, the decision checked
   * again by the database in the admitting transaction. The leader launches the run at once;
   * a stand-by leaves it to the leader, which adopts it when the commit's NOTIFY wakes it.
   */
  private async admitAndStart(kind: StorageKind, nodeId: string, meta: RequestMeta): Promise<OperationSnapshot> {
    const nodes = await this.refreshNodes();
    if (this.deps.store.shared) await this.policies.load();
    const busy = await this.busyNodesEverywhere();
    const planNodes = [...this.planNodes().values()];
    const operationLimit = this.deps.settings.maxConcurrentOperations;
    const refusal = checkAdmission(kind, nodeId, { nodes: planNodes, runningOperationNodeIds: busy.nodeIds, operationLimit });
    if (refusal) throw refusalError(refusal, nodeId, busy.operationOn(nodeId));
    if (!nodes.some((n) => n.id === nodeId)) throw new NotFoundError('node', nodeId);

    const now = this.deps.clock.now();
    const id = randomUUID();
    const steps = await planSteps(this.deps.backend, kind, nodeId, planNodes, now);
    const snapshot = newOperation({ id, kind, nodeId, meta, steps, now });
    const { store } = this.deps;
    const transition = this.policies.prepare(nodeId, { type: kind === 'DRAIN' ? 'drainAccepted' : 'fillAccepted' }, id, now);
    await store.admit(
      [
        store.operations.create(snapshot, { settings: this.deps.settings }, steps),
        store.events.append({
          at: now,
          type: 'OPERATION_STARTED',
          nodeId,
          operationId: id,
          payload: { kind, actor: meta.actor, reason: meta.reason, counts: snapshot.counts },
        }),
        ...planSkipEvents(steps, shardStepEvent, { at: now, nodeId, operationId: id }).map((e) => store.events.append(e)),
        ...transition.writes,
      ],
      { nodeId, conflictingKinds: STORAGE_KINDS, limit: { kinds: STORAGE_KINDS, max: operationLimit }, policy: transition.from },
    );
    transition.applied();
    this.deps.observer.operationStarted(kind);
    for (const s of steps) if (s.state === 'SKIPPED') this.deps.observer.stepFinished(kind, s, 'SKIPPED', s.reason, null);
    this.deps.log.info(
      { operation: id, node: nodeId, kind, planned: snapshot.counts.planned, skipped: snapshot.counts.skipped },
      `${kind.toLowerCase()} of node ${nodeId} started`,
    );
    this.afterPolicyChange(nodeId);
    if (this.core.leads) this.core.launch(new StorageRun(this.host, snapshot, steps));
    else this.deps.log.info({ operation: id, node: nodeId }, `${kind.toLowerCase()} of node ${nodeId} admitted on this stand-by: the leader runs it`);
    this.core.publishProgress(snapshot, steps);
    return snapshot;
  }

  private async cancel(kind: StorageKind, nodeId: string, meta: RequestMeta, force: boolean): Promise<OperationSnapshot> {
    const outcome = await this.core.admission(async () => {
      await this.requireNode(nodeId);
      const run = this.runOn(nodeId);
      const none = () => new PreconditionFailedError(`NO_${kind}_IN_PROGRESS`, `no ${kind === 'DRAIN' ? 'drain' : 'fill'} in progress on node ${nodeId}`);
      // Not running here: on a shared database the run is the leader's (or not yet adopted by it), so the cancel is a durable request (ha:R4).
      // (`force` needs the run itself: on a stand-by it is a plain cancel request; send it to the leader to abandon what is stuck.)
      if (!run && this.deps.store.shared) return { recorded: await this.requestCancel(kind, nodeId, meta, none), run: null, forced: false };
      if (!(run instanceof StorageRun) || run.snapshot.kind !== kind) throw none();
      if (run.snapshot.state !== 'CANCELLING')
        await this.core.changeState(run, 'CANCELLING', { type: 'OPERATION_CANCELLING', payload: { actor: meta.actor, reason: meta.reason, force } });
      if (!force) {
        this.deps.log.info(
          { operation: run.snapshot.id, node: nodeId },
          `${kind.toLowerCase()} of node ${nodeId} cancelling: moves in flight finish, nothing new starts`,
        );
        return { run, forced: false };
      }
      const abandoned = run.forceCancel();
      this.deps.log.warn(
        { operation: run.snapshot.id, node: nodeId, abandoned: abandoned.map((s) => s.workloadId) },
        `${kind.toLowerCase()} of node ${nodeId} cancelled with force: ${abandoned.length} cut-over(s) in flight abandoned (the backend may still finish them; each step's recheck says where its shard is)`,
      );
      return { run, forced: true };
    });
    if (!outcome.run) return outcome.recorded!;
    // The run stopped at once; it ends here rather than from its loop (which the halt left).
    if (outcome.forced) await this.finishRun(outcome.run, 'CANCELLED', 'FORCED');
    return outcome.run.snapshot;
  }

  /** ha:R4: CANCELLING and its event recorded in the database, in one statement; the leader's run hears of it at its next wake-up. */
  private async requestCancel(kind: StorageKind, nodeId: string, meta: RequestMeta, none: () => Error): Promise<OperationSnapshot> {
    const { store } = this.deps;
    const row = (await store.operations.unended()).find((r) => r.nodeId === nodeId && r.kind === kind);
    if (!row) throw none();
    if (row.state === 'RUNNING' && (await store.requestCancel(row.id, nodeId, this.deps.clock.now(), { actor: meta.actor, reason: meta.reason }))) {
      this.deps.log.info({ operation: row.id, node: nodeId }, `${kind.toLowerCase()} of node ${nodeId} cancelling: recorded for the leader to act on`);
    }
    const recorded = await store.operations.find(row.id);
    if (!recorded) throw none();
    return recorded;
  }

  /** storage:D7 / storage:X2: the policy transition that ends a run, unless the node's state changed under it. */
  private endTransition(run: StorageRun, outcome: OperationOutcome, failure: string | null, at: number): PolicyTransition | null {
    if (failure === 'NODE_STATE_CHANGED' || this.policies.get(run.nodeId) !== POLICY_OF_KIND[run.kind]) return null;
    return this.policies.prepare(run.nodeId, { type: END_EVENT[run.kind][outcome] } as PolicyEvent, run.snapshot.id, at);
  }

  private async finishRun(run: StorageRun, outcome: OperationOutcome, failure: string | null): Promise<void> {
    if (this.core.stopped) return;
    await this.core.journal.flush();
    // A drain's "done" is not "safe to restart": it says what it left on the node (a fill empties nothing).
    const remaining = run.kind === 'DRAIN' ? await this.remaining.atEnd(run.nodeId, run.leftBecause()) : null;
    await this.core.exclusive(async () => {
      const at = this.deps.clock.now();
      const transition = this.endTransition(run, outcome, failure, at);
      await this.core.close(run, outcome, failure, {
        at,
        remaining,
        alsoWrite: transition?.writes ?? [],
        committed: () => {
          if (!transition) return;
          transition.applied();
          this.afterPolicyChange(run.nodeId);
        },
      });
      const { snapshot } = run;
      const c = snapshot.counts;
      this.deps.log.info(
        { operation: snapshot.id, node: snapshot.nodeId, outcome, error: failure, moved: c.moved, skipped: c.skippedByReason, failed: c.failedByReason },
        `${snapshot.kind.toLowerCase()} of node ${snapshot.nodeId} ${outcome.toLowerCase()}${failure ? ` (${failure})` : ''}: ${c.moved} moved, ${c.skipped} skipped, ${c.failed} failed`,
      );
      if (remaining?.length) warnRemaining(this.deps.log, snapshot, remaining);
    });
  }

  private onClusterEvent(event: ClusterEvent): void | Promise<void> {
    if (this.core.stopped) return;
    switch (event.type) {
      case 'nodeChanged':
        this.setNode(event.node);
        this.nudgeAll();
        break;
      case 'nodeRemoved':
        this.nodes.delete(event.nodeId);
        this.planNodesView = null;
        this.nudgeAll();
        break;
      case 'nodeReattached':
        // Returned: the backend answers the re-attach once the policy change is recorded (neon:L3).
        return this.core
          .exclusive(() => this.changePolicy(event.nodeId, { type: 'reattached' }, this.activeOperation(event.nodeId)?.id ?? null))
          .catch((e: unknown) => this.deps.log.error({ err: e, node: event.nodeId }, 're-attach handling failed'));
      default:
        break;
    }
  }

  private async changePolicy(nodeId: string, event: PolicyEvent, operationId: string | null, details?: object): Promise<void> {
    const { from, to } = await this.policies.transition(nodeId, event, operationId, this.deps.clock.now(), [], details);
    if (event.type === 'reattached') this.deps.log.info({ node: nodeId, from, to }, `node ${nodeId} re-attached: policy ${from} -> ${to}`);
    else this.deps.log.info({ node: nodeId, from, to, cause: event.type }, `node ${nodeId} policy ${from} -> ${to}`);
    if (from !== to) this.afterPolicyChange(nodeId);
  }

  private afterPolicyChange(nodeId: string): void {
    this.deps.observer.policyChanged(nodeId, this.policies.get(nodeId));
    const node = this.nodes.get(nodeId);
    if (node) this.deps.bus.publish('nodeChanged', node);
    this.core.live.on(nodeId, NODE_OPERATION_KINDS)?.nudge();
  }

  private nudgeAll(): void {
    for (const run of this.core.live.all(STORAGE_KINDS)) run.nudge();
  }
}
