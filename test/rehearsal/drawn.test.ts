/**
 * Loaders keep a simulator's own delay where a draw found nothing (issue 33): a DEFAULT draw
 * without a request default answers undefined (the simulator's `??` fallback), never 0 ms.
 */
import { expect, it } from 'vitest';
import { simulatorDefaultsWhereUndrawn } from '../../rehearsal/loaders/drawn.ts';
import { VirtualClock } from '../support/virtual-clock.ts';
import type { DurationSource } from '../../src/domain/rehearsal/types.ts';

const context = (source: DurationSource, defaults?: Record<string, number>) => ({
  clock: new VirtualClock(),
  seed: 1,
  durations: { draw: () => ({ ms: 0, source }) },
  ...(defaults && { defaults }),
});

it('a DEFAULT draw with no request default leaves the simulator its own delay', () => {
  expect(simulatorDefaultsWhereUndrawn(context('DEFAULT'))('VM_MIGRATE', 'prod/vm-1', 'n1')).toBeUndefined();
});

it('a request default, or any draw from history, is the duration', () => {
  expect(simulatorDefaultsWhereUndrawn(context('DEFAULT', { VM_MIGRATE: 0 }))('VM_MIGRATE', 'prod/vm-1', 'n1')).toBe(0);
  expect(simulatorDefaultsWhereUndrawn(context('DEFAULT', { VM_STOP: 5 }))('VM_MIGRATE', 'prod/vm-1', 'n1')).toBeUndefined();
  for (const source of ['WORKLOAD', 'NODE', 'CLUSTER'] as const)
    expect(simulatorDefaultsWhereUndrawn(context(source))('VM_MIGRATE', 'prod/vm-1', 'n1')).toBe(0);
});
