/**
 * The budget scenario sees a budget bug: with rollout:O5's admission letting one node more out
 * (the off-by-one the campaign's seeded mutant `budget-off-by-one` makes), it fails. The other
 * scenarios, whose health gate serialises the waves, stay green with this bug.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { TestApp } from '../support/graphql-app.ts';
import { budgetScenario } from './budget-scenario.ts';

vi.mock('../../src/domain/rollouts.ts', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../src/domain/rollouts.ts')>();
  return { ...original, waveAdmission: (...[cluster, wave, max]: Parameters<typeof original.waveAdmission>) => original.waveAdmission(cluster, wave, max + 1) };
});

let t: TestApp | undefined;
afterEach(async () => {
  await t?.stop();
  t = undefined;
});

describe('rollout:O5 broken (issue 27 point 7)', () => {
  it('the scenario flags the first node started while node 4 used the budget, and two nodes out at once', async () => {
    const s = await budgetScenario();
    t = s.t;
    expect(s.waitedOn).toBeNull();
    expect(s.violations).toHaveLength(1);
    expect(s.violations[0]).toMatch(/^rollout \S+ started node 1's step \(event \d+\) with 1 node\(s\) out \(4\), budget 1 \(rollout:O5\)$/);
    expect(s.mostOut.max).toBe(2);
  });
});
