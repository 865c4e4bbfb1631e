/** Records of background node operations, as persisted and as shown to callers. */
import type { SchedulingPolicy } from '../domain/storage/policy.ts';

export const OPERATION_KINDS = ['DRAIN', 'FILL', 'MAINTENANCE'] as const;
export type OperationKind = (typeof OPERATION_KINDS)[number];
/** The storage operations (spec storage-drain-fill). */
export type StorageKind = 'DRAIN' | 'FILL';

export const OPERATION_STATES = ['RUNNING', 'CANCELLING', 'SUCCEEDED', 'FAILED', 'CANCELLED'] as const;
export type OperationState = (typeof OPERATION_STATES)[number];
/** States in which an operation holds its node and counts toward the cluster-wide limit. */
export const ACTIVE_OPERATION_STATES: readonly OperationState[] = ['RUNNING', 'CANCELLING'];

export const STEP_STATES = ['PLANNED', 'MOVING', 'MOVED', 'SKIPPED', 'FAILED'] as const;
export type StepState = (typeof STEP_STATES)[number];

export interface StepRecord {
  workloadKind: 'shard' | 'vm';
  workloadId: string;
  /** CUT_OVER for shards; MIGRATE, STOP or RESTART for VMs. */
  action: string;
  state: StepState;
  /** Why it was skipped, or the failure's code. */
  reason: string | null;
  error: string | null;
  fromNodeId: string | null;
  toNodeId: string | null;
  /** Order within the operation (D1). */
  seq: number;
  startedAt: number | null;
  finishedAt: number | null;
}

export interface OperationCounts {
  planned: number;
  moving: number;
  moved: number;
  skipped: number;
  failed: number;
  skippedByReason: Record<string, number>;
  failedByReason: Record<string, number>;
}

export interface WaitingOn {
  /** MOVES_IN_FLIGHT | NODE_OFFLINE | CANCELLING */
  kind: string;
  description: string;
  nodeId: string | null;
  workloadIds: string[];
  since: number;
}

export interface OperationSnapshot {
  id: string;
  kind: OperationKind;
  nodeId: string;
  state: OperationState;
  reason: string | null;
  actor: string | null;
  /** Why it failed, e.g. NODE_STATE_CHANGED. */
  error: string | null;
  counts: OperationCounts;
  waitingOn: WaitingOn | null;
  createdAt: number;
  startedAt: number;
  finishedAt: number | null;
  /** Estimated completion instant from the observed move rate; null until a move finished. */
  etaAt: number | null;
}

export interface RequestMeta {
  actor: string;
  reason: string | null;
}

/** Outcome labels for metrics and audit. */
export type OperationOutcome = 'SUCCEEDED' | 'FAILED' | 'CANCELLED';

/**
 * Who watches operations besides subscribers: metrics (P2). Every hook is synchronous
 * and must not throw.
 */
export interface OperationObserver {
  operationStarted(kind: OperationKind): void;
  operationFinished(kind: OperationKind, outcome: OperationOutcome): void;
  stepFinished(kind: OperationKind, state: 'MOVED' | 'SKIPPED' | 'FAILED', reason: string | null, durationMs: number | null): void;
  movesInFlight(kind: OperationKind, delta: number): void;
  policyChanged(nodeId: string, policy: SchedulingPolicy): void;
}
