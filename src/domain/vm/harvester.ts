/** Harvester's own refusals and choices, so a delegated maintenance can say what Harvester will do or why it dropped it (k8s:H2, k8s:H8). Pure. */
import { effectiveStrategy } from './strategy.ts';

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

/**
 * k8s:H2 step 3, as `nodedrain_controller.go` `OnNodeChange` has it: under force Harvester
 * halts the non-migratable VMs and nothing else, and neither tracks nor halts by the
 * strategy label ("forcing a shutdown of all VMs via the UI setting will override the
 * individual settings"). So on a Harvester cluster (k8s:H9) a forced maintenance treats
 * shutdown-class VMs by their eviction strategy, and RestartAfter* VMs are not restarted.
 * The plan's warning for that case, or null.
 */
export function harvesterForceIgnoresLabels(vms: readonly { id: string; maintenanceStrategyLabel: string | null }[]): string | null {
  const labelled = vms.filter((vm) => effectiveStrategy(vm.maintenanceStrategyLabel).strategy !== 'Migrate').map((vm) => vm.id);
  if (!labelled.length) return null;
  return `under force Harvester's controller ignores the maintenance-strategy label (it halts only non-migratable VMs and tracks none): ${labelled.join(', ')} will be evicted by their eviction strategy and not restarted by maintenance`;
}
