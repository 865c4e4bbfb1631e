import type { ClusterNode } from '../../src/cluster/types.ts';
import { matchesPlacement, pickNode as pickByPlacement, type PlacementConstraints } from '../../src/domain/placement.ts';

/** May new workloads be placed here? */
export const isSchedulable = (node: ClusterNode): boolean => node.availability === 'ACTIVE' && !node.cordoned;

export const canTake = (node: ClusterNode, vm: PlacementConstraints): boolean => isSchedulable(node) && matchesPlacement(node.labels, vm);

/** Where a VM goes on the simulated cluster: the shared placement rule over its schedulable nodes. */
export function pickNode(
  nodes: Iterable<ClusterNode>,
  constraints: PlacementConstraints,
  load: (nodeId: string) => number,
  exclude?: string,
): ClusterNode | null {
  return pickByPlacement(constraints, nodes, { schedulable: isSchedulable, load, exclude: exclude ?? null });
}
