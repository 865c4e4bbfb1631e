/** Operation and step rows ↔ the records callers see, and the compact form of a stored plan. */
import { emptyCounts, type OperationKind, type OperationSnapshot, type OperationState, type StepRecord, type StepState } from '../domain/operations.ts';
import type { Operation, OperationStep } from './index.ts';

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
    remaining: row.result ? ((JSON.parse(row.result) as { remaining?: OperationSnapshot['remaining'] }).remaining ?? null) : null,
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
    detail: row.detail,
  };
}

type PlannedRow = [
  workloadKind: StepRecord['workloadKind'],
  workloadId: string,
  action: string,
  state: StepRecord['state'],
  reason: string | null,
  fromNodeId: string | null,
  toNodeId: string | null,
];

/**
 * A plan as stored beside its operation (table OperationPlan): one compact entry per step,
 * in order. Step rows are written only when a step changes, so starting a drain of
 * 10 000 shards writes one plan row, not 10 000 step rows; a step without a row is as planned.
 */
export function compactPlan(steps: StepRecord[]): PlannedRow[] {
  return steps.map((s) => [s.workloadKind, s.workloadId, s.action, s.state, s.reason, s.fromNodeId, s.toNodeId]);
}

/** The steps of a plan stored by compactPlan (its JSON), as they were when planned at `plannedAt`. */
export function stepsOfPlan(planJson: string, plannedAt: number): StepRecord[] {
  const plan = JSON.parse(planJson) as PlannedRow[];
  return plan.map(([workloadKind, workloadId, action, state, reason, fromNodeId, toNodeId], seq) => ({
    workloadKind,
    workloadId,
    action,
    state,
    reason,
    error: null,
    fromNodeId,
    toNodeId,
    seq,
    startedAt: null,
    finishedAt: state === 'PLANNED' ? null : plannedAt,
  }));
}

/** Planned steps overlaid with the recorded ones (a recorded step is newer), in plan order. */
export function mergeSteps(planned: StepRecord[], recorded: StepRecord[]): StepRecord[] {
  const byKey = new Map(planned.map((s) => [`${s.workloadKind}\u0000${s.workloadId}`, s]));
  for (const s of recorded) byKey.set(`${s.workloadKind}\u0000${s.workloadId}`, s);
  return [...byKey.values()].sort((a, b) => a.seq - b.seq);
}
