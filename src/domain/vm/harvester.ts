/** Harvester's own refusals, so a delegated maintenance that Harvester dropped can say why (k8s:H2, k8s:H8). Pure. */

export interface HarvesterNodeView {
  id: string;
  labels: Record<string, string>;
  /** `harvesterhci.io/maintain-status` is present. */
  maintainStatus: boolean;
}

const CONTROL_PLANE = 'node-role.kubernetes.io/control-plane';
const ETCD = 'node-role.kubernetes.io/etcd';
/** Harvester's `defaultSingleCPCount` and `defaultHACPCount` (k8s:H8). */
const SINGLE_CP_COUNT = 1;
const HA_CP_COUNT = 3;

/**
 * k8s:H8: Harvester's `DrainPossible`, in its words; null when it allows the drain. Over
 * the union of control-plane and etcd nodes: one member → refused; otherwise the members
 * without `maintain-status` must be exactly 3.
 */
export function harvesterDrainImpossible(nodeId: string, nodes: readonly HarvesterNodeView[]): string | null {
  const isCp = (n: HarvesterNodeView) => Object.hasOwn(n.labels, CONTROL_PLANE) || Object.hasOwn(n.labels, ETCD);
  const node = nodes.find((n) => n.id === nodeId);
  if (!node || !isCp(node)) return null;
  const set = nodes.filter(isCp);
  if (set.length === SINGLE_CP_COUNT)
    return 'draining of this node is not possible: single controlplane cluster, cannot place controlplane in maintenance mode';
  if (set.filter((n) => !n.maintainStatus).length !== HA_CP_COUNT)
    return 'draining of this node is not possible: another controlplane is already in maintenance mode, cannot place current node in maintenance mode';
  return null;
}
