import type { Prisma } from './generated/client.ts';

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
 * parameter to JSON and back). One implementation per database dialect (SQLite:
 * sqlite-hot-path.ts), chosen when the database is opened (`hotPathOf` in database.ts).
 */
export interface HotPath {
  /** Commits one journal batch in one transaction of its own. */
  commit(batch: JournalBatch): Promise<void>;
  /**
   * Upserts steps, given as a JSON array of {@link StepRow}s, keyed by (operationId,
   * workloadKind, workloadId): a statement to commit with other writes through Prisma
   * (a new operation and its first steps).
   */
  upsertSteps(rowsJson: string): Prisma.Sql;
}
