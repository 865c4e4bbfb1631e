/**
 * Where a shard's locations go when Lockkeeper places them itself: after a node delete
 * (neon:L4), when its secondary count changes (neon:W7), and how a migration target is
 * judged (neon:W1). Lockkeeper has no optimiser (the Decision under neon:W1–W9): these
 * small rules are the whole scheduler. Pure.
 */
import { compareNodeIds } from '../compare.ts';
import { chooseDrainDestination } from './drain-plan.ts';
import { maySchedule } from './policy.ts';
import type { PlanNode, PlanShard } from './shards.ts';

export type Placement = { attachedNodeId: string; secondaryNodeIds: string[] };

/**
 * neon:W1 ("worse-scoring", the Decision): the node the drain target order of storage:D3
 * would pick for the shard instead of `targetId` — a schedulable secondary, in the
 * preferred AZ first, then the lowest id — or null when `targetId` is that node or none
 * is better.
 */
export function betterScoringNode(shard: PlanShard, targetId: string, nodes: ReadonlyMap<string, PlanNode>): string | null {
  const best = chooseDrainDestination(shard, nodes);
  return best !== null && best !== targetId ? best : null;
}

/**
 * A node for a new secondary: may schedule, holds nothing of the shard; a zone other than
 * the attached node's first (a secondary is there for when that zone is lost), then the
 * fewest locations, then the lowest id.
 */
function pickSecondaryNode(
  placement: Placement,
  nodes: ReadonlyMap<string, PlanNode>,
  load: ReadonlyMap<string, number>,
  exclude: readonly string[] = [],
): string | null {
  const attachedZone = nodes.get(placement.attachedNodeId)?.zone ?? null;
  const candidates = [...nodes.values()].filter(
    (n) => maySchedule(n) && n.id !== placement.attachedNodeId && !placement.secondaryNodeIds.includes(n.id) && !exclude.includes(n.id),
  );
  candidates.sort(
    (a, b) =>
      Number(a.zone !== null && a.zone === attachedZone) - Number(b.zone !== null && b.zone === attachedZone) ||
      (load.get(a.id) ?? 0) - (load.get(b.id) ?? 0) ||
      compareNodeIds(a.id, b.id),
  );
  return candidates[0]?.id ?? null;
}

/** A node for the attached location when no secondary can take it: may schedule, fewest locations, in the preferred AZ first, then the lowest id. */
function pickFreshAttached(shard: PlanShard, nodes: ReadonlyMap<string, PlanNode>, load: ReadonlyMap<string, number>, exclude: string): string | null {
  const candidates = [...nodes.values()].filter((n) => maySchedule(n) && n.id !== exclude && !shard.secondaryNodeIds.includes(n.id));
  candidates.sort(
    (a, b) =>
      Number(b.zone === shard.preferredZone) - Number(a.zone === shard.preferredZone) ||
      (load.get(a.id) ?? 0) - (load.get(b.id) ?? 0) ||
      compareNodeIds(a.id, b.id),
  );
  return candidates[0]?.id ?? null;
}

/**
 * neon:L4: the shard's placement without `removed`: its attached location moves to a
 * secondary (storage:D3's choice) or, without one, to a fresh node; secondaries lost are
 * replaced until it has `wantSecondaries` again. `error` when no node can take the
 * attached location (a scheduling error); a secondary that cannot be replaced is left out.
 */
export function placementWithout(
  shard: PlanShard,
  removed: string,
  nodes: ReadonlyMap<string, PlanNode>,
  load: ReadonlyMap<string, number>,
  wantSecondaries: number,
): { placement: Placement; missingSecondaries: number } | { error: string } {
  const others = new Map([...nodes].filter(([id]) => id !== removed));
  let attached = shard.attachedNodeId;
  let secondaries = shard.secondaryNodeIds.filter((n) => n !== removed);
  if (attached === removed) {
    const promoted = chooseDrainDestination({ ...shard, secondaryNodeIds: secondaries }, others);
    const target = promoted ?? pickFreshAttached({ ...shard, secondaryNodeIds: secondaries }, others, load, removed);
    if (!target) return { error: `no node may take shard ${shard.id}'s attached location` };
    attached = target;
    secondaries = secondaries.filter((n) => n !== target);
  }
  let missing = 0;
  while (secondaries.length < wantSecondaries) {
    const next = pickSecondaryNode({ attachedNodeId: attached, secondaryNodeIds: secondaries }, others, load);
    if (!next) {
      missing = wantSecondaries - secondaries.length;
      break;
    }
    secondaries = [...secondaries, next];
  }
  return { placement: { attachedNodeId: attached, secondaryNodeIds: secondaries.sort(compareNodeIds) }, missingSecondaries: missing };
}

/** neon:W7: the placement with `want` secondaries: new ones as `pickSecondaryNode` places them, extra ones dropped from the highest id. */
export function withSecondaryCount(placement: Placement, want: number, nodes: ReadonlyMap<string, PlanNode>, load: ReadonlyMap<string, number>): Placement {
  let secondaries = [...placement.secondaryNodeIds].sort(compareNodeIds);
  while (secondaries.length > want) secondaries = secondaries.slice(0, -1);
  while (secondaries.length < want) {
    const next = pickSecondaryNode({ attachedNodeId: placement.attachedNodeId, secondaryNodeIds: secondaries }, nodes, load);
    if (!next) break;
    secondaries = [...secondaries, next].sort(compareNodeIds);
  }
  return { attachedNodeId: placement.attachedNodeId, secondaryNodeIds: secondaries };
}

/** Locations per node (attached and secondary), the load the rules above spread. */
export function locationLoad(shards: readonly Placement[]): Map<string, number> {
  const load = new Map<string, number>();
  for (const s of shards) for (const n of [s.attachedNodeId, ...s.secondaryNodeIds]) load.set(n, (load.get(n) ?? 0) + 1);
  return load;
}
