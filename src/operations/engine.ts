import { randomUUID } from 'node:crypto';
import type { ClusterBackend } from '../cluster/backend.ts';
import type { Clock } from '../cluster/clock.ts';
import type { ClusterEvent, ClusterNode } from '../cluster/types.ts';
import {
  ConflictError,
  NotFoundError,
  OperationLimitReachedError,
  PreconditionFailedError,
  UnavailableError,
} from '../domain/errors.ts';
import { checkAdmission, type AdmissionRefusal } from '../domain/storage/admission.ts';
import { planDrain } from '../domain/storage/drain-plan.ts';
import { planFill } from '../domain/storage/fill-plan.ts';
import type { PolicyEvent, SchedulingPolicy } from '../domain/storage/policy.ts';
import type { PlanNode } from '../domain/storage/shards.ts';
import type { EventBus } from '../events/bus.ts';
import type { Logger } from '../logger.ts';
import type { Prisma, PrismaClient } from '../store/index.ts';
import { countsOf } from './counts.ts';
import { Journal } from './journal.ts';
import { Mutex } from './mutex.ts';
import { PolicyStore } from './policy-store.ts';
import { compactPlan, createOperationWrite, mergeSteps, newOperation, snapshotOf, stepOf, stepsOfPlan } from './records.ts';
import type { OperationSettings } from '../config/schema.ts';
import { StorageRun, type JournalWriter, type RunHost } from './storage-run.ts';
import { policyTransitionWrites } from './policy-statements.ts';
import {
  ACTIVE_OPERATION_STATES,
  type OperationKind,
  type StorageKind,
  type OperationObserver,
  type OperationOutcome,
  type OperationSnapshot,
  type OperationState,
  type RequestMeta,
  type StepRecord,
} from './types.ts';

export interface EngineDeps {
  prisma: PrismaClient;
  backend: ClusterBackend;
  bus: EventBus;
  clock: Clock;
  log: Logger;
  settings: OperationSettings;
  observer: OperationObserver;
}

export interface OperationFilter {
  nodeId?: string;
  kind?: OperationKind;
  states?: OperationState[];
}

const POLICY_OF_KIND = { DRAIN: 'DRAINING', FILL: 'FILLING' } as const;
const END_EVENT: Record<StorageKind, Record<OperationOutcome, PolicyEvent['type']>> = {
  DRAIN: { SUCCEEDED: 'drainFinished', CANCELLED: 'drainCancelled', FAILED: 'drainFailed' },
  FILL: { SUCCEEDED: 'fillFinished', CANCELLED: 'fillCancelled', FAILED: 'fillFailed' },
};

function refusalError(refusal: AdmissionRefusal, nodeId: string, runningOperationId: string | null): Error {
  switch (refusal.error) {
    case 'NotFound':
      return new NotFoundError('node', nodeId);
    case 'Conflict':
      return new ConflictError(refusal.message, runningOperationId);
    case 'OperationLimitReached':
      return new OperationLimitReachedError(refusal.limit, refusal.message);
    case 'Unavailable':
      return new UnavailableError(refusal.message, nodeId);
    case 'PreconditionFailed':
      return new PreconditionFailedError(refusal.reason, refusal.message);
  }
}

/**
 * Storage drains and fills: admission (S3, S4), the persisted plan, runs, cancellation
 * (S5), re-attach handling (§2), configureNode, and resumption on start (§6).
 */
export class OperationEngine {
  readonly policies: PolicyStore;
  private readonly journal: Journal;
  private readonly mutex = new Mutex();
  private readonly runs = new Map<string, StorageRun>();
  /** Nodes whose storage drain belongs to another operation (a hyperconverged node's maintenance). */
  private readonly claimed = new Map<string, OperationSnapshot>();
  /** Snapshots of running operations of other kinds (VM maintenance), by operation id. */
  private readonly liveOthers = new Map<string, OperationSnapshot>();
  private nodes = new Map<string, ClusterNode>();
  private unwatch: (() => void) | null = null;
  private stopped = false;
  private readonly host: RunHost;

  constructor(private readonly deps: EngineDeps) {
    this.policies = new PolicyStore(deps.prisma);
    this.journal = new Journal(deps.prisma, (operations, steps) => this.published(operations, steps));
    this.host = {
      backend: deps.backend,
      clock: deps.clock,
      journal: this.journal,
      policies: this.policies,
      settings: deps.settings,
      observer: deps.observer,
      log: deps.log,
      planNodes: () => this.planNodes(),
      finishRun: (run, outcome, failure) => this.finishRun(run, outcome, failure),
    };
  }

  /** Loads policies and nodes, starts following the backend, and resumes interrupted operations. */
  async start(): Promise<void> {
    await this.policies.load();
    this.unwatch = this.deps.backend.watch((event) => this.onClusterEvent(event));
    await this.refreshNodes();
    for (const node of this.nodes.values()) this.deps.observer.policyChanged(node.id, this.policies.get(node.id));
    await this.resume();
  }

  /** Stops following the backend and writes what is queued; runs are left for the next start to resume. */
  async shutdown(): Promise<void> {
    this.stopped = true;
    this.unwatch?.();
    for (const run of this.runs.values()) run.halt();
    await this.journal.flush();
  }

  policyOf(nodeId: string): SchedulingPolicy {
    return this.policies.get(nodeId);
  }

  activeOperation(nodeId: string): OperationSnapshot | null {
    return this.runs.get(nodeId)?.snapshot ?? this.claimed.get(nodeId) ?? null;
  }

  get settings(): OperationSettings {
    return this.deps.settings;
  }

  startDrain(nodeId: string, meta: RequestMeta): Promise<OperationSnapshot> {
    return this.startOperation('DRAIN', nodeId, meta);
  }

  startFill(nodeId: string, meta: RequestMeta): Promise<OperationSnapshot> {
    return this.startOperation('FILL', nodeId, meta);
  }

  cancelDrain(nodeId: string, meta: RequestMeta): Promise<OperationSnapshot> {
    return this.cancel('DRAIN', nodeId, meta);
  }

  cancelFill(nodeId: string, meta: RequestMeta): Promise<OperationSnapshot> {
    return this.cancel('FILL', nodeId, meta);
  }

  /** Sets a node's policy by hand; refused while an operation runs on it (neon #8727). */
  configureNode(nodeId: string, policy: SchedulingPolicy, meta: RequestMeta): Promise<SchedulingPolicy> {
    return this.mutex.run(async () => {
      await this.requireNode(nodeId);
      const running = this.runs.get(nodeId)?.snapshot ?? this.claimed.get(nodeId);
      if (running) {
        throw new PreconditionFailedError(
          'OPERATION_RUNNING',
          `node ${nodeId} has a ${running.kind.toLowerCase()} running (operation ${running.id}); cancel it or wait for it to end`,
          running.id,
        );
      }
      await this.changePolicy(nodeId, { type: 'configure', policy }, null, { actor: meta.actor, reason: meta.reason });
      return policy;
    });
  }

  /** Runs `fn` alone among every admission and state change of every operation kind. */
  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    return this.mutex.run(fn);
  }

  /** Operations the framework serves but other runners drive (VM maintenance) register here while they run. */
  trackLive(snapshot: OperationSnapshot): void {
    this.liveOthers.set(snapshot.id, snapshot);
  }

  untrackLive(id: string): void {
    this.liveOthers.delete(id);
  }

  /** The group-commit journal every runner writes through. */
  get sharedJournal(): Journal {
    return this.journal;
  }

  private liveSnapshot(id: string): OperationSnapshot | undefined {
    return [...this.runs.values()].find((r) => r.snapshot.id === id)?.snapshot ?? this.liveOthers.get(id);
  }

  async getOperation(id: string): Promise<OperationSnapshot | null> {
    const live = this.liveSnapshot(id);
    if (live) return live;
    const row = await this.deps.prisma.operation.findUnique({ where: { id } });
    return row ? snapshotOf(row) : null;
  }

  /** Newest first. Live operations come from memory, the rest from the database. */
  async listOperations(filter: OperationFilter = {}): Promise<OperationSnapshot[]> {
    const rows = await this.deps.prisma.operation.findMany({
      where: {
        ...(filter.nodeId !== undefined && { nodeId: filter.nodeId }),
        ...(filter.kind !== undefined && { kind: filter.kind }),
        ...(filter.states?.length && { state: { in: filter.states } }),
      },
      orderBy: [{ createdAt: 'desc' }, { id: 'asc' }],
    });
    const live = new Map([...[...this.runs.values()].map((r) => [r.snapshot.id, r.snapshot] as const), ...this.liveOthers]);
    return rows.map((row) => live.get(row.id) ?? snapshotOf(row)).filter((op) => !filter.states?.length || filter.states.includes(op.state));
  }

  async getSteps(operationId: string, states?: StepRecord['state'][]): Promise<StepRecord[]> {
    await this.journal.flush();
    const [op, rows] = await Promise.all([
      this.deps.prisma.operation.findUnique({ where: { id: operationId }, select: { params: true, createdAt: true } }),
      this.deps.prisma.operationStep.findMany({ where: { operationId } }),
    ]);
    const steps = mergeSteps(op ? stepsOfPlan(op.params, op.createdAt.getTime()) : [], rows.map(stepOf));
    return states?.length ? steps.filter((s) => states.includes(s.state)) : steps;
  }

  /** Resolves when the node's current operation has ended (tests and scripts). */
  async settled(nodeId: string): Promise<void> {
    await this.runs.get(nodeId)?.done;
  }

  /**
   * The shard part of another operation (VM maintenance of a hyperconverged node): the
   * same admission (S3, except that the caller holds the operation), plan (D1–D3) and
   * policy transitions as a drain, run inside the owner's operation record.
   */
  async planEmbeddedDrain(nodeId: string, now: number): Promise<{ steps: StepRecord[]; refusal: Error | null; policyWrites: (operationId: string) => { writes: Prisma.PrismaPromise<unknown>[]; commit: () => void } }> {
    await this.refreshNodes();
    const planNodes = [...this.planNodes().values()];
    const refusal = checkAdmission('DRAIN', nodeId, { nodes: planNodes, runningOperationNodeIds: this.busyNodeIds(), operationLimit: Number.POSITIVE_INFINITY });
    const steps = refusal ? [] : await this.plan('DRAIN', nodeId, planNodes, now);
    return {
      steps,
      refusal: refusal ? refusalError(refusal, nodeId, (this.runs.get(nodeId)?.snapshot ?? this.claimed.get(nodeId))?.id ?? null) : null,
      policyWrites: (operationId) => {
        const from = this.policies.get(nodeId);
        const { to, writes } = policyTransitionWrites(this.deps.prisma, { nodeId, from, event: { type: 'drainAccepted' }, operationId, at: now });
        return { writes, commit: () => this.policies.applied(nodeId, to) };
      },
    };
  }

  /** Runs an embedded drain; `onEnd` hears how it ended, after the node's policy transition. */
  runEmbeddedDrain(owner: OperationSnapshot, steps: StepRecord[], journal: JournalWriter, onEnd: (outcome: OperationOutcome, failure: string | null) => void): StorageRun {
    this.claimed.set(owner.nodeId, owner);
    this.afterPolicyChange(owner.nodeId);
    const inner: OperationSnapshot = { ...owner, kind: 'DRAIN', counts: countsOf(steps), waitingOn: null, state: 'RUNNING' };
    const run = new StorageRun({ ...this.host, journal, finishRun: (r, outcome, failure) => this.endEmbeddedDrain(r, outcome, failure, onEnd) }, inner, steps);
    run.start().catch((e: unknown) => this.deps.log.error({ err: e, operation: owner.id }, 'embedded drain crashed'));
    return run;
  }

  releaseNode(nodeId: string): void {
    this.claimed.delete(nodeId);
  }

  /** configureNode for a caller that already holds `exclusive` (no operation check: the caller owns the node). */
  async setPolicyUnchecked(nodeId: string, policy: SchedulingPolicy, meta: RequestMeta): Promise<void> {
    await this.changePolicy(nodeId, { type: 'configure', policy }, null, { actor: meta.actor, reason: meta.reason });
  }

  /** startFill for a caller that already holds `exclusive`. */
  startFillUnlocked(nodeId: string, meta: RequestMeta): Promise<OperationSnapshot> {
    return this.admitAndStart('FILL', nodeId, meta);
  }

  private async endEmbeddedDrain(run: StorageRun, outcome: OperationOutcome, failure: string | null, onEnd: (outcome: OperationOutcome, failure: string | null) => void): Promise<void> {
    if (this.stopped) return;
    await this.mutex.run(async () => {
      const nodeId = run.snapshot.nodeId;
      if (failure !== 'NODE_STATE_CHANGED' && this.policies.get(nodeId) === 'DRAINING') {
        await this.policies.transition(nodeId, { type: END_EVENT.DRAIN[outcome] } as PolicyEvent, run.snapshot.id, this.deps.clock.now());
        this.afterPolicyChange(nodeId);
      }
      this.claimed.delete(nodeId);
    });
    onEnd(outcome, failure);
  }

  // --- internals

  private busyNodeIds(): string[] {
    return [...this.runs.keys(), ...this.claimed.keys()];
  }

  private planNodes(): Map<string, PlanNode> {
    const out = new Map<string, PlanNode>();
    for (const n of this.nodes.values()) out.set(n.id, { id: n.id, zone: n.zone, availability: n.availability, policy: this.policies.get(n.id) });
    return out;
  }

  private async refreshNodes(): Promise<ClusterNode[]> {
    const nodes = await this.deps.backend.listNodes();
    this.nodes = new Map(nodes.map((n) => [n.id, n]));
    return nodes;
  }

  private async requireNode(nodeId: string): Promise<ClusterNode> {
    const node = await this.deps.backend.getNode(nodeId);
    if (!node) throw new NotFoundError('node', nodeId);
    this.nodes.set(node.id, node);
    return node;
  }

  private startOperation(kind: StorageKind, nodeId: string, meta: RequestMeta): Promise<OperationSnapshot> {
    return this.mutex.run(() => this.admitAndStart(kind, nodeId, meta));
  }

  private async admitAndStart(kind: StorageKind, nodeId: string, meta: RequestMeta): Promise<OperationSnapshot> {
    const nodes = await this.refreshNodes();
    const planNodes = [...this.planNodes().values()];
    const runningIds = this.busyNodeIds();
    const refusal = checkAdmission(kind, nodeId, {
      nodes: planNodes,
      runningOperationNodeIds: runningIds,
      operationLimit: this.deps.settings.maxConcurrentOperations,
    });
    if (refusal) throw refusalError(refusal, nodeId, (this.runs.get(nodeId)?.snapshot ?? this.claimed.get(nodeId))?.id ?? null);
    if (!nodes.some((n) => n.id === nodeId)) throw new NotFoundError('node', nodeId);

    const now = this.deps.clock.now();
    const id = randomUUID();
    const steps = await this.plan(kind, nodeId, planNodes, now);
    const snapshot = newOperation({ id, kind: kind, nodeId, meta, steps, now });
    const { prisma } = this.deps;
    await this.policies.transition(nodeId, { type: kind === 'DRAIN' ? 'drainAccepted' : 'fillAccepted' }, id, now, [
      createOperationWrite(prisma, snapshot, { settings: this.deps.settings, plan: compactPlan(steps) }),
      prisma.event.create({
        data: { at: new Date(now), type: 'OPERATION_STARTED', nodeId, operationId: id, payload: JSON.stringify({ kind, actor: meta.actor, reason: meta.reason, counts: snapshot.counts }) },
      }),
    ]);
    this.deps.observer.operationStarted(kind);
    for (const s of steps) if (s.state === 'SKIPPED') this.deps.observer.stepFinished(kind, 'SKIPPED', s.reason, null);
    this.deps.log.info({ operation: id, node: nodeId, kind, planned: snapshot.counts.planned, skipped: snapshot.counts.skipped }, `${kind.toLowerCase()} of node ${nodeId} started`);
    this.afterPolicyChange(nodeId);
    this.launch(snapshot, steps);
    this.publishProgress(snapshot, steps);
    return snapshot;
  }

  /** D1–D3 for a drain (warmth is checked per move), F1–F3 for a fill: computed once, persisted. */
  private async plan(kind: StorageKind, nodeId: string, nodes: PlanNode[], now: number): Promise<StepRecord[]> {
    const { backend } = this.deps;
    const base = { workloadKind: 'shard' as const, action: 'CUT_OVER', error: null, startedAt: null };
    if (kind === 'DRAIN') {
      const shards = await backend.listShards({ attachedNodeId: nodeId });
      return planDrain(nodeId, shards, nodes).map((d, seq) => ({
        ...base,
        workloadId: d.shard.id,
        state: d.action === 'move' ? 'PLANNED' : 'SKIPPED',
        reason: d.action === 'skip' ? d.reason : null,
        fromNodeId: nodeId,
        toNodeId: d.action === 'move' ? d.toNodeId : null,
        seq,
        finishedAt: d.action === 'skip' ? now : null,
      }));
    }
    const shards = await backend.listShards();
    return planFill(nodeId, shards, nodes).map((m, seq) => ({
      ...base,
      workloadId: m.shardId,
      state: 'PLANNED',
      reason: m.why,
      fromNodeId: m.fromNodeId,
      toNodeId: m.toNodeId,
      seq,
      finishedAt: null,
    }));
  }

  private launch(snapshot: OperationSnapshot, steps: StepRecord[]): void {
    const run = new StorageRun(this.host, snapshot, steps);
    this.runs.set(snapshot.nodeId, run);
    run.start().catch((e: unknown) => this.deps.log.error({ err: e, operation: snapshot.id }, 'operation run crashed'));
  }

  private cancel(kind: StorageKind, nodeId: string, meta: RequestMeta): Promise<OperationSnapshot> {
    return this.mutex.run(async () => {
      await this.requireNode(nodeId);
      const run = this.runs.get(nodeId);
      if (!run || run.kind !== kind) {
        const what = kind === 'DRAIN' ? 'drain' : 'fill';
        throw new PreconditionFailedError(`NO_${kind}_IN_PROGRESS`, `no ${what} in progress on node ${nodeId}`);
      }
      if (run.snapshot.state === 'CANCELLING') return run.snapshot;
      const now = this.deps.clock.now();
      await this.deps.prisma.$transaction([
        this.deps.prisma.operation.update({ where: { id: run.snapshot.id }, data: { state: 'CANCELLING' } }),
        this.deps.prisma.event.create({
          data: { at: new Date(now), type: 'OPERATION_CANCELLING', nodeId, operationId: run.snapshot.id, payload: JSON.stringify({ actor: meta.actor, reason: meta.reason }) },
        }),
      ]);
      run.snapshot.state = 'CANCELLING';
      this.deps.log.info({ operation: run.snapshot.id, node: nodeId }, `${kind.toLowerCase()} of node ${nodeId} cancelling: moves in flight finish, nothing new starts`);
      this.publishProgress(run.snapshot, []);
      run.nudge();
      return run.snapshot;
    });
  }

  private async finishRun(run: StorageRun, outcome: OperationOutcome, failure: string | null): Promise<void> {
    if (this.stopped) return;
    await this.journal.flush();
    await this.mutex.run(async () => {
      const { snapshot } = run;
      const now = this.deps.clock.now();
      snapshot.state = outcome;
      snapshot.error = failure;
      snapshot.finishedAt = now;
      snapshot.waitingOn = null;
      snapshot.etaAt = null;
      const { prisma } = this.deps;
      const finalWrites = [
        prisma.operation.update({
          where: { id: snapshot.id },
          data: { state: outcome, error: failure, finishedAt: new Date(now), counts: JSON.stringify(snapshot.counts), waitingOn: null },
        }),
        prisma.event.create({
          data: { at: new Date(now), type: 'OPERATION_FINISHED', nodeId: snapshot.nodeId, operationId: snapshot.id, payload: JSON.stringify({ outcome, error: failure, counts: snapshot.counts }) },
        }),
      ];
      // D7 / §6: an operation that ended because the node's state changed leaves the policy alone.
      const kind = run.kind;
      const expected = POLICY_OF_KIND[kind];
      if (failure !== 'NODE_STATE_CHANGED' && this.policies.get(snapshot.nodeId) === expected) {
        await this.policies.transition(snapshot.nodeId, { type: END_EVENT[kind][outcome] } as PolicyEvent, snapshot.id, now, finalWrites);
        this.afterPolicyChange(snapshot.nodeId);
      } else {
        await prisma.$transaction(finalWrites);
      }
      this.runs.delete(snapshot.nodeId);
      this.deps.observer.operationFinished(snapshot.kind, outcome);
      const c = snapshot.counts;
      this.deps.log.info(
        { operation: snapshot.id, node: snapshot.nodeId, outcome, error: failure, moved: c.moved, skipped: c.skippedByReason, failed: c.failedByReason },
        `${snapshot.kind.toLowerCase()} of node ${snapshot.nodeId} ${outcome.toLowerCase()}${failure ? ` (${failure})` : ''}: ${c.moved} moved, ${c.skipped} skipped, ${c.failed} failed`,
      );
      this.publishProgress(snapshot, []);
    });
  }

  private async resume(): Promise<void> {
    const rows = await this.deps.prisma.operation.findMany({
      where: { state: { in: [...ACTIVE_OPERATION_STATES] }, kind: { in: ['DRAIN', 'FILL'] } },
      include: { steps: true },
    });
    for (const row of rows) {
      // A move that was in flight when the process died runs again: cut-overs are idempotent.
      const recorded = mergeSteps(stepsOfPlan(row.params, row.createdAt.getTime()), row.steps.map(stepOf));
      const steps = recorded.map((s) => (s.state === 'MOVING' ? { ...s, state: 'PLANNED' as const, startedAt: null } : s));
      const snapshot = { ...snapshotOf(row), counts: countsOf(steps), waitingOn: null };
      this.deps.log.info({ operation: row.id, node: row.nodeId, state: row.state, left: snapshot.counts.planned }, `resuming ${row.kind.toLowerCase()} of node ${row.nodeId}`);
      this.launch(snapshot, steps);
    }
  }

  private onClusterEvent(event: ClusterEvent): void {
    if (this.stopped) return;
    switch (event.type) {
      case 'nodeChanged':
        this.nodes.set(event.node.id, event.node);
        this.nudgeAll();
        break;
      case 'nodeRemoved':
        this.nodes.delete(event.nodeId);
        this.nudgeAll();
        break;
      case 'nodeReattached':
        void this.mutex
          .run(() => this.changePolicy(event.nodeId, { type: 'reattached' }, this.runs.get(event.nodeId)?.snapshot.id ?? null))
          .catch((e: unknown) => this.deps.log.error({ err: e, node: event.nodeId }, 're-attach handling failed'));
        break;
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
    this.runs.get(nodeId)?.nudge();
  }

  private nudgeAll(): void {
    for (const run of this.runs.values()) run.nudge();
  }

  private published(operations: OperationSnapshot[], steps: { operationId: string; step: StepRecord }[]): void {
    for (const op of operations) {
      const live = this.liveSnapshot(op.id) ?? op;
      this.publishProgress(live, steps.filter((s) => s.operationId === op.id).map((s) => s.step));
    }
  }

  publishProgress(operation: OperationSnapshot, steps: StepRecord[]): void {
    this.deps.bus.publish('operationProgress', operation.id, { operation: { ...operation, counts: structuredClone(operation.counts) }, steps });
  }
}
