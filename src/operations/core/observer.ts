import type { OperationKind, OperationOutcome, StepRecord } from '../../domain/operations.ts';
import type { SchedulingPolicy } from '../../domain/storage/policy.ts';

/**
 * Who watches operations besides subscribers: metrics (storage:P2). Every hook is synchronous
 * and must not throw.
 */
export interface OperationObserver {
  operationStarted(kind: OperationKind): void;
  operationFinished(kind: OperationKind, outcome: OperationOutcome): void;
  /** `kind`: the operation the step ran under (a maintenance's shard cut-overs are MAINTENANCE's); `step`: what it was done to. */
  stepFinished(
    kind: OperationKind,
    step: Pick<StepRecord, 'workloadKind' | 'action'>,
    state: 'MOVED' | 'STOPPED' | 'SKIPPED' | 'FAILED',
    reason: string | null,
    durationMs: number | null,
  ): void;
  movesInFlight(kind: OperationKind, delta: number): void;
  /** A step ran past twice its expected duration (domain/stall.ts). */
  stepStalled(kind: OperationKind, step: Pick<StepRecord, 'workloadKind' | 'action'>): void;
  /** A step in flight was abandoned by a forced cancel or disable. */
  stepAbandoned(kind: OperationKind, step: Pick<StepRecord, 'workloadKind' | 'action'>): void;
  policyChanged(nodeId: string, policy: SchedulingPolicy): void;
}

/** The observer of a part run inside another operation: its steps count under the owner's kind (a maintenance's cut-overs are MAINTENANCE's). */
export function underKind(observer: OperationObserver, kind: OperationKind): OperationObserver {
  return {
    operationStarted: () => observer.operationStarted(kind),
    operationFinished: (_, outcome) => observer.operationFinished(kind, outcome),
    stepFinished: (_, step, state, reason, durationMs) => observer.stepFinished(kind, step, state, reason, durationMs),
    movesInFlight: (_, delta) => observer.movesInFlight(kind, delta),
    stepStalled: (_, step) => observer.stepStalled(kind, step),
    stepAbandoned: (_, step) => observer.stepAbandoned(kind, step),
    policyChanged: (nodeId, policy) => observer.policyChanged(nodeId, policy),
  };
}
