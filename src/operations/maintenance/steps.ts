import type { StepRecord } from '../../domain/operations.ts';
import type { MaintenancePlan, VmPlanEntry } from '../../domain/vm/types.ts';

/** Step actions of a maintenance: what each VM on the node is put through. */
export const VM_STEP = { MIGRATE: 'MIGRATE', STOP: 'STOP', STOP_AND_RESTART: 'STOP_AND_RESTART' } as const;

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
  return null;
}
