import type { ClusterBackend } from '../../cluster/backend.ts';
import type { StepRecord, StorageKind } from '../../domain/operations.ts';
import { planDrain } from '../../domain/storage/drain-plan.ts';
import { planFill } from '../../domain/storage/fill-plan.ts';
import type { PlanNode } from '../../domain/storage/shards.ts';

/** storage:D1–D3 for a drain (warmth is checked per move), storage:F1–F3 for a fill: the steps, computed once and persisted. */
export async function planSteps(backend: ClusterBackend, kind: StorageKind, nodeId: string, nodes: PlanNode[], now: number): Promise<StepRecord[]> {
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
