import type { ClusterBackend } from '../../cluster/backend.ts';
import type { StepRecord, StorageKind } from '../../domain/operations.ts';
import { planDrain } from '../../domain/storage/drain-plan.ts';
import { planFill } from '../../domain/storage/fill-plan.ts';
import type { PlanNode } from '../../domain/storage/shards.ts';

/** storage:D1–D3 for a drain (warmth is checked per move), storage:F1–F3 for a fill: the steps, computed once and persisted. */
export async function planSteps(backend: ClusterBackend, kind: StorageKind, nodeId: string, nodes: PlanNode[], now: number): Promise<StepRecord[]> {
  if (kind === 'DRAIN') {
    const shards = await backend.listShards({ attachedNodeId: nodeId });
    return planDrain(nodeId, shards, nodes).map((d, seq) =>
      d.action === 'move' ? step(seq, d.shard.id, 'PLANNED', null, nodeId, d.toNodeId, null) : step(seq, d.shard.id, 'SKIPPED', d.reason, nodeId, null, now),
    );
  }
  const shards = await backend.listShards();
  return planFill(nodeId, shards, nodes).map((m, seq) => step(seq, m.shardId, 'PLANNED', m.why, m.fromNodeId, m.toNodeId, null));
}

// One literal for every step, so that 100 000 of them share one shape (a spread of a base object does not).
function step(
  seq: number,
  workloadId: string,
  state: 'PLANNED' | 'SKIPPED',
  reason: string | null,
  fromNodeId: string | null,
  toNodeId: string | null,
  finishedAt: number | null,
): StepRecord {
  return { workloadKind: 'shard', workloadId, action: 'CUT_OVER', state, reason, error: null, fromNodeId, toNodeId, seq, startedAt: null, finishedAt };
}
