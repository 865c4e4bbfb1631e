import type { OperationKind, OperationOutcome } from '../../domain/operations.ts';
import type { SchedulingPolicy } from '../../domain/storage/policy.ts';

/**
 * Who watches operations besides subscribers: metrics (storage:P2). Every hook is synchronous
 * and must not throw.
 */
export interface OperationObserver {
  operationStarted(kind: OperationKind): void;
  operationFinished(kind: OperationKind, outcome: OperationOutcome): void;
  stepFinished(kind: OperationKind, state: 'MOVED' | 'SKIPPED' | 'FAILED', reason: string | null, durationMs: number | null): void;
  movesInFlight(kind: OperationKind, delta: number): void;
  policyChanged(nodeId: string, policy: SchedulingPolicy): void;
}
