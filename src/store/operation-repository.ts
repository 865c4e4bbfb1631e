import { UNENDED_OPERATION_STATES, type OperationKind, type OperationSnapshot, type OperationState, type StepRecord } from '../domain/operations.ts';
import type { HotPath, ProgressRow, StepRow } from './hot-path-sql.ts';
import type { PrismaClient } from './index.ts';
import { compactPlan, mergeSteps, snapshotOf, stepOf, stepsOfPlan } from './operation-rows.ts';
import type { PendingWrite } from './pending-write.ts';
import { isoTime } from './iso-time.ts';

export interface OperationFilter {
  nodeId?: string;
  kind?: OperationKind;
  states?: OperationState[];
}

/** An operation that was RUNNING, CANCELLING or PAUSED when the process stopped, with its steps as recorded. */
export interface InterruptedOperation {
  snapshot: OperationSnapshot;
  steps: StepRecord[];
  /** What it was started with (its `params`). */
  params: Record<string, unknown>;
}

const paramsOf = (json: string) => JSON.parse(json) as Record<string, unknown>;

const date = (ms: number | null) => (ms === null ? null : isoTime(ms));

/** A step's row for the hot path (the journal, writeSteps). */
export function stepRow(operationId: string, s: StepRecord): StepRow {
  return [
    `${operationId}:${s.workloadKind}:${s.workloadId}`,
    operationId,
    s.workloadKind,
    s.workloadId,
    s.action,
    s.state,
    s.reason,
    s.error,
    s.fromNodeId,
    s.toNodeId,
    s.seq,
    date(s.startedAt),
    date(s.finishedAt),
    s.detail ?? null,
  ];
}

/** A running operation's progress row for the hot path (the journal writes one per operation at every flush). */
export function progressRow(op: OperationSnapshot, now: Date): ProgressRow {
  return [op.state, op.error, JSON.stringify(op.counts), op.waitingOn ? JSON.stringify(op.waitingOn) : null, date(op.finishedAt), now.toISOString(), op.id];
}

/** Operations and their steps. Writes are returned, not sent, so that callers commit them with others. */
export class OperationRepository {
  constructor(
    private readonly prisma: PrismaClient,
    private readonly hotPath: HotPath,
  ) {}

  /** The row of a new operation with its `params` (e.g. the settings in force) and, when given, its plan (see compactPlan; a row of its own). */
  create(op: OperationSnapshot, params: object, plan?: StepRecord[]): PendingWrite {
    return this.prisma.operation.create({
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
        ...(plan && { plan: { create: { plan: JSON.stringify(compactPlan(plan)) } } }),
      },
    });
  }

  /**
   * Upserts steps with one statement, however many, to commit with other writes: a new
   * operation's first steps (10 000 rows must cost milliseconds, not seconds).
   */
  writeSteps(rows: { operationId: string; step: StepRecord }[]): PendingWrite[] {
    if (!rows.length) return [];
    return [this.prisma.$executeRaw(this.hotPath.upsertSteps(JSON.stringify(rows.map(({ operationId, step }) => stepRow(operationId, step)))))];
  }

  /** What the operation was started with; null for an unknown id. */
  async params(id: string): Promise<Record<string, unknown> | null> {
    const row = await this.prisma.operation.findUnique({ where: { id }, select: { params: true } });
    return row ? paramsOf(row.params) : null;
  }

  /** Replaces what the operation runs with (e.g. a rollout resumed with another setting). */
  setParams(id: string, params: object): PendingWrite {
    return this.prisma.operation.update({ where: { id }, data: { params: JSON.stringify(params) } });
  }

  setState(id: string, state: OperationState): PendingWrite {
    return this.prisma.operation.update({ where: { id }, data: { state } });
  }

  /** The final record of an ended operation. */
  finish(op: OperationSnapshot & { finishedAt: number }): PendingWrite {
    return this.prisma.operation.update({
      where: { id: op.id },
      data: {
        state: op.state,
        error: op.error,
        finishedAt: new Date(op.finishedAt),
        counts: JSON.stringify(op.counts),
        waitingOn: op.waitingOn ? JSON.stringify(op.waitingOn) : null,
        result: op.remaining ? JSON.stringify({ remaining: op.remaining }) : null,
      },
    });
  }

  /**
   * The newest operation of each node, when it is an ended one that recorded what it left
   * (domain/remaining.ts); nodes whose newest operation is anything else are absent.
   */
  async latestRemaining(nodeIds: readonly string[]): Promise<Map<string, NonNullable<OperationSnapshot['remaining']>>> {
    const rows = await this.prisma.operation.findMany({
      where: { nodeId: { in: [...nodeIds] } },
      orderBy: [{ createdAt: 'desc' }, { id: 'asc' }],
      distinct: ['nodeId'],
      select: { nodeId: true, result: true },
    });
    const out = new Map<string, NonNullable<OperationSnapshot['remaining']>>();
    for (const row of rows) {
      const remaining = row.result ? (JSON.parse(row.result) as { remaining?: OperationSnapshot['remaining'] }).remaining : null;
      if (row.nodeId !== null && remaining) out.set(row.nodeId, remaining);
    }
    return out;
  }

  /** How many operations there are of each kind and state (the `lockkeeper_operations` gauge). */
  async countByState(): Promise<{ kind: OperationKind; state: OperationState; count: number }[]> {
    const groups = await this.prisma.operation.groupBy({ by: ['kind', 'state'], _count: { _all: true } });
    return groups.map((g) => ({ kind: g.kind as OperationKind, state: g.state as OperationState, count: g._count._all }));
  }

  async find(id: string): Promise<OperationSnapshot | null> {
    const row = await this.prisma.operation.findUnique({ where: { id } });
    return row ? snapshotOf(row) : null;
  }

  /** Newest first. */
  async list(filter: OperationFilter): Promise<OperationSnapshot[]> {
    const rows = await this.prisma.operation.findMany({
      where: {
        ...(filter.nodeId !== undefined && { nodeId: filter.nodeId }),
        ...(filter.kind !== undefined && { kind: filter.kind }),
        ...(filter.states?.length && { state: { in: filter.states } }),
      },
      orderBy: [{ createdAt: 'desc' }, { id: 'asc' }],
    });
    return rows.map(snapshotOf);
  }

  /** Every step of an operation in plan order: the stored plan overlaid with the steps recorded since. */
  async steps(operationId: string): Promise<StepRecord[]> {
    const [op, rows] = await Promise.all([
      this.prisma.operation.findUnique({ where: { id: operationId }, select: { createdAt: true, plan: true } }),
      this.prisma.operationStep.findMany({ where: { operationId } }),
    ]);
    return mergeSteps(op?.plan ? stepsOfPlan(op.plan.plan, op.createdAt.getTime()) : [], rows.map(stepOf));
  }

  /** Which operations have not ended, and in what state and on which node (a light read: the leader polls it for other replicas' admissions, ha:R2). */
  async unended(): Promise<{ id: string; kind: OperationKind; nodeId: string | null; state: OperationState }[]> {
    const rows = await this.prisma.operation.findMany({
      where: { state: { in: [...UNENDED_OPERATION_STATES] } },
      select: { id: true, kind: true, nodeId: true, state: true },
    });
    return rows.map((r) => ({ ...r, kind: r.kind as OperationKind, state: r.state as OperationState }));
  }

  /** Operations of `kinds` that had not ended when the process stopped (running, cancelling, paused), to be resumed. */
  async interrupted(kinds: readonly OperationKind[], ids?: readonly string[]): Promise<InterruptedOperation[]> {
    const rows = await this.prisma.operation.findMany({
      where: { state: { in: [...UNENDED_OPERATION_STATES] }, kind: { in: [...kinds] }, ...(ids && { id: { in: [...ids] } }) },
      include: { steps: true, plan: true },
    });
    return rows.map((row) => ({
      snapshot: snapshotOf(row),
      steps: mergeSteps(row.plan ? stepsOfPlan(row.plan.plan, row.createdAt.getTime()) : [], row.steps.map(stepOf)),
      params: paramsOf(row.params),
    }));
  }
}
