import type { ClusterBackend } from '../../cluster/backend.ts';
import { isBackendError } from '../../cluster/errors.ts';
import { nodeOf, type OperationSnapshot, type StepRecord } from '../../domain/operations.ts';
import { chooseFailoverTarget, tenantLocationCounts } from '../../domain/storage/failover-plan.ts';
import { maySchedule } from '../../domain/storage/policy.ts';
import type { PlanNode } from '../../domain/storage/shards.ts';
import { StepRun, type FinishedStepState, type StepRunHost } from '../core/step-run.ts';

export interface FailoverRunHost extends StepRunHost<FailoverRun> {
  backend: ClusterBackend;
  /** Direct attaches in flight at once (`operations.maxConcurrentFailovers`, neon:H5). */
  concurrency: number;
  /** The cluster's nodes as last seen, with their policies. */
  planNodes(): Map<string, PlanNode>;
  /** One of them (a step's planned node: no map of the whole cluster per step). */
  planNode(id: string): PlanNode | undefined;
}

const WAITING_ON_SAMPLE = 20;

/**
 * A lost node's failover (neon:H5): one step per shard that was attached there, each a
 * direct attach of the shard to its new node (a new generation and one compute
 * notification, done by the backend). Never cancelled by an operator; a gateway restart
 * resumes it (a step that was in flight is asked again: the backend's failover is idempotent).
 */
export class FailoverRun extends StepRun<FailoverRun> {
  private queue: StepRecord[];
  private readonly inFlight = new Set<string>();

  constructor(
    protected override readonly host: FailoverRunHost,
    snapshot: OperationSnapshot,
    steps: StepRecord[],
  ) {
    super(host, snapshot);
    this.queue = steps.filter((s) => s.state === 'PLANNED').sort((a, b) => a.seq - b.seq);
  }

  override get nodeId(): string {
    return nodeOf(this.snapshot);
  }

  protected async run(): Promise<void> {
    for (;;) {
      const woken = this.nextWakeUp();
      if (this.halted) return;
      while (this.queue.length && this.inFlight.size < this.host.concurrency) {
        const step = this.queue.shift()!;
        this.inFlight.add(step.workloadId);
        this.launch(
          step,
          () => this.failOver(step),
          () => this.inFlight.delete(step.workloadId),
        );
      }
      if (!this.queue.length && !this.inFlight.size) break;
      this.setWaiting({
        kind: 'MOVES_IN_FLIGHT',
        description: `failing over ${this.inFlight.size} shard(s) from node ${this.nodeId}${this.queue.length ? `, ${this.queue.length} waiting` : ''}`,
        nodeId: this.nodeId,
        workloadIds: [...this.inFlight].slice(0, WAITING_ON_SAMPLE),
        since: this.snapshot.startedAt,
      });
      await woken;
    }
    this.snapshot.waitingOn = null;
    await this.end('SUCCEEDED', null);
  }

  protected stepEvent(step: StepRecord, state: FinishedStepState, reason: string | null, error: string | null) {
    return failoverStepEvent(step, state, reason, error);
  }

  private async failOver(step: StepRecord): Promise<void> {
    const { backend, log } = this.host;
    const shard = await backend.getShard(step.workloadId);
    if (!shard) return this.finishStep(step, 'SKIPPED', 'SHARD_GONE', null);
    if (shard.attachedNodeId !== this.nodeId) {
      if (shard.attachedNodeId === step.toNodeId) return this.finishStep(step, 'MOVED', null, null);
      return this.finishStep(step, 'SKIPPED', 'NOT_ATTACHED_HERE', `attached to node ${shard.attachedNodeId} by someone else`);
    }
    if (shard.policy === 'PAUSE' || shard.policy === 'STOP') return this.finishStep(step, 'SKIPPED', `SHARD_POLICY_${shard.policy}`, null);
    // The planned node may have stopped being schedulable meanwhile: choose again.
    const planned = step.toNodeId === null ? undefined : this.host.planNode(step.toNodeId);
    let toNodeId: string;
    const change: Partial<StepRecord> = {};
    if (planned && maySchedule(planned)) toNodeId = planned.id;
    else {
      const counts = new Map<string, number>();
      const all = await backend.listShards();
      for (const s of all) counts.set(s.attachedNodeId, (counts.get(s.attachedNodeId) ?? 0) + 1);
      const again = chooseFailoverTarget(shard, this.nodeId, this.host.planNodes(), counts, tenantLocationCounts(all).get(shard.tenantId));
      if (!again) return this.finishStep(step, 'SKIPPED', 'NO_SCHEDULABLE_NODE', null);
      toNodeId = again.nodeId;
      change.detail = placementDetail(again.why);
      change.reason = again.cold ? 'COLD_ATTACH' : null;
    }
    this.startStep(step, { fromNodeId: this.nodeId, toNodeId, ...change });
    this.host.observer.movesInFlight('FAILOVER', 1);
    try {
      const result = await backend.failover!.failOverShard(shard.id, { fromNodeId: this.nodeId, toNodeId });
      this.finishStep(step, 'MOVED', null, result?.note ?? null);
    } catch (e) {
      const code = isBackendError(e) ? e.code.toUpperCase() : 'ERROR';
      this.finishStep(step, 'FAILED', code, e instanceof Error ? e.message : String(e));
      log.warn({ operation: this.snapshot.id, shard: shard.id, node: toNodeId, err: e }, `failover of shard ${shard.id} to node ${toNodeId} failed`);
    } finally {
      this.host.observer.movesInFlight('FAILOVER', -1);
    }
  }
}

/** A failover's step on the event log (also what its admission writes for the plan's skips). */
export function failoverStepEvent(step: StepRecord, state: FinishedStepState, reason: string | null, error: string | null) {
  const placement = placementOf(step);
  return {
    type: `SHARD_${state}`,
    payload: { shard: step.workloadId, from: step.fromNodeId, to: step.toNodeId, reason, error, failover: true, ...(placement ? { placement } : {}) },
  };
}

/** neon:H10: a failover step's `detail`, naming why its node was chosen. */
export const placementDetail = (why: string): string => JSON.stringify({ placement: why });

function placementOf(step: StepRecord): string | null {
  if (!step.detail) return null;
  try {
    const d = JSON.parse(step.detail) as { placement?: unknown };
    return typeof d.placement === 'string' ? d.placement : null;
  } catch {
    return null;
  }
}
