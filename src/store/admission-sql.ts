/**
 * Admission by the database (ha:R2, ha:R4): what a replica that is not (or not only) the
 * leader writes to start, cancel or configure, and the check that makes it safe. Only
 * PostgreSQL has these (postgresql-hot-path.ts): on SQLite one process owns the file
 * (serve-lock.ts) and its admission lock decides alone.
 */
import { ConflictError, OperationLimitReachedError, type LockkeeperError } from '../domain/errors.ts';
import { Prisma } from './generated/client.ts';

/** What the admitting transaction checks first, against what is committed (lockkeeper_admit). */
export interface AdmissionCheck {
  nodeId: string;
  /** Kinds of which a running operation on the node refuses the admission; null: any kind. */
  conflictingKinds: readonly string[] | null;
  /** The cluster-wide limit and the kinds it counts; null: none. */
  limit: { kinds: readonly string[]; max: number } | null;
  /** The node's scheduling policy the replica decided from; null: not checked. */
  policy: string | null;
  /** The node's maintenance phase the replica decided from (null: not in maintenance); undefined: not checked. */
  phase?: string | null;
}

export interface AdmissionSql {
  /** The first statement of an admitting transaction: serialises admissions of every replica and refuses a stale decision. */
  guard(check: AdmissionCheck): Prisma.Sql;
  /** The last statement: the leader hears at commit that there is work for it (payload: the node). */
  announce(nodeId: string | null): Prisma.Sql;
  /** Moves a RUNNING operation to CANCELLING with its event, in one statement; affects 0 rows when it was not RUNNING. */
  requestCancel(operationId: string, event: { at: string; payload: string }): Prisma.Sql;
}

/** The channel on which admitted work is announced to the leader. */
export const REQUESTS_CHANNEL = 'lockkeeper_requests';

export const postgresqlAdmission: AdmissionSql = {
  guard: (c) =>
    Prisma.sql`SELECT lockkeeper_admit(${c.nodeId}::text, ${c.conflictingKinds ? c.conflictingKinds.join(',') : null}::text,
      ${c.limit ? c.limit.kinds.join(',') : null}::text, ${c.limit && Number.isFinite(c.limit.max) ? c.limit.max : null}::integer,
      ${c.policy}::text, ${c.phase !== undefined}::boolean, ${c.phase ?? null}::text)`,
  announce: (nodeId) => Prisma.sql`SELECT pg_notify(${REQUESTS_CHANNEL}::text, ${nodeId ?? ''}::text)`,
  requestCancel: (id, e) =>
    Prisma.sql`WITH changed AS (
        UPDATE "Operation" SET "state" = 'CANCELLING', "updatedAt" = ${e.at}::timestamp(3) WHERE "id" = ${id} AND "state" = 'RUNNING' RETURNING "id", "nodeId")
      INSERT INTO "Event" ("at", "type", "nodeId", "operationId", "payload")
      SELECT ${e.at}::timestamp(3), 'OPERATION_CANCELLING', "nodeId", "id", ${e.payload} FROM changed`,
};

/** The typed error of an admission the database refused (SQLSTATE LK002–LK004), or null for any other failure. */
export function admissionRefusalOf(error: unknown): LockkeeperError | null {
  for (let e: unknown = error, depth = 0; e && depth < 6; depth++) {
    const text = e instanceof Error ? e.message : typeof e === 'object' ? JSON.stringify(e) : String(e);
    const running = /lockkeeper admission: operation (\S+) already runs on node (\S+)/.exec(text);
    if (running) return new ConflictError(`an operation already runs on node ${running[2]} (operation ${running[1]})`, running[1]);
    const limit = /lockkeeper admission: the cluster already runs (\d+) node operation\(s\); the limit is (\d+)/.exec(text);
    if (limit) return new OperationLimitReachedError(Number(limit[2]), `the cluster already runs ${limit[1]} node operation(s); the limit is ${limit[2]}`);
    const changed = /lockkeeper admission: (node \S+ (?:has scheduling policy|is in maintenance phase) \S+ now) \(another replica changed it\)/.exec(text);
    if (changed) return new ConflictError(`${changed[1]}: another replica changed it while this request was admitted`);
    e = (e as { cause?: unknown }).cause;
  }
  return null;
}
