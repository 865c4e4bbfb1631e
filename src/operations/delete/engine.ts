import { randomUUID } from 'node:crypto';
import type { ClusterNode } from '../../cluster/types.ts';
import { ConflictError, NotFoundError, OperationLimitReachedError, PreconditionFailedError } from '../../domain/errors.ts';
import { countsOf, newOperation, type OperationOutcome, type OperationSnapshot, type RequestMeta, type StepRecord } from '../../domain/operations.ts';
import { checkDeleteAdmission } from '../../domain/storage/delete-admission.ts';
import type { SchedulingPolicy } from '../../domain/storage/policy.ts';
import { locationLoad, placementWithout } from '../../domain/storage/scheduling.ts';
import type { PlanNode } from '../../domain/storage/shards.ts';
import type { InterruptedOperation } from '../../store/operation-repository.ts';
import type { EngineDeps } from '../core/engine-deps.ts';
import type { OperationKindEngine } from '../core/operation-kind.ts';
import type { StorageEngine } from '../storage/engine.ts';
import { DeleteRun, type DeleteParams, type DeleteRunHost } from './run.ts';

const KINDS = ['DELETE'] as const;

/** The backend serves no node registry or placements (e.g. the simulated cluster): nothing can be deleted. */
const notSupported = () => new PreconditionFailedError('NOT_SUPPORTED', 'this backend does not delete nodes (it has no node registry and shard placement)');

/**
 * Node deletes (neon:L4–L7): graceful deletes as operations of kind DELETE (counting
 * toward `maxConcurrentOperations` with drains and fills), their cancels, the deprecated
 * synchronous delete, and dropping a node.
 */
export class DeleteEngine implements OperationKindEngine {
  readonly kinds = KINDS;
  private readonly host: DeleteRunHost;

  constructor(private readonly deps: EngineDeps & { storage: StorageEngine }) {
    this.host = {
      backend: deps.backend,
      policies: deps.store.policies,
      clock: deps.clock,
      journal: deps.operations.journal,
      observer: deps.observer,
      log: deps.log,
      planNodes: async () => {
        await this.refresh();
        return this.lastPlanNodes;
      },
      finish: (run, outcome, failure) => this.finish(run, outcome, failure),
    };
    deps.operations.register(this);
  }

  private lastPlanNodes = new Map<string, PlanNode>();

  private get core() {
    return this.deps.operations;
  }

  private get supported(): boolean {
    const { backend } = this.deps;
    return Boolean(backend.capabilities.shards && backend.registry && backend.placement);
  }

  async prepare(): Promise<boolean> {
    if (!this.supported) return false;
    await this.refresh();
    return true;
  }

  resume({ snapshot: stored, steps: recorded, params }: InterruptedOperation): void {
    const steps = recorded.map((s) => (s.state === 'MOVING' ? { ...s, state: 'PLANNED' as const, startedAt: null } : s));
    const snapshot = { ...stored, counts: countsOf(steps), waitingOn: null };
    this.core.launch(new DeleteRun(this.host, snapshot, steps, params as unknown as DeleteParams));
  }

  stop(): void {}

  private async refresh(): Promise<ClusterNode[]> {
    const nodes = await this.deps.backend.listNodes();
    this.lastPlanNodes = new Map(nodes.map((n) => [n.id, { id: n.id, zone: n.zone, availability: n.availability, policy: this.deps.storage.policyOf(n.id) }]));
    return nodes;
  }

  /** neon:L4: checks in Neon's order, then DELETING (persisted) and the operation. */
  startDelete(nodeId: string, options: { force: boolean }, meta: RequestMeta): Promise<OperationSnapshot> {
    return this.core.exclusive(async () => {
      if (!this.supported) throw notSupported();
      await this.refresh();
      const running = this.deps.storage.runningNodeOperations();
      const refusal = checkDeleteAdmission(nodeId, {
        nodes: [...this.lastPlanNodes.values()],
        running,
        operationLimit: this.deps.settings.maxConcurrentOperations,
      });
      if (refusal) {
        if (refusal.error === 'NotFound') throw new NotFoundError('node', nodeId);
        if (refusal.error === 'OperationRunning') {
          const here = running.find((r) => r.nodeId === nodeId);
          if (here) throw new ConflictError(refusal.message, here.operationId);
          throw new OperationLimitReachedError(this.deps.settings.maxConcurrentOperations, refusal.message);
        }
        if (refusal.error === 'Conflict') throw new ConflictError(refusal.message);
        throw new PreconditionFailedError(refusal.reason, refusal.message);
      }
      const { backend, store, clock } = this.deps;
      const startingPolicy: SchedulingPolicy = this.deps.storage.policyOf(nodeId);
      const now = clock.now();
      const shards = (await backend.listShards())
        .filter((s) => s.attachedNodeId === nodeId || s.secondaryNodeIds.includes(nodeId))
        .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      const steps: StepRecord[] = shards.map((s, seq) => ({
        workloadKind: 'shard',
        workloadId: s.id,
        action: 'RESCHEDULE',
        state: 'PLANNED',
        reason: s.attachedNodeId === nodeId ? 'ATTACHED' : 'SECONDARY',
        error: null,
        fromNodeId: nodeId,
        toNodeId: null,
        seq,
        startedAt: null,
        finishedAt: null,
      }));
      const params: DeleteParams = { force: options.force, startingPolicy };
      const snapshot = newOperation({ id: randomUUID(), kind: 'DELETE', nodeId, meta, steps, now });
      await store.policies.transition(nodeId, { type: 'deleteAccepted' }, snapshot.id, now, [
        store.operations.create(snapshot, params, steps),
        store.events.append({
          at: now,
          type: 'OPERATION_STARTED',
          nodeId,
          operationId: snapshot.id,
          payload: { kind: 'DELETE', actor: meta.actor, reason: meta.reason, force: options.force, counts: snapshot.counts },
        }),
      ]);
      this.deps.storage.policyChanged(nodeId);
      if (options.force) await backend.registry!.forgetLocations(nodeId);
      this.deps.observer.operationStarted('DELETE');
      this.deps.log.info({ operation: snapshot.id, node: nodeId, shards: steps.length, force: options.force }, `delete of node ${nodeId} started`);
      this.core.launch(new DeleteRun(this.host, snapshot, steps, params));
      this.core.publishProgress(snapshot, steps);
      return snapshot;
    });
  }

  /** neon:L5: no availability check; moved shards stay moved; the run restores the starting policy. */
  cancelDelete(nodeId: string, meta: RequestMeta): Promise<OperationSnapshot> {
    return this.core.exclusive(async () => {
      if (!(await this.deps.backend.getNode(nodeId))) throw new NotFoundError('node', nodeId);
      const run = this.core.live.on(nodeId, KINDS);
      if (!run) throw new PreconditionFailedError('NO_DELETE_IN_PROGRESS', `no delete in progress on node ${nodeId}`);
      if (run.snapshot.state !== 'CANCELLING') {
        await this.core.changeState(run, 'CANCELLING', { type: 'OPERATION_CANCELLING', payload: { actor: meta.actor, reason: meta.reason } });
      }
      return run.snapshot;
    });
  }

  activeDelete(nodeId: string): OperationSnapshot | null {
    return this.core.live.on(nodeId, KINDS)?.snapshot ?? null;
  }

  /**
   * neon:L6, the deprecated synchronous delete: an unknown node is fine (a retry); every
   * shard naming the node is placed without it whatever its policy, without waiting; one
   * that cannot be placed is a conflict (`Scheduling error: …`, earlier ones stay moved);
   * then the node is tombstoned.
   */
  deleteNow(nodeId: string, meta: RequestMeta): Promise<void> {
    return this.core.exclusive(async () => {
      if (!this.supported) throw notSupported();
      const { backend, log } = this.deps;
      if (!(await backend.getNode(nodeId))) return;
      await this.refresh();
      const shards = await backend.listShards();
      const load = locationLoad(shards);
      for (const shard of shards.filter((s) => s.attachedNodeId === nodeId || s.secondaryNodeIds.includes(nodeId)).sort((a, b) => (a.id < b.id ? -1 : 1))) {
        const want = (await backend.placement!.describeShard(shard.id))?.secondaryCount ?? shard.secondaryNodeIds.length;
        const next = placementWithout(shard, nodeId, this.lastPlanNodes, load, want);
        if ('error' in next) throw new ConflictError(`Scheduling error: ${next.error}`);
        backend
          .placement!.placeShard(shard.id, next.placement)
          .catch((e: unknown) => log.warn({ shard: shard.id, err: e }, `shard ${shard.id}: reconcile after deleting node ${nodeId} failed`));
      }
      await backend.registry!.tombstone(nodeId);
      await this.deps.store.policies.transition(nodeId, { type: 'configure', policy: 'ACTIVE' }, null, this.deps.clock.now(), [], {
        actor: meta.actor,
        reason: meta.reason,
        cause: 'deleted',
      });
      log.info({ node: nodeId, actor: meta.actor }, `node ${nodeId} deleted (synchronously)`);
    });
  }

  /** neon:L7 `drop`: tombstone and forget the node, moving nothing. */
  async dropNode(nodeId: string): Promise<void> {
    if (!this.supported) throw notSupported();
    if (!(await this.deps.backend.getNode(nodeId))) throw new NotFoundError('node', nodeId);
    await this.deps.backend.registry!.tombstone(nodeId);
  }

  private async finish(run: DeleteRun, outcome: OperationOutcome, failure: string | null): Promise<void> {
    if (this.core.stopped) return;
    await this.core.journal.flush();
    const { store, backend, clock } = this.deps;
    const nodeId = run.nodeId;
    await this.core.exclusive(async () => {
      const at = clock.now();
      // Cancelled: the starting policy back; succeeded: the node is gone, and an id registered again later starts ACTIVE (neon:L1).
      const policy =
        outcome === 'CANCELLED' ? store.policies.prepare(nodeId, { type: 'deleteCancelled', policy: run.params.startingPolicy }, run.snapshot.id, at) : null;
      if (outcome === 'SUCCEEDED') await backend.registry!.tombstone(nodeId);
      const reset =
        outcome === 'SUCCEEDED' ? store.policies.prepare(nodeId, { type: 'configure', policy: 'ACTIVE' }, run.snapshot.id, at, { cause: 'deleted' }) : null;
      const transition = policy ?? reset;
      await this.core.close(run, outcome, failure, {
        at,
        alsoWrite: transition?.writes ?? [],
        committed: () => {
          transition?.applied();
          this.deps.storage.policyChanged(nodeId);
        },
      });
    });
    const c = run.snapshot.counts;
    this.deps.log.info(
      { operation: run.snapshot.id, node: nodeId, outcome, moved: c.moved, skipped: c.skipped, failed: c.failed },
      `delete of node ${nodeId} ${outcome.toLowerCase()}`,
    );
  }
}
