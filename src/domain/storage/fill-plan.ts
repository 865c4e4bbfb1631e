/** Which secondaries a fill promotes (storage:F1–F3). Pure. */
import { compareNodeIds } from '../compare.ts';
import { byTenantAndNumber, type PlanNode, type PlanShard } from './shards.ts';

export interface FillMove {
  shardId: string;
  fromNodeId: string;
  toNodeId: string;
  /** Why it is in the plan: it returns to its preferred AZ, or it evens out the load. */
  why: 'HOME_AZ' | 'FAIR_SHARE';
}

/**
 * The fill plan, computed once at the start (storage:F1).
 *
 * - storage:F2: candidates are shards with a secondary on the filling node. With more than one
 *   AZ, a shard whose preferred AZ is the filling node's and whose attached node is
 *   elsewhere always goes home; those moves count toward the node's share.
 * - storage:F3: expected = floor(attached shards / nodes); the rest of the requirement comes from
 *   the most loaded available nodes first, never taking a node below `expected`, and at
 *   most max(1, floor(shardCount / nodes)) shards of one tenant (as Neon's
 *   `fill_node_plan`).
 */
export function planFill(fillingNodeId: string, shards: readonly PlanShard[], nodes: readonly PlanNode[]): FillMove[] {
  const filling = nodes.find((n) => n.id === fillingNodeId);
  if (!filling || nodes.length === 0) return [];
  const zones = new Set(nodes.map((n) => n.zone));
  const azAware = zones.size > 1;
  const zoneOf = new Map(nodes.map((n) => [n.id, n.zone]));

  const load = new Map(nodes.map((n) => [n.id, 0]));
  for (const s of shards) load.set(s.attachedNodeId, (load.get(s.attachedNodeId) ?? 0) + 1);
  const expected = Math.floor(shards.length / nodes.length);

  const candidates = shards.filter((s) => s.secondaryNodeIds.includes(fillingNodeId) && s.attachedNodeId !== fillingNodeId).sort(byTenantAndNumber);
  const plan: FillMove[] = [];
  const planned = new Set<string>();
  const take = (s: PlanShard, why: FillMove['why']) => {
    plan.push({ shardId: s.id, fromNodeId: s.attachedNodeId, toNodeId: fillingNodeId, why });
    planned.add(s.id);
    load.set(s.attachedNodeId, (load.get(s.attachedNodeId) ?? 0) - 1);
    load.set(fillingNodeId, (load.get(fillingNodeId) ?? 0) + 1);
  };

  if (azAware) {
    for (const s of candidates) {
      if (s.preferredZone !== null && s.preferredZone === filling.zone && zoneOf.get(s.attachedNodeId) !== filling.zone) take(s, 'HOME_AZ');
    }
  }

  let requirement = Math.max(0, expected - (load.get(fillingNodeId) ?? 0));
  const available = new Set(nodes.filter((n) => n.availability === 'ACTIVE').map((n) => n.id));
  const perTenant = new Map<string, number>();
  const sources = [...new Set(candidates.map((s) => s.attachedNodeId))]
    .filter((id) => available.has(id))
    .sort((a, b) => (load.get(b) ?? 0) - (load.get(a) ?? 0) || compareNodeIds(a, b));

  for (const source of sources) {
    for (const s of candidates) {
      if (requirement === 0) return plan;
      if (s.attachedNodeId !== source || planned.has(s.id)) continue;
      if ((load.get(source) ?? 0) <= expected) break;
      const cap = Math.max(1, Math.floor(s.shardCount / nodes.length));
      const taken = perTenant.get(s.tenantId) ?? 0;
      if (taken >= cap) continue;
      perTenant.set(s.tenantId, taken + 1);
      take(s, 'FAIR_SHARE');
      requirement--;
    }
  }
  return plan;
}
