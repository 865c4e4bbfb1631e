import { afterEach, describe, expect, it } from 'vitest';
import type { TestApp } from '../support/graphql-app.ts';
import { budgetScenario } from './budget-scenario.ts';

let t: TestApp | undefined;
afterEach(async () => {
  await t?.stop();
  t = undefined;
});

describe('rollout:O5 with waves free to overlap (issue 27 point 7)', () => {
  it('a node outside the rollout is out: the first node waits on the budget, naming it, and no step starts while the budget is used', async () => {
    const s = await budgetScenario();
    t = s.t;
    expect(s.state).toBe('SUCCEEDED');
    expect(s.waitedOn).toBe('budget of 1 node(s) used by node-4 (cordoned)');
    expect(s.violations).toEqual([]);
    expect(s.mostOut).toEqual({ max: 1, nodesOut: ['1', '2', '3', '4'] });
  });
});
