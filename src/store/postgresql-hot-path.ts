import { Prisma } from './generated/client.ts';
import { postgresqlAdmission } from './admission-sql.ts';
import { STEP_UPSERT_CHANGES, type HotPathSql } from './hot-path-sql.ts';

const STEP_COLUMNS = Prisma.raw(
  '"id", "operationId", "workloadKind", "workloadId", "action", "state", "reason", "error", "fromNodeId", "toNodeId", "seq", "startedAt", "finishedAt", "detail"',
);

/**
 * The hot-path statements in PostgreSQL's dialect (ha:DB3), beside
 * sqlite-hot-path.ts. Timestamps travel as ISO-8601 UTC strings, as on SQLite; typed as
 * `timestamp(3)` (the columns' type) their `Z` is ignored, so they are stored as the UTC
 * wall time Prisma itself stores.
 */
export const postgresqlHotPath: HotPathSql = {
  // jsonb_to_recordset unpacks the one JSON parameter into typed rows: one statement and
  // one parameter however many steps (json_each's counterpart).
  upsertSteps: (rowsJson) =>
    Prisma.sql`INSERT INTO "OperationStep" (${STEP_COLUMNS})
      SELECT ${STEP_COLUMNS}
      FROM jsonb_to_recordset(${rowsJson}::jsonb) AS r("id" text, "operationId" text, "workloadKind" text, "workloadId" text, "action" text,
        "state" text, "reason" text, "error" text, "fromNodeId" text, "toNodeId" text, "seq" integer,
        "startedAt" timestamp(3), "finishedAt" timestamp(3), "detail" text)
      ${STEP_UPSERT_CHANGES}`,

  // A cancel another replica recorded (ha:R4) stays: the leader's progress of a run that has
  // not heard of it yet does not put the operation back to RUNNING.
  updateProgress: (p) =>
    Prisma.sql`UPDATE "Operation" SET "state" = CASE WHEN "state" = 'CANCELLING' AND ${p.state}::text = 'RUNNING' THEN 'CANCELLING' ELSE ${p.state}::text END, "error" = ${p.error}, "counts" = ${p.counts},
          "waitingOn" = ${p.waitingOn}, "finishedAt" = ${p.finishedAt}::timestamp(3), "updatedAt" = ${p.updatedAt}::timestamp(3)
          WHERE "id" = ${p.id}`,

  insertEvents: (rows) => {
    const values = rows.map((e) => Prisma.sql`(${e.at}::timestamp(3), ${e.type}, ${e.nodeId}, ${e.operationId}, ${e.payload})`);
    return Prisma.sql`INSERT INTO "Event" ("at", "type", "nodeId", "operationId", "payload") VALUES ${Prisma.join(values)}`;
  },

  // Five parameters a row; PostgreSQL allows 65 535 a statement.
  maxRowsPerStatement: 2000,

  // Delivered at commit, to every replica that listens (postgresql-listener.ts): the payload
  // is only the newest seq, so NOTIFY's size limit never matters (ha:E1).
  notifyEvents: Prisma.sql`SELECT pg_notify('lockkeeper_events', (SELECT coalesce(max("seq"), 0) FROM "Event")::text)`,

  admission: postgresqlAdmission,
};
