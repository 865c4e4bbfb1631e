/** Which shards a drain moves and where (storage:D1–D4). Pure. */
import { compareNodeIds } from '../compare.ts';
import { maySchedule } from './policy.ts';
import { byTenantAndNumber, type PlanNode, type PlanShard } from './shards.ts';

type DrainSkipReason =
  'SHARD_POLICY_PAUSE' | 'SHARD_POLICY_STOP' | 'NO_SECONDARY' | 'NO_SCHEDULABLE_SECONDARY' | 'SECONDARY_LAGGING' | 'SECONDARY_STATUS_UNKNOWN';

export type DrainDecision = { shard: PlanShard; action: 'move'; toNodeId: string } | { shard: PlanShard; action: 'skip'; reason: DrainSkipReason };

/**
 * storage:D3: among the secondaries on schedulable nodes, one in the shard's preferred AZ first,
 * then the lowest node id. Neon prefers secondaries *outside* the preferred AZ and relies
 * on a later fill to bring the shard home; we keep a shard in its home AZ whenever a
 * secondary there allows, so a drain never followed by a fill still leaves data near its
 * compute.
 */
export function chooseDrainDestination(shard: PlanShard, nodes: ReadonlyMap<string, PlanNode>): string | null {
  const candidates = shard.secondaryNodeIds.map((id) => nodes.get(id)).filter((n): n is PlanNode => n !== undefined && maySchedule(n));
  if (!candidates.length) return null;
  candidates.sort((a, b) => {
    const aHome = shard.preferredZone !== null && a.zone === shard.preferredZone ? 0 : 1;
    const bHome = shard.preferredZone !== null && b.zone === shard.preferredZone ? 0 : 1;
    return aHome - bHome || compareNodeIds(a.id, b.id);
  });
  return candidates[0]!.id;
}

/**
 * storage:D1–D3 for every shard attached to the node, in stable order. The warmth check (storage:D4)
 * needs the destination's answer and is applied by the operation before each cut-over
 * (see `warmthVerdict`).
 */
export function planDrain(nodeId: string, shards: readonly PlanShard[], nodes: readonly PlanNode[]): DrainDecision[] {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  return shards
    .filter((s) => s.attachedNodeId === nodeId)
    .sort(byTenantAndNumber)
    .map((shard) => decideDrain(shard, byId));
}

/** storage:D2–D3 for one shard of the node being drained (a drain looks again before each move). */
export function decideDrain(shard: PlanShard, nodes: ReadonlyMap<string, PlanNode>): DrainDecision {
  if (shard.policy === 'PAUSE') return { shard, action: 'skip', reason: 'SHARD_POLICY_PAUSE' };
  if (shard.policy === 'STOP') return { shard, action: 'skip', reason: 'SHARD_POLICY_STOP' };
  if (shard.secondaryNodeIds.length === 0) return { shard, action: 'skip', reason: 'NO_SECONDARY' };
  const toNodeId = chooseDrainDestination(shard, nodes);
  if (!toNodeId) return { shard, action: 'skip', reason: 'NO_SCHEDULABLE_SECONDARY' };
  return { shard, action: 'move', toNodeId };
}

/** storage:D4: a secondary is warm enough when its lag is known and at most the limit. */
export function warmthVerdict(
  status: { bytesTotal: number; bytesDownloaded: number; heatmapMtime: number | null } | null,
  maxLagBytes: number,
): { ok: true; lagBytes: number } | { ok: false; reason: 'SECONDARY_LAGGING' | 'SECONDARY_STATUS_UNKNOWN'; lagBytes: number | null } {
  if (!status || status.heatmapMtime === null) return { ok: false, reason: 'SECONDARY_STATUS_UNKNOWN', lagBytes: null };
  const lagBytes = Math.max(0, status.bytesTotal - status.bytesDownloaded);
  if (lagBytes > maxLagBytes) return { ok: false, reason: 'SECONDARY_LAGGING', lagBytes };
  return { ok: true, lagBytes };
}
