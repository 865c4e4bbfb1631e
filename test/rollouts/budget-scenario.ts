/**
 * Issue 27 point 7: a rollout scenario that can see a budget bug. In the other scenarios the
 * health gate serialises the waves (the next starts only when the previous node is back), so
 * "never two out" holds whatever the budget says. Here the gate is satisfied at once (restart
 * NONE, no settle time) and a node outside the rollout is out of service when the rollout
 * starts: only the budget (rollout:O5) keeps the rollout's first node in until that node is back.
 */
import { findBudgetViolations } from '../../campaign/order-invariants.ts';
import { driveUntil } from '../operations/drive.ts';
import type { TestApp } from '../support/graphql-app.ts';
import { driveRollout, mostOutOfServiceFromLog, rolloutApp, run, startRollout, twoZoneCluster } from './harness.ts';

/** How long the operator keeps node 4 cordoned at most when the rollout shows no sign of waiting (virtual time). */
const HOLD_MS = 60_000;

export async function budgetScenario(): Promise<{
  t: TestApp;
  state: string | undefined;
  /** The rollout said it waits on its budget, naming what uses it. */
  waitedOn: string | null;
  violations: string[];
  mostOut: { max: number; nodesOut: string[] };
}> {
  const t = await rolloutApp(twoZoneCluster());
  // An operator has node 4 cordoned, for reasons of their own.
  const cordon = t.cluster.cordonNode('4');
  await driveUntil(t, async () => (await t.cluster.getNode('4'))!.cordoned);
  await cordon;
  const r = await startRollout(t, 'nodes: ["1", "2", "3"], action: MAINTENANCE, restart: NONE, maxUnavailable: 1, settleSeconds: 0');
  let waitedOn: string | null = null;
  let held = 0;
  await driveUntil(
    t,
    () => {
      held += 100;
      const waiting = run(t, r.id).snapshot.waitingOn;
      if (waiting?.kind === 'BUDGET') waitedOn = waiting.description;
      return waitedOn !== null || run(t, r.id).details.get('1')!.phase !== 'PENDING' || held >= HOLD_MS;
    },
    { stepMs: 100 },
  );
  const uncordon = t.cluster.uncordonNode('4');
  await driveUntil(t, async () => !(await t.cluster.getNode('4'))!.cordoned);
  await uncordon;
  const done = await driveRollout(t, r.id, ['SUCCEEDED', 'FAILED', 'PAUSED', 'CANCELLED']);
  await t.app.operations.journal.flush();
  const events = await t.db.prisma.event.findMany({ orderBy: { seq: 'asc' } });
  return {
    t,
    state: done?.state,
    waitedOn,
    violations: findBudgetViolations(events.map((e) => ({ seq: e.seq, type: e.type, nodeId: e.nodeId, operationId: e.operationId, payload: e.payload }))),
    mostOut: await mostOutOfServiceFromLog(t),
  };
}
