import { Prisma } from './generated/client.ts';
import { postgresqlAdmission } from './admission-sql.ts';
import { EVENT_COLUMNS, quotedColumns, STEP_COLUMNS, STEP_UPSERT_CHANGES, type HotPath } from './hot-path-sql.ts';

/** PostgreSQL's type for each column that is not text (the JSON rows carry text). */
const COLUMN_TYPES: Record<string, string> = { seq: 'integer', startedAt: 'timestamp(3)', finishedAt: 'timestamp(3)', at: 'timestamp(3)' };

/** The row elements of a JSON array of arrays, cast to their columns' types. */
const selectRow = (columns: readonly string[]) =>
  columns.map((c, i) => (COLUMN_TYPES[c] ? `(r.value->>${i})::${COLUMN_TYPES[c]}` : `r.value->>${i}`)).join(', ');

// jsonb_array_elements unpacks the one JSON parameter into rows: one statement and one
// parameter however many rows (json_each's counterpart); WITH ORDINALITY keeps the order,
// which the event log's seq follows.
const UPSERT_STEPS_JSON = [
  `INSERT INTO "OperationStep" (${quotedColumns(STEP_COLUMNS)}) SELECT ${selectRow(STEP_COLUMNS)} FROM jsonb_array_elements(`,
  `::jsonb) AS r(value) ${STEP_UPSERT_CHANGES}`,
];
const INSERT_EVENTS_JSON = [
  `INSERT INTO "Event" (${quotedColumns(EVENT_COLUMNS)}) SELECT ${selectRow(EVENT_COLUMNS)} FROM jsonb_array_elements(`,
  `::jsonb) WITH ORDINALITY AS r(value, i) ORDER BY r.i`,
];

const upsertSteps = (rowsJson: string) => Prisma.sql(UPSERT_STEPS_JSON, rowsJson);

/**
 * The hot-path statements in PostgreSQL's dialect (ha:DB3), beside sqlite-hot-path.ts.
 * Every batch goes through Prisma's transaction, which the fence opens (ha:L3).
 * Timestamps travel as ISO-8601 UTC strings, as on SQLite; typed as `timestamp(3)` (the
 * columns' type) their `Z` is ignored, so they are stored as the UTC wall time Prisma
 * itself stores.
 */
export const postgresqlHotPath: HotPath = {
  upsertSteps,
  journalStatements: ({ steps, progress, events }) => [
    ...(steps.length ? [upsertSteps(JSON.stringify(steps))] : []),
    ...progress.map(
      ([state, error, counts, waitingOn, finishedAt, updatedAt, id]) =>
        // A cancel another replica recorded (ha:R4) stays: the leader's progress of a run that
        // has not heard of it yet does not put the operation back to RUNNING.
        Prisma.sql`UPDATE "Operation" SET "state" = CASE WHEN "state" = 'CANCELLING' AND ${state}::text = 'RUNNING' THEN 'CANCELLING' ELSE ${state}::text END, "error" = ${error}, "counts" = ${counts},
          "waitingOn" = ${waitingOn}, "finishedAt" = ${finishedAt}::timestamp(3), "updatedAt" = ${updatedAt}::timestamp(3)
          WHERE "id" = ${id}`,
    ),
    ...(events.length ? [Prisma.sql(INSERT_EVENTS_JSON, JSON.stringify(events))] : []),
  ],

  // Delivered at commit, to every replica that listens (postgresql-listener.ts): the payload
  // is only the newest seq, so NOTIFY's size limit never matters (ha:E1).
  orderEvents: Prisma.sql`SELECT pg_advisory_xact_lock(1280001366)`,
  notifyEvents: Prisma.sql`SELECT pg_notify('lockkeeper_events', (SELECT coalesce(max("seq"), 0) FROM "Event")::text)`,

  admission: postgresqlAdmission,
};
