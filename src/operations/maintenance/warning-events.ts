import type { ClusterVm } from '../../cluster/types.ts';
import { invalidLabelWarning } from '../../domain/vm/plan.ts';
import type { MaintenancePlan } from '../../domain/vm/types.ts';
import type { LoggedEvent } from '../../store/event-log.ts';

/**
 * The warnings of a maintenance as events on the log (and so on the `eventLog` subscription),
 * besides the plan's `warnings` and the disable result's: an operator who watches the stream
 * sees them without asking.
 */
const WARNING_EVENTS = {
  /** vm:V2: a VM labelled with none of the four values, treated as Migrate. */
  strategyLabelInvalid: 'VM_STRATEGY_LABEL_INVALID',
  /** vm:T4: a RestartAfterDisable VM restarted on another node than the one its tracking names. */
  restartedElsewhere: 'VM_RESTARTED_ELSEWHERE',
} as const;

interface Where {
  at: number;
  nodeId: string;
  operationId: string | null;
}

/** vm:V2: one event per VM the enable acts on whose label is invalid (the plan's warning, as an event). */
export function invalidLabelEvents(plan: MaintenancePlan, vms: readonly ClusterVm[], where: Where): LoggedEvent[] {
  const labelOf = new Map(vms.map((vm) => [vm.id, vm.maintenanceStrategyLabel]));
  return plan.vms
    .filter((v) => !v.labelValid && v.action.kind !== 'NONE')
    .map((v) => {
      const label = labelOf.get(v.vmId) ?? null;
      return {
        ...where,
        type: WARNING_EVENTS.strategyLabelInvalid,
        payload: { vm: v.vmId, label, treatedAs: 'Migrate', warning: invalidLabelWarning(v.vmId, label) },
      };
    });
}

/** vm:T4: the VM was restarted, but not on the node it was stopped on. */
export function restartedElsewhereEvent(vmId: string, recordedNodeName: string, toNodeId: string, warning: string, where: Where): LoggedEvent {
  return { ...where, type: WARNING_EVENTS.restartedElsewhere, payload: { vm: vmId, recordedNode: recordedNodeName, to: toNodeId, warning } };
}
