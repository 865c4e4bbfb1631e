/** Restart tracking (vm:T1–T5) and its removal with a node (vm:R1). */
import { byNamespaceName } from './order.ts';
import { canHost, pickTargetNode } from './scheduling.ts';
import { isRestartStrategy, type MaintenanceStrategy, type RestartStrategy } from './strategy.ts';
import type { MaintNode, MaintVm, RunStrategy, VmTracking } from './types.ts';

/** vm:T1: what to record before stopping; null for strategies that are not restarted (Shutdown, Migrate). */
export function trackingToRecord(vm: Pick<MaintVm, 'runStrategy'>, strategy: MaintenanceStrategy, node: Pick<MaintNode, 'name'>): VmTracking | null {
  if (!isRestartStrategy(strategy)) return null;
  return { nodeName: node.name, strategy, savedRunStrategy: vm.runStrategy };
}

/** vm:T2: the saved run strategy, or RerunOnFailure when none was saved (a saved Halted would not start it). */
export function restartRunStrategy(tracking: VmTracking): RunStrategy {
  const saved = tracking.savedRunStrategy;
  return saved === null || saved === 'Halted' ? 'RerunOnFailure' : saved;
}

/**
 * vm:T2/T3: restart only a VM that is still halted and whose tracking names a restart
 * strategy. The recorded strategy decides, not the current label. A tracked VM that is
 * not restarted only has its tracking removed.
 */
export function shouldRestart(vm: Pick<MaintVm, 'runStrategy' | 'tracking'>): boolean {
  return vm.tracking !== null && isRestartStrategy(vm.tracking.strategy) && vm.runStrategy === 'Halted';
}

export interface RestartPlacement {
  /** Null when no node can take the VM (the restart will fail; the caller reports it, vm:D2). */
  nodeId: string | null;
  /** Set when the VM does not go where its tracking says (vm:T4). */
  warning: string | null;
}

/**
 * vm:T4: where a restarted VM goes. After-disable VMs go back to the recorded node when it can
 * take them (ready, uncordoned, out of maintenance, matching); otherwise elsewhere, with a
 * warning. After-enable VMs go to the least-loaded node that can host them: while the
 * recorded node is in maintenance that is another node (vm:M4); on a disable (vm:T5) the
 * caller passes the node as it is after disable.
 */
export function restartPlacement(
  vm: Pick<MaintVm, 'id' | 'nodeSelector' | 'requiredNodeAffinity'> & { tracking: VmTracking },
  nodes: readonly MaintNode[],
  loadByNode: ReadonlyMap<string, number>,
): RestartPlacement {
  const { tracking } = vm;
  const recorded = nodes.find((n) => n.name === tracking.nodeName);
  if (tracking.strategy === 'ShutdownAndRestartAfterDisable' && recorded && canHost(recorded, vm)) return { nodeId: recorded.id, warning: null };
  const other = pickTargetNode(vm, nodes, loadByNode, null);
  if (tracking.strategy !== 'ShutdownAndRestartAfterDisable') {
    return { nodeId: other?.id ?? null, warning: other ? null : `VM ${vm.id}: no node can take it for its restart` };
  }
  const why = recorded ? `node ${tracking.nodeName} cannot take it` : `node ${tracking.nodeName} no longer exists`;
  return {
    nodeId: other?.id ?? null,
    warning: other
      ? `VM ${vm.id} restarts on node ${other.id}, not on ${tracking.nodeName}: ${why}`
      : `VM ${vm.id} cannot restart: ${why} and no other node can`,
  };
}

type TrackedVm = MaintVm & { tracking: VmTracking };

function trackedTo(vms: readonly MaintVm[], nodeName: string, strategies: readonly RestartStrategy[]): TrackedVm[] {
  return vms
    .filter(
      (vm): vm is TrackedVm => vm.tracking !== null && vm.tracking.nodeName === nodeName && (strategies as readonly string[]).includes(vm.tracking.strategy),
    )
    .sort(byNamespaceName);
}

/** vm:M4: the VMs to restart once the node is empty. */
export const restartsAfterEnable = (vms: readonly MaintVm[], nodeName: string): TrackedVm[] => trackedTo(vms, nodeName, ['ShutdownAndRestartAfterEnable']);

/**
 * vm:D1/T5: the VMs a disable handles: tracked after-disable VMs, and after-enable VMs that are
 * still tracked (stranded by a disable before COMPLETED). Each gets its tracking removed and
 * is restarted when `shouldRestart` says so.
 */
export const restartsOnDisable = (vms: readonly MaintVm[], nodeName: string): TrackedVm[] =>
  trackedTo(vms, nodeName, ['ShutdownAndRestartAfterDisable', 'ShutdownAndRestartAfterEnable']);

/** vm:R1: every VM whose tracking points at a removed node; the tracking is cleared, nothing restarts. */
export const trackingToClear = (vms: readonly MaintVm[], removedNodeName: string): MaintVm[] =>
  vms.filter((vm) => vm.tracking?.nodeName === removedNodeName).sort(byNamespaceName);
