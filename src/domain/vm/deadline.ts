import type { MaintenancePlan } from './types.ts';

/** A VM of the plan and the longest its backend lets one live migration of it run (absent: unbounded by the backend). */
interface BoundedVm {
  id: string;
  migrationBoundMs?: number;
}

export interface DeadlineInput {
  plan: Pick<MaintenancePlan, 'vms'>;
  vms: readonly BoundedVm[];
  /** `operations.maintenanceDeadlineMs`: the least a default deadline is. */
  defaultMs: number;
  /** The deadline the request gave; kept as given (vm:M7). */
  explicitMs?: number;
  /** Migrations leaving one node at once (`operations.maxOutboundMigrationsPerNode`). */
  outboundPerNode: number;
  /** What one migration is expected to take while others wait for a slot (`operations.expectedStepMs`). */
  expectedStepMs: number;
}

export interface Deadline {
  deadlineMs: number;
  /** Warnings for the plan and the enable answer: the default grown, or the VMs an explicit deadline may cut. */
  warnings: string[];
  /** VMs whose migration the deadline may end before the backend would (explicit deadlines only). */
  mayCut: string[];
}

const minutes = (ms: number) => `${Math.ceil(ms / 60_000)} min`;

/**
 * vm:M7: the maintenance deadline never cuts a migration the backend would still allow. The
 * default is the larger of `maintenanceDeadlineMs` and the largest migrating VM's bound plus
 * its expected wait for a slot: with `outboundPerNode` migrations at once, the migrations of
 * the other VMs ahead of it take `floor((n − 1) / outboundPerNode)` rounds of
 * `expectedStepMs`. An explicit deadline is kept, and names the VMs it may cut.
 */
export function maintenanceDeadline(input: DeadlineInput): Deadline {
  const migrating = new Set(input.plan.vms.filter((e) => e.action.kind === 'MIGRATE').map((e) => e.vmId));
  const bounded = input.vms.filter((vm) => migrating.has(vm.id) && vm.migrationBoundMs !== undefined);
  const queueWaitMs = Math.floor(Math.max(0, migrating.size - 1) / Math.max(1, input.outboundPerNode)) * input.expectedStepMs;
  const largest = bounded.reduce<BoundedVm | null>((a, vm) => (!a || vm.migrationBoundMs! > a.migrationBoundMs! ? vm : a), null);
  if (input.explicitMs !== undefined) {
    const mayCut = bounded.filter((vm) => vm.migrationBoundMs! + queueWaitMs > input.explicitMs!).map((vm) => vm.id);
    const warnings = mayCut.length
      ? [
          `the deadline (${minutes(input.explicitMs)}) may end the migration of ${mayCut.join(', ')} before KubeVirt would (up to ${minutes(
            largest!.migrationBoundMs! + queueWaitMs,
          )} with the wait for a migration slot; vm:M7)`,
        ]
      : [];
    return { deadlineMs: input.explicitMs, warnings, mayCut };
  }
  const needed = largest ? largest.migrationBoundMs! + queueWaitMs : 0;
  if (needed <= input.defaultMs) return { deadlineMs: input.defaultMs, warnings: [], mayCut: [] };
  return {
    deadlineMs: needed,
    warnings: [
      `the default deadline grows from ${minutes(input.defaultMs)} to ${minutes(needed)}: KubeVirt lets the migration of ${largest!.id} run that long, with the wait for a migration slot (vm:M7)`,
    ],
    mayCut: [],
  };
}
