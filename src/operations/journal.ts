import { Prisma, type PrismaClient } from '../store/index.ts';
import type { OperationSnapshot, StepRecord } from './types.ts';

export interface LoggedEvent {
  type: string;
  nodeId: string | null;
  operationId: string | null;
  payload: unknown;
  at: number;
}

/** Rows per multi-row statement: well under SQLite's bound-parameter limit. */
const CHUNK = 400;
/** How long changes gather before a background flush writes them (real time, not the cluster's clock). */
const GROUP_COMMIT_MS = 50;

/**
 * Group commit for the hot path of an operation. Step changes, operation counters and
 * event-log rows queue here and are written together, one transaction per flush, with
 * one multi-row statement per table. A drain of 10 000 shards thus costs a few hundred
 * transactions, not tens of thousands.
 *
 * Step writes may trail the backend by one flush: that is safe because every backend
 * action is idempotent, so a step found PLANNED or MOVING after a crash is simply run
 * again (the cut-over of a shard already at its destination resolves at once).
 */
export class Journal {
  private steps = new Map<string, { operationId: string; step: StepRecord }>();
  private operations = new Map<string, OperationSnapshot>();
  private events: LoggedEvent[] = [];
  private flushing: Promise<void> | null = null;
  private scheduled = false;

  constructor(
    private readonly prisma: PrismaClient,
    private readonly afterFlush: (operations: OperationSnapshot[], steps: { operationId: string; step: StepRecord }[]) => void,
  ) {}

  step(operationId: string, step: StepRecord): void {
    this.steps.set(`${operationId}\u0000${step.workloadKind}\u0000${step.workloadId}`, { operationId, step: { ...step } });
    this.schedule();
  }

  /** Queues the operation's record; it is read (not copied) when the flush writes it. */
  operation(snapshot: OperationSnapshot): void {
    this.operations.set(snapshot.id, snapshot);
    this.schedule();
  }

  event(event: LoggedEvent): void {
    this.events.push(event);
    this.schedule();
  }

  /** Writes everything queued so far; resolves when it is committed. */
  async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
    if (!this.steps.size && !this.operations.size && !this.events.length) return;
    const steps = [...this.steps.values()];
    const operations = [...this.operations.values()];
    const events = this.events;
    this.steps = new Map();
    this.operations = new Map();
    this.events = [];
    this.flushing = this.write(steps, operations, events).finally(() => {
      this.flushing = null;
    });
    await this.flushing;
    this.afterFlush(operations, steps);
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    // A short window gathers the changes of many moves into one transaction; explicit
    // flushes (operation end, step reads) do not wait for it.
    setTimeout(() => {
      this.scheduled = false;
      this.flush().catch(() => {
        // A failed background flush is retried by the next explicit flush, which rethrows.
      });
    }, GROUP_COMMIT_MS).unref();
  }

  private async write(steps: { operationId: string; step: StepRecord }[], operations: OperationSnapshot[], events: LoggedEvent[]) {
    const statements: Prisma.PrismaPromise<unknown>[] = writeSteps(this.prisma, steps);
    // Raw SQL: Prisma's query compiler would cost more than the write on this hot path.
    for (const op of operations) {
      statements.push(
        this.prisma.$executeRaw`UPDATE "Operation" SET "state" = ${op.state}, "error" = ${op.error}, "counts" = ${JSON.stringify(op.counts)},
          "waitingOn" = ${op.waitingOn ? JSON.stringify(op.waitingOn) : null}, "finishedAt" = ${date(op.finishedAt)}, "updatedAt" = ${new Date().toISOString()}
          WHERE "id" = ${op.id}`,
      );
    }
    for (let i = 0; i < events.length; i += CHUNK) statements.push(this.prisma.$executeRaw(insertEvents(events.slice(i, i + CHUNK))));
    try {
      await this.prisma.$transaction(statements);
    } catch (e) {
      // Put the batch back so nothing is lost; newer queued values win over older ones.
      for (const s of steps) {
        const key = `${s.operationId}\u0000${s.step.workloadKind}\u0000${s.step.workloadId}`;
        if (!this.steps.has(key)) this.steps.set(key, s);
      }
      for (const op of operations) if (!this.operations.has(op.id)) this.operations.set(op.id, op);
      this.events = [...events, ...this.events];
      throw e;
    }
  }
}

const date = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/**
 * Upserts steps with one statement: the rows travel as one JSON parameter that SQLite
 * unpacks with json_each. Also used to write a new operation's plan: Prisma's
 * `createMany` compiles each row and costs seconds (and hundreds of MiB) for a
 * 10 000-shard drain; this costs under 100 ms.
 */
export function writeSteps(prisma: PrismaClient, rows: { operationId: string; step: StepRecord }[]): Prisma.PrismaPromise<unknown>[] {
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
    })),
  );
  // `WHERE true` lets SQLite parse ON CONFLICT after a SELECT (its documented upsert quirk).
  return [
    prisma.$executeRaw`INSERT INTO "OperationStep" ("id", "operationId", "workloadKind", "workloadId", "action", "state", "reason", "error", "fromNodeId", "toNodeId", "seq", "startedAt", "finishedAt")
      SELECT r.value->>'id', r.value->>'operationId', r.value->>'workloadKind', r.value->>'workloadId', r.value->>'action', r.value->>'state',
             r.value->>'reason', r.value->>'error', r.value->>'fromNodeId', r.value->>'toNodeId', r.value->>'seq', r.value->>'startedAt', r.value->>'finishedAt'
      FROM json_each(${json}) AS r WHERE true
      ON CONFLICT ("operationId", "workloadKind", "workloadId") DO UPDATE SET
        "state" = excluded."state", "reason" = excluded."reason", "error" = excluded."error",
        "fromNodeId" = excluded."fromNodeId", "toNodeId" = excluded."toNodeId",
        "startedAt" = excluded."startedAt", "finishedAt" = excluded."finishedAt"`,
  ];
}

function insertEvents(rows: LoggedEvent[]): Prisma.Sql {
  const values = rows.map((e) => Prisma.sql`(${date(e.at)}, ${e.type}, ${e.nodeId}, ${e.operationId}, ${JSON.stringify(e.payload ?? {})})`);
  return Prisma.sql`INSERT INTO "Event" ("at", "type", "nodeId", "operationId", "payload") VALUES ${Prisma.join(values)}`;
}
