import type { AdmissionSql } from './admission-sql.ts';
import type { ApiToken, Prisma } from './generated/client.ts';

/** A step row of the hot path, in the order of {@link STEP_COLUMNS}; times are ISO-8601 text. */
export type StepRow = [
  id: string,
  operationId: string,
  workloadKind: string,
  workloadId: string,
  action: string,
  state: string,
  reason: string | null,
  error: string | null,
  fromNodeId: string | null,
  toNodeId: string | null,
  seq: number,
  startedAt: string | null,
  finishedAt: string | null,
  detail: string | null,
];

/** The columns of `OperationStep` that a {@link StepRow} carries, in its order. */
export const STEP_COLUMNS = [
  'id',
  'operationId',
  'workloadKind',
  'workloadId',
  'action',
  'state',
  'reason',
  'error',
  'fromNodeId',
  'toNodeId',
  'seq',
  'startedAt',
  'finishedAt',
  'detail',
] as const;

/** An operation's progress columns, in the order of {@link PROGRESS_COLUMNS}, then its id. JSON values are text. */
export type ProgressRow = [
  state: string,
  error: string | null,
  counts: string,
  waitingOn: string | null,
  finishedAt: string | null,
  updatedAt: string,
  id: string,
];

export const PROGRESS_COLUMNS = ['state', 'error', 'counts', 'waitingOn', 'finishedAt', 'updatedAt'] as const;

/** An event-log row, in the order of {@link EVENT_COLUMNS}; `payload` is JSON text. */
export type EventRow = [at: string, type: string, nodeId: string | null, operationId: string | null, payload: string];

export const EVENT_COLUMNS = ['at', 'type', 'nodeId', 'operationId', 'payload'] as const;

/** What one group commit of the journal writes: all of it in one transaction, or nothing. */
export interface JournalBatch {
  steps: StepRow[];
  progress: ProgressRow[];
  /** In order: the log's `seq` follows it. */
  events: EventRow[];
}

/**
 * The writes of an operation's hot path, by hand rather than through Prisma's query
 * compiler, which costs more than the writes themselves there (it serialises every
 * parameter to JSON and back). One implementation per database dialect (ha:DB3:
 * sqlite-hot-path.ts, postgresql-hot-path.ts), chosen when the database is opened
 * (`Database.hotPath`); the repositories take it.
 */
export interface HotPath {
  /**
   * Upserts steps, given as a JSON array of {@link StepRow}s, keyed by (operationId,
   * workloadKind, workloadId): a statement to commit with other writes through Prisma
   * (a new operation and its first steps).
   */
  upsertSteps(rowsJson: string): Prisma.Sql;
  /** A journal batch as statements, to commit through Prisma in one transaction with the fence (ha:L3). Events keep their order. */
  journalStatements(batch: JournalBatch): Prisma.Sql[];
  /**
   * Commits a journal batch in one transaction of its own, without Prisma (SQLite, where
   * no fence opens the transaction: the fast path). Absent: the batch goes through
   * {@link journalStatements}.
   */
  commitDirect?(batch: JournalBatch): Promise<void>;
  /**
   * Opens every transaction of the repositories (after the fence or the admission check)
   * where several writers may insert events at once: it takes the lock that makes the event
   * log's seq its commit order (ha:E2; the migration `event_order`). None on SQLite, whose
   * writers are serialised by the file.
   */
  readonly orderEvents?: Prisma.Sql;
  /** Ends every transaction of the repositories where other replicas must hear of new events (ha:E1); none on SQLite (one process). */
  readonly notifyEvents?: Prisma.Sql;
  /** Admission by the database, so that every replica may admit (ha:R2); none on SQLite (one process). */
  readonly admission?: AdmissionSql;
  /**
   * The API token row with this hash, read on a statement prepared once: every request with
   * a token looks its token up (revocation takes effect at once), and Prisma's query
   * compiler and per-query statement preparation cost more than the read (issue 29 point 4).
   * `undefined`: not answered here (a Prisma transaction is open on the connection), ask
   * Prisma. Absent: Prisma always (PostgreSQL).
   */
  findApiToken?(tokenHash: string): Promise<ApiToken | null | undefined>;
}

/** What an upserted step row changes when it exists (its identity and plan stay): the same in both dialects. */
export const STEP_UPSERT_CHANGES = `ON CONFLICT ("operationId", "workloadKind", "workloadId") DO UPDATE SET
  "state" = excluded."state", "reason" = excluded."reason", "error" = excluded."error",
  "fromNodeId" = excluded."fromNodeId", "toNodeId" = excluded."toNodeId",
  "startedAt" = excluded."startedAt", "finishedAt" = excluded."finishedAt", "detail" = excluded."detail"`;

export const quotedColumns = (columns: readonly string[]) => columns.map((c) => `"${c}"`).join(', ');
