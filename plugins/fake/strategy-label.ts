import type { ClusterVm } from '../../src/cluster/types.ts';
import { MAINTENANCE_STRATEGY_LABEL } from '../../src/domain/labels.ts';

/** Mirrored into `labels` because on Kubernetes it is a label: selectors see it. */
export function applyStrategyLabel(vm: ClusterVm, value: string | null): void {
  vm.maintenanceStrategyLabel = value;
  if (value === null) delete vm.labels[MAINTENANCE_STRATEGY_LABEL];
  else vm.labels[MAINTENANCE_STRATEGY_LABEL] = value;
}
