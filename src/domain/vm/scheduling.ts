/**
 * Where a VM may run and where it goes, for the maintenance plan. The matching and the
 * choice are the shared rule (../placement.ts) the simulated cluster applies too, so a
 * plan's predicted targets are the ones the run asks for. One deliberate difference: a
 * node in maintenance (any phase) never takes a VM, even before it is cordoned.
 */
import { matchesPlacement, pickNode, type PlacementConstraints } from '../placement.ts';
import type { MaintNode, MaintVm } from './types.ts';

/**
 * May new VMs be placed here? Ready, uncordoned and not in maintenance (vm:P3, vm:N3, vm:T4),
 * nor carrying Harvester's maintenance annotations, which Harvester's target list drops too (k8s:H5).
 */
export const isSchedulable = (node: MaintNode): boolean =>
  node.ready && !node.cordoned && node.maintenancePhase === null && !node.externalMaintenance && node.hostsVms !== false;

export const canHost = (node: MaintNode, vm: PlacementConstraints): boolean => isSchedulable(node) && matchesPlacement(node.labels, vm);

/** The fake's load: VMs placed on a node (whatever their status). Planned arrivals are added by the caller. */
export function vmLoadByNode(vms: readonly Pick<MaintVm, 'nodeId'>[]): Map<string, number> {
  const load = new Map<string, number>();
  for (const vm of vms) if (vm.nodeId !== null) load.set(vm.nodeId, (load.get(vm.nodeId) ?? 0) + 1);
  return load;
}

/** Where a VM goes (placement's choice among the nodes that may take it); null when there is none. */
export function pickTargetNode(
  vm: PlacementConstraints,
  nodes: readonly MaintNode[],
  loadByNode: ReadonlyMap<string, number>,
  excludeNodeId: string | null,
): MaintNode | null {
  return pickNode(vm, nodes, { schedulable: isSchedulable, load: (id) => loadByNode.get(id) ?? 0, exclude: excludeNodeId });
}
