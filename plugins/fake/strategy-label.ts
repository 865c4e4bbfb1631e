import type { ClusterVm } from '../../src/cluster/types.ts';

/** The Kubernetes label that carries the maintenance strategy (spec vm-maintenance §1). */
export const MAINTENANCE_STRATEGY_LABEL = 'harvesterhci.io/maintain-mode-strategy';

/** Mirrored into `labels` because on Kubernetes it is a label: selectors see it. */
export function applyStrategyLabel(vm: ClusterVm, value: string | null): void {
  vm.maintenanceStrategyLabel = value;
  if (value === null) delete vm.labels[MAINTENANCE_STRATEGY_LABEL];
  else vm.labels[MAINTENANCE_STRATEGY_LABEL] = value;
}
