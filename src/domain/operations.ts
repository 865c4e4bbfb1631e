import type { RemainingWorkload } from './remaining.ts';
import type { StalledStep } from './stall.ts';

/**
 * Records of background node operations, as persisted and as shown to callers, and the
 * pure rules over them (counts). Here rather than in src/operations so that the event
 * bus and the store can read them without importing the operations that use both.
 */

/**
 * FAILOVER: a lost node's shards attached elsewhere (neon:H5); DELETE: a node's graceful
 * delete (neon:L4); MIGRATE: one shard's prewarmed migration (neon:W2).
 */
export const OPERATION_KINDS = ['DRAIN', 'FILL', 'MAINTENANCE', 'ROLLOUT', 'FAILOVER', 'DELETE', 'MIGRATE'] as const;
export type OperationKind = (typeof OPERATION_KINDS)[number];
/** The storage operations (storage:S3–S5, storage:D1–D8, storage:F1–F5). */
export type StorageKind = 'DRAIN' | 'FILL';

/** PAUSED (rollouts, rollout:O8): not ended, and starting nothing new until resumed. */
export const OPERATION_STATES = ['RUNNING', 'CANCELLING', 'PAUSED', 'SUCCEEDED', 'FAILED', 'CANCELLED'] as const;
export type OperationState = (typeof OPERATION_STATES)[number];
/** States of an operation that has not ended: what a restarted gateway takes up again. */
export const UNENDED_OPERATION_STATES: readonly OperationState[] = ['RUNNING', 'CANCELLING', 'PAUSED'];

/**
 * STOPPED: a VM step that only stopped its VM (it did not move it); MOVED is a cut-over, a
 * migration or a restart elsewhere. ABANDONED: a step in flight when its operation was ended
 * with `force: true` (issue 17): Lockkeeper stopped waiting for it; the backend may still finish it.
 */
export const STEP_STATES = ['PLANNED', 'MOVING', 'MOVED', 'STOPPED', 'SKIPPED', 'FAILED', 'ABANDONED'] as const;
export type StepState = (typeof STEP_STATES)[number];

export interface StepRecord {
  /** `node`: a rollout's step, one per node (rollout:O4). */
  workloadKind: 'shard' | 'vm' | 'node';
  workloadId: string;
  /** CUT_OVER for shards; MIGRATE, STOP or RESTART for VMs. */
  action: string;
  state: StepState;
  /** Why it was skipped, or the failure's code. */
  reason: string | null;
  error: string | null;
  fromNodeId: string | null;
  toNodeId: string | null;
  /** Order within the operation (storage:D1). */
  seq: number;
  startedAt: number | null;
  finishedAt: number | null;
  /** The kind's own state of the step, as JSON (a rollout's node phase and operations); absent for most kinds. */
  detail?: string | null;
}

export interface OperationCounts {
  planned: number;
  moving: number;
  moved: number;
  /** VMs that were stopped (and stay off, or restart on disable). */
  stopped: number;
  skipped: number;
  failed: number;
  /** In flight when a forced cancel ended the operation (their outcome is the backend's). */
  abandoned: number;
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
  /** Steps running past twice their expected duration (domain/stall.ts); absent when none. */
  stalled?: StalledStep[];
}

export interface OperationSnapshot {
  id: string;
  kind: OperationKind;
  /** Null for a ROLLOUT, which has no node of its own (rollout:O2). */
  nodeId: string | null;
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
  /**
   * What an ended drain or maintenance left on its node that would lose service if the node
   * restarted (domain/remaining.ts); null while it runs, for kinds that do not empty a node,
   * or when the backend could not be read at its end.
   */
  remaining: RemainingWorkload[] | null;
}

export interface RequestMeta {
  actor: string;
  reason: string | null;
}

/** Outcome labels for metrics and audit. */
export type OperationOutcome = 'SUCCEEDED' | 'FAILED' | 'CANCELLED';

export const ENDED_OPERATION_STATES: readonly OperationState[] = ['SUCCEEDED', 'FAILED', 'CANCELLED'];

/** The node of a per-node operation (drain, fill, maintenance); only a rollout has none. */
export function nodeOf(op: Pick<OperationSnapshot, 'id' | 'kind' | 'nodeId'>): string {
  if (op.nodeId === null) throw new Error(`operation ${op.id} (${op.kind}) has no node of its own`);
  return op.nodeId;
}

/** Steps with an outcome (the progress done out of `totalOf`). */
export function doneOf(c: Pick<OperationCounts, 'moved' | 'stopped' | 'skipped' | 'failed' | 'abandoned'>): number {
  return c.moved + c.stopped + c.skipped + c.failed + c.abandoned;
}

export function totalOf(c: Pick<OperationCounts, 'planned' | 'moving' | 'moved' | 'stopped' | 'skipped' | 'failed' | 'abandoned'>): number {
  return c.planned + c.moving + doneOf(c);
}

export function emptyCounts(): OperationCounts {
  return { planned: 0, moving: 0, moved: 0, stopped: 0, skipped: 0, failed: 0, abandoned: 0, skippedByReason: {}, failedByReason: {} };
}

const FIELD: Record<StepState, keyof Omit<OperationCounts, 'skippedByReason' | 'failedByReason'>> = {
  PLANNED: 'planned',
  MOVING: 'moving',
  MOVED: 'moved',
  STOPPED: 'stopped',
  SKIPPED: 'skipped',
  FAILED: 'failed',
  ABANDONED: 'abandoned',
};

/** Adjusts `counts` for a step going from `before` (null: new) to `after`. */
export function countTransition(
  counts: OperationCounts,
  before: Pick<StepRecord, 'state' | 'reason'> | null,
  after: Pick<StepRecord, 'state' | 'reason'>,
): void {
  if (before) {
    counts[FIELD[before.state]]--;
    if (before.state === 'SKIPPED') bump(counts.skippedByReason, before.reason, -1);
    if (before.state === 'FAILED') bump(counts.failedByReason, before.reason, -1);
  }
  counts[FIELD[after.state]]++;
  if (after.state === 'SKIPPED') bump(counts.skippedByReason, after.reason, 1);
  if (after.state === 'FAILED') bump(counts.failedByReason, after.reason, 1);
}

function bump(map: Record<string, number>, key: string | null, delta: number) {
  const k = key ?? 'UNKNOWN';
  const v = (map[k] ?? 0) + delta;
  if (v) map[k] = v;
  else delete map[k];
}

export function countsOf(steps: Iterable<StepRecord>): OperationCounts {
  const counts = emptyCounts();
  for (const s of steps) countTransition(counts, null, s);
  return counts;
}

/** A new operation, RUNNING from `now`, with the counts of its planned steps. */
export function newOperation(input: {
  id: string;
  kind: OperationKind;
  nodeId: string | null;
  meta: RequestMeta;
  steps: StepRecord[];
  now: number;
}): OperationSnapshot {
  const { id, kind, nodeId, meta, steps, now } = input;
  return {
    id,
    kind,
    nodeId,
    state: 'RUNNING',
    reason: meta.reason,
    actor: meta.actor,
    error: null,
    counts: countsOf(steps),
    waitingOn: null,
    createdAt: now,
    startedAt: now,
    finishedAt: null,
    etaAt: null,
    remaining: null,
  };
}
