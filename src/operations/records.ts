import type { Operation, OperationStep, Prisma, PrismaClient } from '../store/index.ts';
import { countsOf } from './counts.ts';
import { emptyCounts } from './counts.ts';
import type { RequestMeta } from './types.ts';
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

/** A new operation, RUNNING from `now`, with the counts of its planned steps. */
export function newOperation(input: { id: string; kind: OperationKind; nodeId: string; meta: RequestMeta; steps: StepRecord[]; now: number }): OperationSnapshot {
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
  };
}

/** The row of a new operation, to be written in the transaction that starts it. */
export function createOperationWrite(prisma: PrismaClient, op: OperationSnapshot, params: object): Prisma.PrismaPromise<unknown> {
  return prisma.operation.create({
    data: {
      id: op.id,
      kind: op.kind,
      nodeId: op.nodeId,
      state: op.state,
      reason: op.reason,
      actor: op.actor,
      counts: JSON.stringify(op.counts),
      params: JSON.stringify(params),
      createdAt: new Date(op.createdAt),
      startedAt: new Date(op.startedAt),
    },
  });
}

type PlannedRow = [workloadKind: StepRecord['workloadKind'], workloadId: string, action: string, state: StepRecord['state'], reason: string | null, fromNodeId: string | null, toNodeId: string | null];

/**
 * A plan as stored in its operation's row (`params.plan`): one compact entry per step,
 * in order. Step rows are written only when a step changes, so starting a drain of
 * 10 000 shards writes one row, not 10 000; a step without a row is as planned.
 */
export function compactPlan(steps: StepRecord[]): PlannedRow[] {
  return steps.map((s) => [s.workloadKind, s.workloadId, s.action, s.state, s.reason, s.fromNodeId, s.toNodeId]);
}

/** The steps of a plan stored by compactPlan, as they were when planned at `plannedAt`. */
export function stepsOfPlan(params: string, plannedAt: number): StepRecord[] {
  const plan = (JSON.parse(params) as { plan?: PlannedRow[] }).plan ?? [];
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
