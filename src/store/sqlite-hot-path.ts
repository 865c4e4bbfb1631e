import type BetterSqlite3 from 'better-sqlite3';
import { Prisma, type ApiToken } from './generated/client.ts';
import { EVENT_COLUMNS, PROGRESS_COLUMNS, quotedColumns, STEP_COLUMNS, STEP_UPSERT_CHANGES, type HotPath, type JournalBatch } from './hot-path-sql.ts';

const params = (columns: readonly string[]) => columns.map(() => '?').join(', ');

const UPSERT_STEP = `INSERT INTO "OperationStep" (${quotedColumns(STEP_COLUMNS)}) VALUES (${params(STEP_COLUMNS)}) ${STEP_UPSERT_CHANGES}`;
const UPDATE_PROGRESS = `UPDATE "Operation" SET ${PROGRESS_COLUMNS.map((c) => `"${c}" = ?`).join(', ')} WHERE "id" = ?`;
/** The same UPDATE as a Prisma statement: its text around the parameters. */
const UPDATE_PROGRESS_PARTS = UPDATE_PROGRESS.split('?');
const INSERT_EVENT = `INSERT INTO "Event" (${quotedColumns(EVENT_COLUMNS)}) VALUES (${params(EVENT_COLUMNS)})`;

// Many rows as one JSON parameter that SQLite unpacks with json_each (Prisma's `createMany`
// compiles each row and costs seconds for a 10 000-step plan). `WHERE true` lets SQLite
// parse ON CONFLICT after a SELECT (its documented upsert quirk).
const UPSERT_STEPS_JSON = [
  `INSERT INTO "OperationStep" (${quotedColumns(STEP_COLUMNS)}) SELECT ${STEP_COLUMNS.map((_, i) => `r.value->>${i}`).join(', ')} FROM json_each(`,
  `) AS r WHERE true ${STEP_UPSERT_CHANGES}`,
];
const INSERT_EVENTS_JSON = [
  `INSERT INTO "Event" (${quotedColumns(EVENT_COLUMNS)}) SELECT ${EVENT_COLUMNS.map((_, i) => `r.value->>${i}`).join(', ')} FROM json_each(`,
  `) AS r ORDER BY r.key`,
];

/** An `ApiToken` row as SQLite returns it: Prisma's DateTime is ISO-8601 text, its Boolean 0 or 1. */
interface ApiTokenRow extends Omit<ApiToken, 'createdAt' | 'lastUsedAt' | 'expiresAt' | 'revokedAt' | 'revoked'> {
  createdAt: string;
  lastUsedAt: string | null;
  expiresAt: string | null;
  revokedAt: string | null;
  // The adapter reads integers as BigInt (safeIntegers).
  revoked: number | bigint;
}

/** SQLite's own CURRENT_TIMESTAMP (the column default) has no zone: it is UTC. */
const sqliteTime = (text: string) => new Date(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/.test(text) ? `${text.replace(' ', 'T')}Z` : text);
const sqliteTimeOrNull = (text: string | null) => (text === null ? null : sqliteTime(text));

function apiTokenOf(row: ApiTokenRow): ApiToken {
  return {
    ...row,
    createdAt: sqliteTime(row.createdAt),
    lastUsedAt: sqliteTimeOrNull(row.lastUsedAt),
    expiresAt: sqliteTimeOrNull(row.expiresAt),
    revokedAt: sqliteTimeOrNull(row.revokedAt),
    revoked: Number(row.revoked) !== 0,
  };
}

/** How long a group commit waits between looks at a Prisma transaction still open on the connection. */
const TRANSACTION_POLL_MS = 1;

/**
 * The hot path in SQLite's dialect, on the better-sqlite3 connection that Prisma's adapter
 * uses (see openDatabase): a journal batch is a few prepared statements run synchronously
 * in one transaction — no JSON, nothing else runs in between.
 *
 * Prisma's own transactions run on this same connection and stay open across awaits; a
 * batch written inside one would become part of it (and be lost if it rolled back), so a
 * batch waits until none is open. A second connection would not need that wait, but a
 * Prisma transaction that had read before our commit could then not write (SQLite's
 * SQLITE_BUSY_SNAPSHOT).
 */
export function sqliteHotPath(connection: BetterSqlite3.Database): HotPath {
  const upsertStep = connection.prepare(UPSERT_STEP);
  const updateProgress = connection.prepare(UPDATE_PROGRESS);
  const insertEvent = connection.prepare(INSERT_EVENT);
  const write = connection.transaction((batch: JournalBatch) => {
    for (const row of batch.steps) upsertStep.run(row);
    for (const row of batch.progress) updateProgress.run(row);
    for (const row of batch.events) insertEvent.run(row);
  });
  const upsertSteps = (rowsJson: string) => Prisma.sql(UPSERT_STEPS_JSON, rowsJson);
  const tokenByHash = connection.prepare<[string], ApiTokenRow>('SELECT * FROM "ApiToken" WHERE "tokenHash" = ?');
  return {
    async findApiToken(tokenHash) {
      // Inside a Prisma transaction on this connection the read would see its uncommitted writes.
      if (connection.inTransaction) return undefined;
      const row = tokenByHash.get(tokenHash);
      return row ? apiTokenOf(row) : null;
    },
    async commitDirect(batch) {
      while (connection.inTransaction) await new Promise((resolve) => setTimeout(resolve, TRANSACTION_POLL_MS));
      write(batch);
    },
    upsertSteps,
    journalStatements: ({ steps, progress, events }) => [
      ...(steps.length ? [upsertSteps(JSON.stringify(steps))] : []),
      ...progress.map((row) => Prisma.sql(UPDATE_PROGRESS_PARTS, ...row)),
      ...(events.length ? [Prisma.sql(INSERT_EVENTS_JSON, JSON.stringify(events))] : []),
    ],
  };
}
