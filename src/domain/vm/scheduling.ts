/**
 * Where a VM may run and where it goes. Mirrors the simulated cluster's placement
 * (plugins/fake/scheduling.ts) so that a plan's predicted targets are the ones the run
 * asks for, with one deliberate difference: a node in maintenance (any phase) never
 * takes a VM, even before it is cordoned.
 */
import { compareNatural } from '../compare.ts';
import type { MaintNode, MaintVm } from './types.ts';

export type PlacementConstraints = Pick<MaintVm, 'nodeSelector' | 'requiredNodeAffinity'>;
type Requirement = MaintVm['requiredNodeAffinity'][number]['matchExpressions'][number];

export function matchesRequirement(labels: Record<string, string>, req: Requirement): boolean {
  const has = Object.hasOwn(labels, req.key);
  switch (req.operator) {
    case 'In':
      return has && req.values.includes(labels[req.key]!);
    case 'NotIn':
      // Kubernetes: NotIn also matches nodes that do not carry the key at all.
      return !has || !req.values.includes(labels[req.key]!);
    case 'Exists':
      return has;
    case 'DoesNotExist':
      return !has;
  }
}

/** Node selector (every pair equal) and required affinity (terms ORed, expressions ANDed; no terms = no constraint). */
export function matchesPlacement(labels: Record<string, string>, c: PlacementConstraints): boolean {
  const selectorOk = Object.entries(c.nodeSelector).every(([k, v]) => Object.hasOwn(labels, k) && labels[k] === v);
  if (!selectorOk) return false;
  if (c.requiredNodeAffinity.length === 0) return true;
  return c.requiredNodeAffinity.some((term) => term.matchExpressions.every((req) => matchesRequirement(labels, req)));
}

/** May new VMs be placed here? Ready, uncordoned and not in maintenance (P3, N3, T4). */
export const isSchedulable = (node: MaintNode): boolean => node.ready && !node.cordoned && node.maintenancePhase === null;

export const canHost = (node: MaintNode, vm: PlacementConstraints): boolean => isSchedulable(node) && matchesPlacement(node.labels, vm);

/** The fake's load: VMs placed on a node (whatever their status). Planned arrivals are added by the caller. */
export function vmLoadByNode(vms: readonly Pick<MaintVm, 'nodeId'>[]): Map<string, number> {
  const load = new Map<string, number>();
  for (const vm of vms) if (vm.nodeId !== null) load.set(vm.nodeId, (load.get(vm.nodeId) ?? 0) + 1);
  return load;
}

/**
 * Where a VM goes: a node that can host it and is not excluded, the least loaded first,
 * then the lowest id (natural order). Null when there is none.
 */
export function pickTargetNode(
  vm: PlacementConstraints,
  nodes: readonly MaintNode[],
  loadByNode: ReadonlyMap<string, number>,
  excludeNodeId: string | null,
): MaintNode | null {
  let best: { node: MaintNode; load: number } | null = null;
  for (const node of nodes) {
    if (node.id === excludeNodeId || !canHost(node, vm)) continue;
    const load = loadByNode.get(node.id) ?? 0;
    if (!best || load < best.load || (load === best.load && compareNatural(node.id, best.node.id) < 0)) best = { node, load };
  }
  return best?.node ?? null;
}
