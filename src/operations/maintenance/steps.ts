import type { StepRecord } from '../../domain/operations.ts';
import type { MaintenancePlan, VmPlanEntry } from '../../domain/vm/types.ts';

/** Step actions of a maintenance: what each VM on the node is put through. */
export const VM_STEP = {
  MIGRATE: 'MIGRATE',
  STOP: 'STOP',
  STOP_AND_RESTART: 'STOP_AND_RESTART',
  /** k8s:E5: eviction strategy None: the launcher pod is evicted. */
  EVICT: 'EVICT',
  /** k8s:E5: eviction strategy External: an outside controller moves it; nothing is done. */
  WAIT_EXTERNAL: 'WAIT_EXTERNAL',
} as const;

/** Steps done once the VM has left the node, whoever moved it (k8s:E5). */
export const isDepartureStep = (step: { action: string }): boolean => step.action === VM_STEP.EVICT || step.action === VM_STEP.WAIT_EXTERNAL;
/** Steps that stop the VM (vm:M2 a). */
export const isStopStep = (step: { action: string }): boolean => step.action === VM_STEP.STOP || step.action === VM_STEP.STOP_AND_RESTART;

/** The plan's actions as persisted steps, in namespace/name order (vm:M2). */
export function stepsOf(plan: MaintenancePlan): StepRecord[] {
  const steps: StepRecord[] = [];
  for (const entry of plan.vms) {
    const step = stepOfEntry(entry, plan.nodeId, steps.length);
    if (step) steps.push(step);
  }
  return steps;
}

function stepOfEntry(entry: VmPlanEntry, nodeId: string, seq: number): StepRecord | null {
  const base = {
    workloadKind: 'vm' as const,
    workloadId: entry.vmId,
    state: 'PLANNED' as const,
    error: null,
    fromNodeId: nodeId,
    seq,
    startedAt: null,
    finishedAt: null,
  };
  const a = entry.action;
  if (a.kind === 'MIGRATE') return { ...base, action: VM_STEP.MIGRATE, reason: null, toNodeId: a.targetNodeId };
  if (a.kind === 'STOP') {
    const action = a.restart === 'AFTER_ENABLE' ? VM_STEP.STOP_AND_RESTART : VM_STEP.STOP;
    return { ...base, action, reason: a.forced ? 'FORCED' : a.restart, toNodeId: a.restartNodeId };
  }
  if (a.kind === 'EVICT') return { ...base, action: VM_STEP.EVICT, reason: 'EVICTION_STRATEGY_NONE', toNodeId: null };
  if (a.kind === 'EXTERNAL') return { ...base, action: VM_STEP.WAIT_EXTERNAL, reason: 'EVICTION_STRATEGY_EXTERNAL', toNodeId: null };
  return null;
}
