/**
 * Databases for tests on either dialect (ha:DB4). PostgreSQL ones are
 * fresh databases on the run's throw-away server (postgres-global-setup.ts), or on the server
 * `LOCKKEEPER_DATABASE_URL` names when it is a postgres URL. They are not dropped: the
 * throw-away server goes, with them, at the end of the run.
 *
 * `LOCKKEEPER_TEST_DATABASE=postgresql` (or a postgres `LOCKKEEPER_DATABASE_URL`) makes the
 * default dialect PostgreSQL: the store and operation suites then run on it unchanged
 * (acceptance 6, `npm run test:postgresql`).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { inject } from 'vitest';
import { isPostgresUrl, openDatabase, type Database, type DatabaseDialect } from '../../src/store/database.ts';

export const DIALECTS: readonly DatabaseDialect[] = ['sqlite', 'postgresql'];

/** The PostgreSQL server tests create their databases on, or null. */
function postgresServerUrl(): string | null {
  const fromEnv = process.env.LOCKKEEPER_DATABASE_URL;
  if (fromEnv && isPostgresUrl(fromEnv)) return fromEnv;
  return inject('postgresUrl') ?? null;
}

/** Why PostgreSQL tests are skipped here (one line), or null when a server is there. */
export function postgresSkipReason(): string | null {
  return postgresServerUrl() ? null : `PostgreSQL unavailable (${inject('postgresUnavailable') ?? 'no server'}): skipped`;
}

/** The dialect tests use when they do not name one. */
function defaultTestDialect(): DatabaseDialect {
  if (process.env.LOCKKEEPER_TEST_DATABASE === 'postgresql') return 'postgresql';
  const fromEnv = process.env.LOCKKEEPER_DATABASE_URL;
  return fromEnv && isPostgresUrl(fromEnv) ? 'postgresql' : 'sqlite';
}

function withDatabase(serverUrl: string, database: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

/** Creates an empty database on the test server and returns its URL. */
export async function createPostgresDatabase(): Promise<string> {
  const server = postgresServerUrl();
  if (!server) throw new Error(postgresSkipReason()!);
  const name = `lk_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: server });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  return withDatabase(server, name);
}

/** A URL for a fresh, empty database of the dialect: a new SQLite file, or a new PostgreSQL database. */
async function freshDatabaseUrl(dialect: DatabaseDialect = defaultTestDialect()): Promise<string> {
  if (dialect === 'postgresql') return createPostgresDatabase();
  return `file:${join(mkdtempSync(join(tmpdir(), 'lk-test-')), 'lockkeeper.db')}`;
}

/** Opens (and migrates) a database for a test: the URL given (reopening one), else a fresh one of the dialect. */
export async function openTestDatabase(options: { url?: string; dialect?: DatabaseDialect } = {}): Promise<Database & { url: string }> {
  const url = options.url ?? (await freshDatabaseUrl(options.dialect));
  return { ...(await openDatabase({ url })), url };
}

/**
 * Resolves once the database has had no query in flight for a few event-loop turns (always at
 * once for SQLite, whose queries finish within them). VirtualClock.waitForIo takes it.
 */
export function ioIdle(db: Database): () => Promise<void> {
  const pool = db.postgres?.pool;
  if (!pool) return () => Promise.resolve();
  const busy = () => pool.totalCount - pool.idleCount + pool.waitingCount;
  return async () => {
    for (let quiet = 0; quiet < 3;) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (busy() === 0) quiet++;
      else {
        quiet = 0;
        await new Promise<void>((resolve) => setTimeout(resolve, 1));
      }
    }
  };
}

const WRITABLE_TABLES = ['NodeState', 'Operation', 'OperationStep', 'Event', 'VmTracking', 'AuditEntry'];

/**
 * Makes every write fail (on) or work again (off), on either dialect: SQLite's query_only on
 * the client's one connection; on PostgreSQL a statement trigger on each table (every pooled
 * connection sees it).
 */
export async function refuseWrites(db: Database, on: boolean): Promise<void> {
  if (db.dialect === 'sqlite') {
    await db.prisma.$executeRawUnsafe(`PRAGMA query_only = ${on ? 'ON' : 'OFF'}`);
    return;
  }
  if (on) {
    await db.prisma.$executeRawUnsafe(
      `CREATE OR REPLACE FUNCTION lk_test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'writes refused (test)'; END $$`,
    );
  }
  for (const table of WRITABLE_TABLES) {
    await db.prisma.$executeRawUnsafe(
      on
        ? `CREATE TRIGGER lk_test_refuse BEFORE INSERT OR UPDATE OR DELETE ON "${table}" FOR EACH STATEMENT EXECUTE FUNCTION lk_test_refuse()`
        : `DROP TRIGGER IF EXISTS lk_test_refuse ON "${table}"`,
    );
  }
}

/**
 * Makes the database refuse to insert an Operation of `kind` (a row trigger, on either
 * dialect), so that a test can see what else the refused transaction would have written.
 * Returns what lifts the refusal.
 */
export async function refuseOperationsOfKind(db: Database, kind: string): Promise<() => Promise<void>> {
  if (!/^[A-Z_]+$/.test(kind)) throw new Error(`not an operation kind: ${kind}`);
  const trigger = `lk_test_refuse_${kind}`;
  if (db.dialect === 'sqlite') {
    await db.prisma.$executeRawUnsafe(
      `CREATE TRIGGER ${trigger} BEFORE INSERT ON "Operation" WHEN NEW."kind" = '${kind}' BEGIN SELECT RAISE(ABORT, '${kind} refused (test)'); END`,
    );
    return async () => {
      await db.prisma.$executeRawUnsafe(`DROP TRIGGER ${trigger}`);
    };
  }
  await db.prisma.$executeRawUnsafe(
    `CREATE OR REPLACE FUNCTION ${trigger}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION '${kind} refused (test)'; END $$`,
  );
  await db.prisma.$executeRawUnsafe(
    `CREATE TRIGGER ${trigger} BEFORE INSERT ON "Operation" FOR EACH ROW WHEN (NEW."kind" = '${kind}') EXECUTE FUNCTION ${trigger}()`,
  );
  return async () => {
    await db.prisma.$executeRawUnsafe(`DROP TRIGGER ${trigger} ON "Operation"`);
  };
}
