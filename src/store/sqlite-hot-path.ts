import { Prisma } from './generated/client.ts';
import { STEP_UPSERT_CHANGES, type HotPathSql } from './hot-path-sql.ts';

/** The hot-path statements in SQLite's dialect. */
export const sqliteHotPath: HotPathSql = {
  // The rows travel as one JSON parameter that SQLite unpacks with json_each: Prisma's
  // `createMany` compiles each row and costs seconds (and hundreds of MiB) for a
  // 10 000-shard plan; this costs under 100 ms. `WHERE true` lets SQLite parse ON
  // CONFLICT after a SELECT (its documented upsert quirk).
  upsertSteps: (rowsJson) =>
    Prisma.sql`INSERT INTO "OperationStep" ("id", "operationId", "workloadKind", "workloadId", "action", "state", "reason", "error", "fromNodeId", "toNodeId", "seq", "startedAt", "finishedAt", "detail")
      SELECT r.value->>'id', r.value->>'operationId', r.value->>'workloadKind', r.value->>'workloadId', r.value->>'action', r.value->>'state',
             r.value->>'reason', r.value->>'error', r.value->>'fromNodeId', r.value->>'toNodeId', r.value->>'seq', r.value->>'startedAt', r.value->>'finishedAt', r.value->>'detail'
      FROM json_each(${rowsJson}) AS r WHERE true
      ${STEP_UPSERT_CHANGES}`,

  updateProgress: (p) =>
    Prisma.sql`UPDATE "Operation" SET "state" = ${p.state}, "error" = ${p.error}, "counts" = ${p.counts},
          "waitingOn" = ${p.waitingOn}, "finishedAt" = ${p.finishedAt}, "updatedAt" = ${p.updatedAt}
          WHERE "id" = ${p.id}`,

  insertEvents: (rows) => {
    const values = rows.map((e) => Prisma.sql`(${e.at}, ${e.type}, ${e.nodeId}, ${e.operationId}, ${e.payload})`);
    return Prisma.sql`INSERT INTO "Event" ("at", "type", "nodeId", "operationId", "payload") VALUES ${Prisma.join(values)}`;
  },

  // Five parameters a row: well under SQLite's bound-parameter limit.
  maxRowsPerStatement: 400,
};
