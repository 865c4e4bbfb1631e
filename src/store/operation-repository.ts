import { UNENDED_OPERATION_STATES, type OperationKind, type OperationSnapshot, type OperationState, type StepRecord } from '../domain/operations.ts';
import type { HotPathSql } from './hot-path-sql.ts';
import type { PrismaClient } from './index.ts';
import { compactPlan, mergeSteps, snapshotOf, stepOf, stepsOfPlan } from './operation-rows.ts';
import type { PendingWrite } from './pending-write.ts';

export interface OperationFilter {
  nodeId?: string;
  kind?: OperationKind;
  states?: OperationState[];
}

/** An operation that was RUNNING, CANCELLING or PAUSED when the process stopped, with its steps as recorded. */
export interface InterruptedOperation {
  snapshot: OperationSnapshot;
  steps: StepRecord[];
  /** What it was started with (its `params`, without a stored plan). */
  params: Record<string, unknown>;
}

function paramsOf(json: string): Record<string, unknown> {
  const { plan: _plan, ...params } = JSON.parse(json) as Record<string, unknown>;
  return params;
}

const date = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** Operations and their steps. Writes are returned, not sent, so that callers commit them with others. */
export class OperationRepository {
  constructor(
    private readonly prisma: PrismaClient,
    private readonly sql: HotPathSql,
  ) {}

  /** The row of a new operation with its `params` (e.g. the settings in force) and, when given, its plan (see compactPlan). */
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
        params: JSON.stringify(plan ? { ...params, plan: compactPlan(plan) } : params),
        createdAt: new Date(op.createdAt),
        startedAt: new Date(op.startedAt),
      },
    });
  }

  /**
   * Upserts steps with one statement, however many: the journal's changes and a new
   * operation's plan (10 000 rows must cost milliseconds, not seconds).
   */
  writeSteps(rows: { operationId: string; step: StepRecord }[]): PendingWrite[] {
    if (!rows.length) return [];
    const json = JSON.stringify(
      rows.map(({ operationId, step: s }) => ({
        id: `${operationId}:${s.workloadKind}:${s.workloadId}`,
        operationId,
        workloadKind: s.workloadKind,
        workloadId: s.workloadId,
        action: s.action,
        state: s.state,
        reason: s.reason,
        error: s.error,
        fromNodeId: s.fromNodeId,
        toNodeId: s.toNodeId,
        seq: s.seq,
        startedAt: date(s.startedAt),
        finishedAt: date(s.finishedAt),
        detail: s.detail ?? null,
      })),
    );
    return [this.prisma.$executeRaw(this.sql.upsertSteps(json))];
  }

  /** The progress of a running operation (the journal writes it at every flush). */
  writeProgress(op: OperationSnapshot): PendingWrite {
    return this.prisma.$executeRaw(
      this.sql.updateProgress({
        id: op.id,
        state: op.state,
        error: op.error,
        counts: JSON.stringify(op.counts),
        waitingOn: op.waitingOn ? JSON.stringify(op.waitingOn) : null,
        finishedAt: date(op.finishedAt),
        updatedAt: new Date().toISOString(),
      }),
    );
  }

  /** What the operation was started with (without a stored plan); null for an unknown id. */
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
      },
    });
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
      this.prisma.operation.findUnique({ where: { id: operationId }, select: { params: true, createdAt: true } }),
      this.prisma.operationStep.findMany({ where: { operationId } }),
    ]);
    return mergeSteps(op ? stepsOfPlan(op.params, op.createdAt.getTime()) : [], rows.map(stepOf));
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
      include: { steps: true },
    });
    return rows.map((row) => ({
      snapshot: snapshotOf(row),
      steps: mergeSteps(stepsOfPlan(row.params, row.createdAt.getTime()), row.steps.map(stepOf)),
      params: paramsOf(row.params),
    }));
  }
}
