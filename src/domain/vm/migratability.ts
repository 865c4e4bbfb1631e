/** Why a running VM cannot be live-migrated off a node (vm:N1–N3). */
import { canHost } from './scheduling.ts';
import type { MaintNode, MaintVm, NonMigratableReason } from './types.ts';

/**
 * vm:N1: a volume whose only healthy replica is on this node. A volume with no healthy
 * replica at all is not vm:N1 (there is no replica on this node to lose).
 */
function lastHealthyReplicaReasons(vm: MaintVm, nodeId: string): NonMigratableReason[] {
  return vm.volumes
    .filter((volume) => {
      const healthy = volume.replicas.filter((r) => r.healthy);
      return healthy.length === 1 && healthy[0]!.nodeId === nodeId;
    })
    .map((volume) => ({ code: 'LastHealthyReplica', volume: volume.name }));
}

/** Every reason that applies, in order vm:N1 (per volume), vm:N2, vm:N3; empty when the VM can migrate. */
export function nonMigratableReasons(vm: MaintVm, nodeId: string, nodes: readonly MaintNode[]): NonMigratableReason[] {
  const reasons = lastHealthyReplicaReasons(vm, nodeId);
  if (!vm.liveMigratable) reasons.push({ code: 'NotLiveMigratable', backendReason: vm.liveMigratableReason ?? 'Unknown' });
  if (!nodes.some((n) => n.id !== nodeId && canHost(n, vm))) reasons.push({ code: 'NodeSchedulingRequirementsNotMet' });
  return reasons;
}

/** One line per reason, for messages and events. */
export function describeReason(reason: NonMigratableReason): string {
  switch (reason.code) {
    case 'LastHealthyReplica':
      return `LastHealthyReplica (volume ${reason.volume})`;
    case 'NotLiveMigratable':
      return `NotLiveMigratable (${reason.backendReason})`;
    case 'NodeSchedulingRequirementsNotMet':
      return 'NodeSchedulingRequirementsNotMet';
  }
}
