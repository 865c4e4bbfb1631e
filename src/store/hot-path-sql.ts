import type { AdmissionSql } from './admission-sql.ts';
import { Prisma } from './generated/client.ts';

/**
 * The statements of an operation's hot path, written by hand because Prisma's query
 * compiler costs more than the write there. One implementation per database dialect
 * (SQLite today: sqlite-hot-path.ts); the repositories take one.
 */
export interface HotPathSql {
  /**
   * Upserts steps given as one JSON array parameter (rows as written by
   * OperationRepository.writeSteps), keyed by (operationId, workloadKind, workloadId).
   */
  upsertSteps(rowsJson: string): Prisma.Sql;
  /** Sets an operation's progress columns: state, error, counts, waiting-on, finish time. */
  updateProgress(progress: {
    id: string;
    state: string;
    error: string | null;
    counts: string;
    waitingOn: string | null;
    finishedAt: string | null;
    updatedAt: string;
  }): Prisma.Sql;
  /** Appends event-log rows with one multi-row statement. */
  insertEvents(rows: { at: string; type: string; nodeId: string | null; operationId: string | null; payload: string }[]): Prisma.Sql;
  /** Rows per multi-row statement: under the dialect's bound-parameter limit. */
  readonly maxRowsPerStatement: number;
  /** Ends every transaction of the repositories where other replicas must hear of new events (ha:E1); none on SQLite (one process). */
  readonly notifyEvents?: Prisma.Sql;
  /** Admission by the database, so that every replica may admit (ha:R2); none on SQLite (one process). */
  readonly admission?: AdmissionSql;
}

/** What an upserted step row changes when it exists (its identity and plan stay): the same in both dialects. */
export const STEP_UPSERT_CHANGES = Prisma.raw(
  `ON CONFLICT ("operationId", "workloadKind", "workloadId") DO UPDATE SET
        "state" = excluded."state", "reason" = excluded."reason", "error" = excluded."error",
        "fromNodeId" = excluded."fromNodeId", "toNodeId" = excluded."toNodeId",
        "startedAt" = excluded."startedAt", "finishedAt" = excluded."finishedAt", "detail" = excluded."detail"`,
);
