import { randomUUID } from 'node:crypto';
import { shardSideAvailability, type ClusterEvent, type ClusterNode, type NodeAvailability, type NodeUpcall } from '../../cluster/types.ts';
import { isBackendError } from '../../cluster/errors.ts';
import { NotFoundError, PreconditionFailedError, UnavailableError } from '../../domain/errors.ts';
import { countsOf, newOperation, type OperationOutcome, type OperationSnapshot, type RequestMeta, type StepRecord } from '../../domain/operations.ts';
import { failoverRefusal, needsFreshNode, planFailover } from '../../domain/storage/failover-plan.ts';
import type { PlanNode } from '../../domain/storage/shards.ts';
import type { AuditLog } from '../../store/audit-log.ts';
import type { InterruptedOperation } from '../../store/operation-repository.ts';
import type { EngineDeps } from '../core/engine-deps.ts';
import type { OperationKindEngine } from '../core/operation-kind.ts';
import type { StorageEngine } from '../storage/engine.ts';
import { failoverStepEvent, FailoverRun, placementDetail, type FailoverRunHost } from './run.ts';
import { planSkipEvents } from '../core/plan-skip-events.ts';

const KINDS = ['FAILOVER'] as const;
/**
 * neon:H9: how soon a failover that could not be admitted, or that left shards attached to
 * an OFFLINE node, is tried again (Neon's heartbeat interval: the loss would be seen again then).
 */
const FAILOVER_RETRY_MS = 5_000;
/** Failovers start by themselves: the audit log and the operation name this actor. */
const SYSTEM_ACTOR = 'system';

/**
 * Failover of a lost node (neon:H5) as operations of kind FAILOVER, for every backend that
 * serves shards and can fail them over (`backend.failover`). When the backend declares a
 * node lost (`nodeLost`) — by its own heartbeats (neon:H3) or an operator's config (neon:H8) — its
 * attached shards get a new attached node each, unless it is the only node (H5b) or no
 * node may schedule (H5c). Never refused or queued by `maxConcurrentOperations`: the drain
 * or fill running on the lost node ends FAILED (`NODE_OFFLINE`) in the transaction that admits
 * the failover (ha:R2), and its shards are the failover's.
 */
export class FailoverEngine implements OperationKindEngine {
  readonly kinds = KINDS;
  private readonly nodes = new Map<string, ClusterNode>();
  private unwatch: (() => void) | null = null;
  private readonly host: FailoverRunHost;

  constructor(private readonly deps: EngineDeps & { storage: StorageEngine; audit: AuditLog }) {
    this.host = {
      backend: deps.backend,
      concurrency: deps.settings.maxConcurrentFailovers,
      clock: deps.clock,
      journal: deps.operations.journal,
      observer: deps.observer,
      log: deps.log,
      planNodes: () => this.planNodes(),
      planNode: (id) => this.planNode(id),
      finish: (run, outcome, failure) => this.finish(run, outcome, failure),
    };
    deps.operations.register(this);
  }

  private get core() {
    return this.deps.operations;
  }

  async prepare(): Promise<boolean> {
    const { backend } = this.deps;
    if (!backend.capabilities.shards || !backend.failover) return false;
    this.unwatch = backend.watch((event) => this.onClusterEvent(event));
    for (const n of await backend.listNodes()) this.nodes.set(n.id, n);
    return true;
  }

  resume({ snapshot: stored, steps: recorded }: InterruptedOperation): void {
    const steps = recorded.map((s) => (s.state === 'MOVING' ? { ...s, state: 'PLANNED' as const, startedAt: null } : s));
    const snapshot = { ...stored, counts: countsOf(steps), waitingOn: null };
    this.deps.log.info({ operation: snapshot.id, node: snapshot.nodeId, left: snapshot.counts.planned }, `resuming the failover of node ${snapshot.nodeId}`);
    this.core.launch(new FailoverRun(this.host, snapshot, steps));
  }

  stop(): void {
    this.unwatch?.();
    this.cancelSweep?.();
    this.cancelSweep = null;
  }

  private cancelSweep: (() => void) | null = null;

  /**
   * neon:H9 (Lockkeeper's decision beyond Neon): a failover that could not be admitted (a
   * database error) or that ended with shards still attached to an OFFLINE node (a step that
   * failed before its intent was written, a target lost before its own failover saw the
   * shard) is admitted again until every OFFLINE node's movable shards have an attached
   * intent elsewhere. One timer at a time; a sweep that finds nothing to do ends the retries.
   */
  private scheduleSweep(): void {
    if (this.cancelSweep || this.core.stopped) return;
    this.cancelSweep = this.deps.clock.setTimer(FAILOVER_RETRY_MS, () => {
      this.cancelSweep = null;
      void this.sweep().catch((e: unknown) => {
        this.deps.log.error({ err: e }, 'failover retry sweep failed');
        this.scheduleSweep();
      });
    });
  }

  private async sweep(): Promise<void> {
    const { backend } = this.deps;
    if (this.core.stopped || !this.core.leads) return;
    const nodes = [...this.planNodes().values()];
    const shards = await backend.listShards();
    for (const node of await backend.listNodes()) {
      // A hyperconverged host's Kubernetes side down is k8s:U's business: only a lost shard side fails shards over.
      if (shardSideAvailability(node) !== 'OFFLINE' || this.activeFailover(node.id)) continue;
      if (failoverRefusal(node.id, nodes)) continue;
      if (!planFailover(node.id, shards, nodes).some((d) => d.action === 'move')) continue;
      this.deps.log.warn({ node: node.id }, `node ${node.id} is OFFLINE and still holds attached shards: failing them over again`);
      void this.admit(node.id, this.deps.clock.now());
    }
  }

  /**
   * neon:E6, neon:H8: an operator's availability for the node. `OFFLINE` at once (a
   * FAILOVER follows, as for a lost node; on a node that still answers the next good
   * heartbeat brings it back), `ACTIVE` through the node's activation, `WARMING_UP` from now.
   */
  async setNodeAvailability(nodeId: string, availability: NodeAvailability, meta: RequestMeta): Promise<ClusterNode> {
    const { backend, log } = this.deps;
    if (!backend.failover) throw new PreconditionFailedError('NOT_SUPPORTED', 'this backend does not take a commanded availability');
    if (!(await backend.getNode(nodeId))) throw new NotFoundError('node', nodeId);
    try {
      await backend.failover.setNodeAvailability(nodeId, availability);
    } catch (e) {
      // An activation that could not list the node's locations (neon:H4).
      if (isBackendError(e, 'Unavailable')) throw new UnavailableError(e.message, nodeId);
      throw e;
    }
    log.info({ node: nodeId, availability, actor: meta.actor, reason: meta.reason }, `node ${nodeId} set ${availability} by ${meta.actor}`);
    const node = await backend.getNode(nodeId);
    if (!node) throw new NotFoundError('node', nodeId);
    return node;
  }

  /** The failover running for the node, if any. */
  activeFailover(nodeId: string): OperationSnapshot | null {
    return this.core.live.on(nodeId, KINDS)?.snapshot ?? null;
  }

  /** Resolves once the failovers started so far have been admitted (tests). */
  idle(): Promise<void> {
    return this.admitting;
  }

  private admitting: Promise<void> = Promise.resolve();

  /** Returns, for a `nodeLost` it takes up, the promise of its admission: the backend then knows the loss was heard. */
  private onClusterEvent(event: ClusterEvent): Promise<void> | undefined {
    if (this.core.stopped) return undefined;
    if (event.type === 'nodeUpcall') {
      void this.recordUpcall(event.upcall);
      return undefined;
    }
    if (event.type === 'nodeRemoved') {
      this.nodes.delete(event.nodeId);
      return undefined;
    }
    if (event.type === 'nodeChanged') {
      this.nodes.set(event.node.id, event.node);
      for (const run of this.core.live.all(KINDS)) run.nudge();
      return undefined;
    }
    if (event.type !== 'nodeLost') return undefined;
    return this.admit(event.nodeId, this.deps.clock.now());
  }

  /** `lostAt`: when the loss was heard, the failover's start (what follows is its admission, not a delay before it). */
  private admit(nodeId: string, lostAt: number): Promise<void> {
    const { store } = this.deps;
    this.admitting = this.admitting
      // A drain another replica admitted and this leader has not taken up yet is ended with the others (ha:R2).
      .then(() => (store.shared ? this.core.adopt() : undefined))
      .then(() => this.core.exclusive(() => this.nodeLost(nodeId, lostAt)))
      .catch((e: unknown) => {
        this.deps.log.error({ err: e, node: nodeId }, `failover of node ${nodeId} could not start; trying again in ${FAILOVER_RETRY_MS} ms`);
        this.scheduleSweep();
      });
    return this.admitting;
  }

  /**
   * neon:L10: every upcall a node made (re-attach, validate), answered or refused, as an event
   * (`UPCALL_RE_ATTACH`, `UPCALL_VALIDATE`) and an audit entry, each naming the caller's
   * address, the node, the outcome and what it did. Best effort: a refused write is logged.
   */
  private async recordUpcall(upcall: NodeUpcall): Promise<void> {
    const { store, audit, clock, log } = this.deps;
    const at = clock.now();
    const payload = { caller: upcall.caller, outcome: upcall.outcome, status: upcall.status, detail: upcall.detail };
    try {
      await store.events.append({ at, type: `UPCALL_${upcall.kind}`, nodeId: upcall.nodeId, operationId: null, payload });
      await audit.record({
        actor: `upcall@${upcall.caller}`,
        action: upcall.kind === 'RE_ATTACH' ? 'upcall re-attach' : 'upcall validate',
        arguments: { nodeId: upcall.nodeId, caller: upcall.caller, status: upcall.status },
        reason: upcall.detail,
        outcome: upcall.outcome,
        nodeId: upcall.nodeId,
        at: new Date(at),
      });
    } catch (e) {
      log.warn({ err: e, upcall }, 'an upcall could not be recorded');
    }
    if (upcall.outcome !== 'OK') log.warn({ upcall }, `upcall ${upcall.kind} from ${upcall.caller} refused (${upcall.outcome}): ${upcall.detail}`);
  }

  private planNodes(): Map<string, PlanNode> {
    const out = new Map<string, PlanNode>();
    for (const n of this.nodes.values()) out.set(n.id, this.toPlanNode(n));
    return out;
  }

  private planNode(id: string): PlanNode | undefined {
    const n = this.nodes.get(id);
    return n && this.toPlanNode(n);
  }

  private toPlanNode(n: ClusterNode): PlanNode {
    return { id: n.id, zone: n.zone, availability: n.availability, policy: this.deps.storage.policyOf(n.id) };
  }

  /** neon:H5: hold the lock. */
  private async nodeLost(nodeId: string, lostAt: number): Promise<void> {
    const { backend, store, clock, log } = this.deps;
    if (this.activeFailover(nodeId)) return;
    // A failover of the node that the database holds unended and no run here runs yet (this
    // replica is taking over, or restarting, and resumes it next) is resumed, never started twice.
    if ((await store.operations.unended()).some((r) => r.kind === 'FAILOVER' && r.nodeId === nodeId)) return;
    const node = await backend.getNode(nodeId);
    if (!node || node.availability !== 'OFFLINE') return;
    const nodes = [...this.planNodes().values()];
    const refusal = failoverRefusal(nodeId, nodes);
    // A region's fleet holds a million shards: the lost node's are read, the rest only when a cold attach must rank fresh nodes.
    const shards = await backend.listShards({ attachedNodeId: nodeId });
    const fleet = !refusal && needsFreshNode(nodeId, shards, nodes) ? await backend.listShards() : shards;
    const now = clock.now();
    const decisions = refusal ? [] : planFailover(nodeId, fleet, nodes);
    if (refusal || shards.length === 0) {
      const why =
        refusal === 'ONLY_NODE' ? 'it is the only node' : refusal === 'NO_SCHEDULABLE_NODE' ? 'no other node may take shards' : 'no shard is attached there';
      log.warn({ node: nodeId, reason: refusal ?? 'NO_SHARDS' }, `node ${nodeId} is OFFLINE: nothing is failed over, ${why}`);
      if (refusal)
        await store.events
          .append({ at: now, type: 'FAILOVER_NOT_STARTED', nodeId, operationId: null, payload: { reason: refusal, shards: shards.length } })
          .then(() => {});
      return;
    }
    // ha:R2: the drain or fill of the lost node ends in the transaction that admits the failover: its shards are the failover's now.
    const lostRun = await this.deps.storage.lostNodeEnd(nodeId);
    const steps: StepRecord[] = decisions.map((d, seq) => ({
      workloadKind: 'shard',
      workloadId: d.shard.id,
      action: 'FAILOVER',
      state: d.action === 'move' ? 'PLANNED' : 'SKIPPED',
      reason: d.action === 'skip' ? d.reason : d.cold ? 'COLD_ATTACH' : null,
      error: null,
      fromNodeId: nodeId,
      toNodeId: d.action === 'move' ? d.toNodeId : null,
      seq,
      startedAt: null,
      finishedAt: d.action === 'skip' ? now : null,
      // neon:H10: the plan names why each node was chosen.
      detail: d.action === 'move' ? placementDetail(d.why) : null,
    }));
    const meta = { actor: SYSTEM_ACTOR, reason: `node ${nodeId} went OFFLINE` };
    const snapshot = { ...newOperation({ id: randomUUID(), kind: 'FAILOVER', nodeId, meta, steps, now }), createdAt: lostAt, startedAt: lostAt };
    await this.core.journal.flushWith(() => [
      ...(lostRun?.writes() ?? []),
      store.operations.create(snapshot, {}, steps),
      store.events.append({
        at: now,
        type: 'OPERATION_STARTED',
        nodeId,
        operationId: snapshot.id,
        payload: { kind: 'FAILOVER', actor: meta.actor, reason: meta.reason, counts: snapshot.counts },
      }),
      ...planSkipEvents(steps, failoverStepEvent, { at: now, nodeId, operationId: snapshot.id }).map((e) => store.events.append(e)),
    ]);
    lostRun?.committed();
    await this.deps.audit.record({
      actor: SYSTEM_ACTOR,
      action: 'failover',
      arguments: { nodeId, shards: shards.length },
      reason: meta.reason,
      outcome: 'OK',
      nodeId,
      at: new Date(now),
    });
    this.deps.observer.operationStarted('FAILOVER');
    for (const s of steps) if (s.state === 'SKIPPED') this.deps.observer.stepFinished('FAILOVER', s, 'SKIPPED', s.reason, null);
    log.warn(
      { operation: snapshot.id, node: nodeId, planned: snapshot.counts.planned, skipped: snapshot.counts.skipped },
      `node ${nodeId} is OFFLINE: failing over ${snapshot.counts.planned} shard(s)`,
    );
    this.core.launch(new FailoverRun(this.host, snapshot, steps));
    this.core.publishProgress(snapshot, steps);
  }

  private async finish(run: FailoverRun, outcome: OperationOutcome, failure: string | null): Promise<void> {
    if (this.core.stopped) return;
    await this.core.journal.flush();
    await this.core.exclusive(() => this.core.close(run, outcome, failure));
    const c = run.snapshot.counts;
    if (c.failed > 0) this.scheduleSweep();
    this.deps.log.info(
      { operation: run.snapshot.id, node: run.nodeId, moved: c.moved, skipped: c.skipped, failed: c.failed },
      `failover of node ${run.nodeId} ${outcome.toLowerCase()}`,
    );
  }
}
