import type { Operation, OperationStep } from '../store/index.ts';
import { emptyCounts } from './counts.ts';
import type { OperationKind, OperationSnapshot, OperationState, StepRecord, StepState } from './types.ts';

const time = (d: Date | null) => (d ? d.getTime() : null);

/** Database row → the snapshot callers see. */
export function snapshotOf(row: Operation): OperationSnapshot {
  return {
    id: row.id,
    kind: row.kind as OperationKind,
    nodeId: row.nodeId,
    state: row.state as OperationState,
    reason: row.reason,
    actor: row.actor,
    error: row.error,
    counts: { ...emptyCounts(), ...(JSON.parse(row.counts) as object) },
    waitingOn: row.waitingOn ? JSON.parse(row.waitingOn) : null,
    createdAt: row.createdAt.getTime(),
    startedAt: row.startedAt.getTime(),
    finishedAt: time(row.finishedAt),
    etaAt: null,
  };
}

export function stepOf(row: OperationStep): StepRecord {
  return {
    workloadKind: row.workloadKind as StepRecord['workloadKind'],
    workloadId: row.workloadId,
    action: row.action,
    state: row.state as StepState,
    reason: row.reason,
    error: row.error,
    fromNodeId: row.fromNodeId,
    toNodeId: row.toNodeId,
    seq: row.seq,
    startedAt: time(row.startedAt),
    finishedAt: time(row.finishedAt),
  };
}
