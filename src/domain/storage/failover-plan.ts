/** What a node going OFFLINE does to its shards (neon:H5). Pure. */
import { compareNodeIds } from '../compare.ts';
import { maySchedule } from './policy.ts';
import { byTenantAndNumber, type PlanNode, type PlanShard } from './shards.ts';

/** neon:H5b–c: why nothing moves when a node goes OFFLINE; null when its shards fail over. */
export function failoverRefusal(lostNodeId: string, nodes: readonly PlanNode[]): 'ONLY_NODE' | 'NO_SCHEDULABLE_NODE' | null {
  if (nodes.length <= 1 && nodes.every((n) => n.id === lostNodeId)) return 'ONLY_NODE';
  if (!nodes.some((n) => n.id !== lostNodeId && maySchedule(n))) return 'NO_SCHEDULABLE_NODE';
  return null;
}

/**
 * neon:H5d (`TenantShard::preferred_secondary`): among the shard's secondaries on nodes
 * that may schedule, those *outside* its preferred AZ first (a long-lived secondary rather
 * than one made for a migration), then the lowest id. Without one, a fresh node (a cold
 * attach): a schedulable node holding nothing of the shard, the one with the fewest
 * attached shards, in the preferred AZ first, then the lowest id.
 */
export function chooseFailoverTarget(
  shard: PlanShard,
  lostNodeId: string,
  nodes: ReadonlyMap<string, PlanNode>,
  attachedCounts: ReadonlyMap<string, number>,
): { nodeId: string; cold: boolean } | null {
  const secondaries = shard.secondaryNodeIds
    .map((id) => nodes.get(id))
    .filter((n): n is PlanNode => n !== undefined && n.id !== lostNodeId && maySchedule(n))
    .sort((a, b) => inZone(shard, a) - inZone(shard, b) || compareNodeIds(a.id, b.id));
  if (secondaries.length) return { nodeId: secondaries[0]!.id, cold: false };
  const fresh = [...nodes.values()]
    .filter((n) => n.id !== lostNodeId && n.id !== shard.attachedNodeId && !shard.secondaryNodeIds.includes(n.id) && maySchedule(n))
    .sort((a, b) => (attachedCounts.get(a.id) ?? 0) - (attachedCounts.get(b.id) ?? 0) || inZone(shard, b) - inZone(shard, a) || compareNodeIds(a.id, b.id));
  return fresh.length ? { nodeId: fresh[0]!.id, cold: true } : null;
}

/** 1 when the node is in the shard's preferred AZ, else 0. */
const inZone = (shard: PlanShard, n: PlanNode) => (shard.preferredZone !== null && n.zone === shard.preferredZone ? 1 : 0);

export type FailoverDecision =
  | { shard: PlanShard; action: 'move'; toNodeId: string; cold: boolean }
  | { shard: PlanShard; action: 'skip'; reason: 'SHARD_POLICY_PAUSE' | 'SHARD_POLICY_STOP' | 'NO_SCHEDULABLE_NODE' };

/**
 * The shards attached to the lost node, in the drain's order (storage:D1), each with its
 * new attached node. `Pause` and `Stop` shards keep their attachment (the Decision under
 * neon:H5f); no replacement secondary is planned (neon:H5e).
 */
export function planFailover(lostNodeId: string, shards: readonly PlanShard[], nodes: readonly PlanNode[]): FailoverDecision[] {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const counts = new Map<string, number>();
  for (const s of shards) counts.set(s.attachedNodeId, (counts.get(s.attachedNodeId) ?? 0) + 1);
  return shards
    .filter((s) => s.attachedNodeId === lostNodeId)
    .sort(byTenantAndNumber)
    .map((shard): FailoverDecision => {
      if (shard.policy === 'PAUSE') return { shard, action: 'skip', reason: 'SHARD_POLICY_PAUSE' };
      if (shard.policy === 'STOP') return { shard, action: 'skip', reason: 'SHARD_POLICY_STOP' };
      const target = chooseFailoverTarget(shard, lostNodeId, byId, counts);
      if (!target) return { shard, action: 'skip', reason: 'NO_SCHEDULABLE_NODE' };
      counts.set(target.nodeId, (counts.get(target.nodeId) ?? 0) + 1);
      return { shard, action: 'move', toNodeId: target.nodeId, cold: target.cold };
    });
}
