import { describe, expect, it } from 'vitest';
import { maintenanceDeadline } from '../../../src/domain/vm/deadline.ts';
import type { VmPlanEntry } from '../../../src/domain/vm/types.ts';

/** vm:M7: the maintenance deadline and KubeVirt's bound on each migration. */
const entry = (vmId: string, kind: 'MIGRATE' | 'EVICT'): VmPlanEntry =>
  ({ vmId, action: kind === 'MIGRATE' ? { kind, targetNodeId: '' } : { kind } }) as VmPlanEntry;
const MIN = 60_000;

describe('vm:M7 maintenanceDeadline', () => {
  const plan = { vms: [entry('ns/a', 'MIGRATE'), entry('ns/b', 'MIGRATE'), entry('ns/c', 'MIGRATE'), entry('ns/d', 'EVICT')] };
  const vms = [
    { id: 'ns/a', migrationBoundMs: 100 * MIN },
    { id: 'ns/b', migrationBoundMs: 20 * MIN },
    { id: 'ns/c' },
    // Evicted, not migrated: its bound does not count.
    { id: 'ns/d', migrationBoundMs: 900 * MIN },
  ];
  const base = { plan, vms, defaultMs: 30 * MIN, outboundPerNode: 2, expectedStepMs: 5 * MIN };

  it('the default grows to the largest migrating VM’s bound plus its wait for a slot: 3 VMs, 2 at once, one round of 5 min', () => {
    const d = maintenanceDeadline(base);
    expect(d.deadlineMs).toBe(105 * MIN);
    expect(d.mayCut).toEqual([]);
    expect(d.warnings).toEqual([
      'the default deadline grows from 30 min to 105 min: KubeVirt lets the migration of ns/a run that long, with the wait for a migration slot (vm:M7)',
    ]);
  });

  it('the configured default stays when it covers every bound', () => {
    expect(maintenanceDeadline({ ...base, defaultMs: 200 * MIN })).toEqual({ deadlineMs: 200 * MIN, warnings: [], mayCut: [] });
  });

  it('an explicit deadline is kept and names the VMs it may cut', () => {
    const d = maintenanceDeadline({ ...base, explicitMs: 60 * MIN });
    expect(d.deadlineMs).toBe(60 * MIN);
    expect(d.mayCut).toEqual(['ns/a']);
    const both = maintenanceDeadline({ ...base, explicitMs: 10 * MIN });
    expect(both.mayCut).toEqual(['ns/a', 'ns/b']);
    expect(both.warnings).toEqual([
      'the deadline (10 min) may end the migration of ns/a, ns/b before KubeVirt would (up to 105 min with the wait for a migration slot; vm:M7)',
    ]);
  });
});
