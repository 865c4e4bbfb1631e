import type { ClusterBackend } from '../../cluster/backend.ts';
import { isBackendError } from '../../cluster/errors.ts';
import { nodeOf, type OperationOutcome, type OperationSnapshot, type StepRecord } from '../../domain/operations.ts';
import type { SchedulingPolicy } from '../../domain/storage/policy.ts';
import { locationLoad, placementWithout } from '../../domain/storage/scheduling.ts';
import type { PlanNode } from '../../domain/storage/shards.ts';
import type { PolicyStore } from '../../store/policy-store.ts';
import { StepRun, type FinishedStepState, type StepRunHost } from '../core/step-run.ts';

export interface DeleteRunHost extends StepRunHost<DeleteRun> {
  backend: ClusterBackend;
  policies: PolicyStore;
  /** The cluster's nodes now, with their policies. */
  planNodes(): Promise<Map<string, PlanNode>>;
}

/** Neon's `MAX_RECONCILES_PER_OPERATION` (background_node_operations.rs). */
const BATCH = 64;
const WAITING_ON_SAMPLE = 20;

export interface DeleteParams {
  force: boolean;
  /** The policy the node had when the delete started, restored by a cancel (neon:L4). */
  startingPolicy: SchedulingPolicy;
}

/**
 * A node's graceful delete (neon:L4): the shards that name it, in id order, at most 64 at
 * a time; before each batch a cancel ends it (the starting policy comes back) and a policy
 * that is no longer DELETING fails it. `Pause`/`Stop` shards are skipped; the others lose
 * the node from their placement — a secondary promoted, or a fresh node, and a replacement
 * secondary — and are reconciled (waited for, unless `force`). Then the node is tombstoned.
 */
export class DeleteRun extends StepRun<DeleteRun> {
  private queue: StepRecord[];
  private readonly inFlight = new Set<string>();
  private schedulingError: string | null = null;

  constructor(
    protected override readonly host: DeleteRunHost,
    snapshot: OperationSnapshot,
    steps: StepRecord[],
    readonly params: DeleteParams,
  ) {
    super(host, snapshot);
    this.queue = steps.filter((s) => s.state === 'PLANNED').sort((a, b) => a.seq - b.seq);
  }

  override get nodeId(): string {
    return nodeOf(this.snapshot);
  }

  protected async run(): Promise<void> {
    let outcome: OperationOutcome = 'SUCCEEDED';
    let failure: string | null = null;
    const { policies } = this.host;
    while (this.queue.length) {
      if (this.halted) return;
      if (this.snapshot.state === 'CANCELLING') {
        outcome = 'CANCELLED';
        break;
      }
      if (policies.get(this.nodeId) !== 'DELETING') {
        outcome = 'FAILED';
        failure = 'NODE_STATE_CHANGED';
        break;
      }
      const batch = this.queue.splice(0, BATCH);
      this.setWaiting({
        kind: 'MOVES_IN_FLIGHT',
        description: `moving ${batch.length} shard(s) off node ${this.nodeId}${this.queue.length ? `, ${this.queue.length} after them` : ''}`,
        nodeId: this.nodeId,
        workloadIds: batch.slice(0, WAITING_ON_SAMPLE).map((s) => s.workloadId),
        since: this.host.clock.now(),
      });
      await Promise.all(
        batch.map(
          (step) =>
            new Promise<void>((resolve) => {
              this.inFlight.add(step.workloadId);
              this.launch(
                step,
                () => this.moveOff(step),
                () => {
                  this.inFlight.delete(step.workloadId);
                  resolve();
                },
              );
            }),
        ),
      );
      if (this.halted) return;
      if (this.schedulingError) {
        // As Neon's code reads: a scheduling error ends the delete with the policy left DELETING.
        outcome = 'FAILED';
        failure = 'SCHEDULING_ERROR';
        break;
      }
    }
    if (this.halted) return;
    if (outcome === 'SUCCEEDED' && this.snapshot.state === 'CANCELLING') outcome = 'CANCELLED';
    this.skipUnattempted(this.queue, outcome === 'CANCELLED' ? 'CANCELLED' : 'NOT_ATTEMPTED');
    this.queue = [];
    this.snapshot.waitingOn = null;
    await this.end(outcome, failure);
  }

  protected stepEvent(step: StepRecord, state: FinishedStepState, reason: string | null, error: string | null) {
    return { type: `SHARD_${state}`, payload: { shard: step.workloadId, from: step.fromNodeId, to: step.toNodeId, reason, error, delete: true } };
  }

  private async moveOff(step: StepRecord): Promise<void> {
    const { backend } = this.host;
    const shard = await backend.getShard(step.workloadId);
    if (!shard) return this.finishStep(step, 'SKIPPED', 'SHARD_GONE', null);
    if (shard.attachedNodeId !== this.nodeId && !shard.secondaryNodeIds.includes(this.nodeId)) return this.finishStep(step, 'MOVED', null, null);
    if (shard.policy === 'PAUSE' || shard.policy === 'STOP') return this.finishStep(step, 'SKIPPED', `SHARD_POLICY_${shard.policy}`, null);
    const nodes = await this.host.planNodes();
    const details = await backend.placement!.describeShard(shard.id);
    const want = Math.max(details?.secondaryCount ?? shard.secondaryNodeIds.length, 0);
    const next = placementWithout(shard, this.nodeId, nodes, locationLoad(await backend.listShards()), want);
    if ('error' in next) {
      this.schedulingError = next.error;
      return this.finishStep(step, 'FAILED', 'SCHEDULING_ERROR', next.error);
    }
    const note = next.missingSecondaries ? `no node for ${next.missingSecondaries} replacement secondary(ies)` : null;
    this.startStep(step, { fromNodeId: this.nodeId, toNodeId: next.placement.attachedNodeId });
    const placing = backend.placement!.placeShard(shard.id, next.placement);
    if (this.params.force) {
      // `force`: no waiting; what the node held is forgotten (nothing is cleaned off it).
      placing.catch((e: unknown) => this.host.log.warn({ shard: shard.id, err: e }, `shard ${shard.id}: reconcile after a forced delete failed`));
      return this.finishStep(step, 'MOVED', null, note);
    }
    try {
      const result = await placing;
      this.finishStep(step, 'MOVED', null, [note, result?.note].filter(Boolean).join('; ') || null);
    } catch (e) {
      this.finishStep(step, 'FAILED', isBackendError(e) ? e.code.toUpperCase() : 'ERROR', e instanceof Error ? e.message : String(e));
    }
  }
}
