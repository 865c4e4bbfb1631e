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

/** Why a node was chosen (neon:H10): the first criterion that set it apart from the runner-up. */
export type FailoverTarget = { nodeId: string; cold: boolean; why: string };

/**
 * neon:H5d (`TenantShard::preferred_secondary`): among the shard's secondaries on nodes
 * that may schedule, those *outside* its preferred AZ first (a long-lived secondary rather
 * than one made for a migration), then the lowest id. Without one, a fresh node (a cold
 * attach) ranked as Neon's scheduler ranks attachments (neon:H10).
 * `tenantLocations`: per node, how many attached and secondary locations of the shard's
 * tenant it holds (other shards included).
 */
export function chooseFailoverTarget(
  shard: PlanShard,
  lostNodeId: string,
  nodes: ReadonlyMap<string, PlanNode>,
  attachedCounts: ReadonlyMap<string, number>,
  tenantLocations: ReadonlyMap<string, number> = new Map(),
): FailoverTarget | null {
  const secondaries = takingSecondaries(shard, lostNodeId, nodes).sort((a, b) => inZone(shard, a) - inZone(shard, b) || compareNodeIds(a.id, b.id));
  if (secondaries.length) return { nodeId: secondaries[0]!.id, cold: false, why: 'secondary (neon:H5)' };
  const fresh = [...nodes.values()].filter(
    (n) => n.id !== lostNodeId && n.id !== shard.attachedNodeId && !shard.secondaryNodeIds.includes(n.id) && maySchedule(n),
  );
  const ranked = rankFreshNodes(shard, fresh, attachedCounts, tenantLocations);
  return ranked ? { ...ranked, cold: true } : null;
}

const takingSecondaries = (shard: PlanShard, lostNodeId: string, nodes: ReadonlyMap<string, PlanNode>): PlanNode[] =>
  shard.secondaryNodeIds.map((id) => nodes.get(id)).filter((n): n is PlanNode => n !== undefined && n.id !== lostNodeId && maySchedule(n));

/**
 * Whether some of the lost node's shards would need a fresh node (no secondary may take
 * them): only then does the plan weigh the rest of the fleet (attached counts, tenant
 * locations, neon:H10), so a loss with secondaries everywhere is planned from its own shards.
 */
export function needsFreshNode(lostNodeId: string, lostShards: readonly PlanShard[], nodes: readonly PlanNode[]): boolean {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  return lostShards.some((s) => s.policy !== 'PAUSE' && s.policy !== 'STOP' && takingSecondaries(s, lostNodeId, byId).length === 0);
}

/**
 * neon:H10 (Neon's `NodeAttachmentSchedulingScore`, lowest wins): the shard's preferred AZ
 * first, then tenant (anti-)affinity — the fewest of the tenant's attached and secondary
 * locations on the node, so a tenant's shards spread out — then utilisation (the fewest
 * attached shards), then the lowest id.
 */
function rankFreshNodes(
  shard: PlanShard,
  candidates: readonly PlanNode[],
  attachedCounts: ReadonlyMap<string, number>,
  tenantLocations: ReadonlyMap<string, number>,
): { nodeId: string; why: string } | null {
  const criteria: [string, (n: PlanNode) => number][] = [
    [`preferred AZ ${shard.preferredZone ?? ''}`, (n) => 1 - inZone(shard, n)],
    ['tenant affinity', (n) => tenantLocations.get(n.id) ?? 0],
    ['least utilised', (n) => attachedCounts.get(n.id) ?? 0],
  ];
  const sorted = [...candidates].sort((a, b) => {
    for (const [, score] of criteria) if (score(a) !== score(b)) return score(a) - score(b);
    return compareNodeIds(a.id, b.id);
  });
  const [best, next] = sorted;
  if (!best) return null;
  if (!next) return { nodeId: best.id, why: 'only schedulable node' };
  const decisive = criteria.find(([, score]) => score(best) !== score(next));
  return { nodeId: best.id, why: decisive ? decisive[0] : 'lowest id' };
}

/** 1 when the node is in the shard's preferred AZ, else 0. */
const inZone = (shard: PlanShard, n: PlanNode) => (shard.preferredZone !== null && n.zone === shard.preferredZone ? 1 : 0);

/** Per node, the attached and secondary locations of each tenant: the affinity input of neon:H10. */
export function tenantLocationCounts(shards: readonly PlanShard[]): Map<string, Map<string, number>> {
  const byTenant = new Map<string, Map<string, number>>();
  for (const s of shards) {
    const counts = byTenant.get(s.tenantId) ?? new Map<string, number>();
    for (const n of [s.attachedNodeId, ...s.secondaryNodeIds]) counts.set(n, (counts.get(n) ?? 0) + 1);
    byTenant.set(s.tenantId, counts);
  }
  return byTenant;
}

export type FailoverDecision =
  | { shard: PlanShard; action: 'move'; toNodeId: string; cold: boolean; why: string }
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
  const tenants = tenantLocationCounts(shards);
  return shards
    .filter((s) => s.attachedNodeId === lostNodeId)
    .sort(byTenantAndNumber)
    .map((shard): FailoverDecision => {
      if (shard.policy === 'PAUSE') return { shard, action: 'skip', reason: 'SHARD_POLICY_PAUSE' };
      if (shard.policy === 'STOP') return { shard, action: 'skip', reason: 'SHARD_POLICY_STOP' };
      const tenant = tenants.get(shard.tenantId) ?? new Map<string, number>();
      const target = chooseFailoverTarget(shard, lostNodeId, byId, counts, tenant);
      if (!target) return { shard, action: 'skip', reason: 'NO_SCHEDULABLE_NODE' };
      counts.set(target.nodeId, (counts.get(target.nodeId) ?? 0) + 1);
      // As Neon's pass over a tenant's shards, a placement weighs on the tenant's next ones.
      tenant.set(target.nodeId, (tenant.get(target.nodeId) ?? 0) + 1);
      return { shard, action: 'move', toNodeId: target.nodeId, cold: target.cold, why: target.why };
    });
}
