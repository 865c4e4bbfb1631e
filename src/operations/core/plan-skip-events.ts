import type { StepRecord } from '../../domain/operations.ts';
import type { LoggedEvent } from '../../store/event-log.ts';
import type { FinishedStepState } from './step-run.ts';

/** How a kind's run names a finished step on the event log (its `stepEvent`). */
export type StepEventOf = (step: StepRecord, state: FinishedStepState, reason: string | null, error: string | null) => { type: string; payload: object };

/**
 * The terminal event of every step the plan already decided SKIPPED (e.g. storage:D2's
 * `NO_SCHEDULABLE_SECONDARY`, neon:H5f's paused shards), for the admission's transaction: the
 * same type and payload as the run writes for a skip it decides, so that the event log says
 * every skip, whenever it was decided.
 */
export function planSkipEvents(
  steps: readonly StepRecord[],
  stepEvent: StepEventOf,
  where: { at: number; nodeId: string; operationId: string },
): LoggedEvent[] {
  const events: LoggedEvent[] = [];
  for (const step of steps) {
    if (step.state !== 'SKIPPED') continue;
    const { type, payload } = stepEvent(step, 'SKIPPED', step.reason, step.error);
    events.push({ at: where.at, type, nodeId: where.nodeId, operationId: where.operationId, payload });
  }
  return events;
}
