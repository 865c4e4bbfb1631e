import type { ClusterBackend } from '../../cluster/backend.ts';
import { isBackendError } from '../../cluster/errors.ts';
import type { OperationSnapshot, StepRecord } from '../../domain/operations.ts';
import { StepRun, type FinishedStepState, type StepRunHost } from '../core/step-run.ts';

export interface MigrateRunHost extends StepRunHost<MigrateRun> {
  backend: ClusterBackend;
  /** How often the target's secondary is asked whether it is warm. */
  pollMs: number;
}

export interface MigrateParams {
  shardId: string;
  originNodeId: string;
  targetNodeId: string;
  /** The secondaries the shard had before the migration added one at the target: what it ends with. */
  keepSecondaryNodeIds: string[];
  warmup: { timeoutMs: number; requestTimeoutMs: number } | null;
}

/**
 * The rest of a prewarmed migration (neon:W2, the Decision "no optimiser"): wait until the
 * secondary at the target is warm, cut over (the live migration of neon:C1–C9), and drop
 * the extra secondary, so the shard ends attached at the target with the secondaries it
 * had. One shard, one step; a later migration of the shard back to its attached node
 * cancels it (neon:W1).
 */
export class MigrateRun extends StepRun<MigrateRun> {
  private readonly cancel = new AbortController();

  constructor(
    protected override readonly host: MigrateRunHost,
    snapshot: OperationSnapshot,
    private readonly step: StepRecord,
    readonly params: MigrateParams,
  ) {
    super(host, snapshot);
  }

  protected override onHalt(): void {
    this.cancel.abort(new Error('the gateway is stopping'));
  }

  protected async run(): Promise<void> {
    const { backend } = this.host;
    const { shardId, targetNodeId, originNodeId } = this.params;
    const step = this.step;
    if (step.state === 'PLANNED') this.startStep(step, { fromNodeId: originNodeId, toNodeId: targetNodeId });
    for (;;) {
      const woken = this.nextWakeUp();
      if (this.halted) return;
      if (this.snapshot.state === 'CANCELLING') {
        this.finishStep(step, 'SKIPPED', 'CANCELLED', null);
        return this.end('CANCELLED', null);
      }
      const shard = await backend.getShard(shardId);
      if (!shard) {
        this.finishStep(step, 'SKIPPED', 'SHARD_GONE', null);
        return this.end('SUCCEEDED', null);
      }
      if (shard.attachedNodeId === targetNodeId) break;
      if (shard.attachedNodeId !== originNodeId || !shard.secondaryNodeIds.includes(targetNodeId)) {
        this.finishStep(step, 'FAILED', 'SHARD_MOVED', `shard ${shardId} was placed elsewhere meanwhile (attached to node ${shard.attachedNodeId})`);
        return this.end('FAILED', 'SHARD_MOVED');
      }
      const status = await backend.getSecondaryStatus(shardId, targetNodeId).catch(() => null);
      if (status && status.heatmapMtime !== null && status.bytesDownloaded >= status.bytesTotal) break;
      this.setWaiting({
        kind: 'SECONDARY_WARMING',
        description: status
          ? `waiting for the secondary of shard ${shardId} on node ${targetNodeId} to warm up (${status.bytesDownloaded} of ${status.bytesTotal} bytes)`
          : `waiting for the secondary of shard ${shardId} on node ${targetNodeId} to report its download`,
        nodeId: targetNodeId,
        workloadIds: [shardId],
        since: this.snapshot.startedAt,
      });
      await this.waitAtMost(woken, this.host.pollMs);
    }
    try {
      const result = await backend.placement!.placeShard(
        shardId,
        { attachedNodeId: targetNodeId, secondaryNodeIds: this.params.keepSecondaryNodeIds.filter((n) => n !== targetNodeId) },
        {
          signal: this.cancel.signal,
          ...(this.params.warmup && { warmup: this.params.warmup }),
          onProgress: (p) => {
            this.update(step, { detail: JSON.stringify({ phase: p.phase, description: p.description }) });
            this.setWaiting({
              kind: 'MOVES_IN_FLIGHT',
              description: `shard ${shardId}: ${p.description}`,
              nodeId: targetNodeId,
              workloadIds: [shardId],
              since: this.snapshot.startedAt,
            });
          },
        },
      );
      this.finishStep(step, 'MOVED', null, result?.note ?? null);
      this.snapshot.waitingOn = null;
      await this.end('SUCCEEDED', null);
    } catch (e) {
      if (this.halted) return;
      this.finishStep(step, 'FAILED', isBackendError(e) ? e.code.toUpperCase() : 'ERROR', e instanceof Error ? e.message : String(e));
      this.snapshot.waitingOn = null;
      await this.end('FAILED', 'CUT_OVER_FAILED');
    }
  }

  protected stepEvent(step: StepRecord, state: FinishedStepState, reason: string | null, error: string | null) {
    return { type: `SHARD_${state}`, payload: { shard: step.workloadId, from: step.fromNodeId, to: step.toNodeId, reason, error, migrate: true } };
  }
}
