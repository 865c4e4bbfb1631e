/**
 * Opening the store. `file:` URLs (the default) open the embedded SQLite store
 * (docs/architecture.md §3); `postgres://` / `postgresql://` URLs open PostgreSQL
 * (postgresql-database.ts, ha:DB1).
 *
 * SQLite: resolve the file, refuse anything
 * that is not a SQLite database, set pragmas, apply migrations, then hand out a Prisma
 * client on the better-sqlite3 driver adapter.
 *
 * An existing file is never deleted, truncated or re-created: a corrupted or locked
 * database is reported as a {@link DatabaseOpenError} naming the file and the cause, and
 * left exactly as it was for an operator to inspect.
 */
import { closeSync, mkdirSync, openSync, readSync, statSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PrismaBetterSqlite3 } from '@prisma/adapter-better-sqlite3';
import BetterSqlite3 from 'better-sqlite3';
import { PrismaClient } from './generated/client.ts';
import type { Database } from './database-handle.ts';
import type { HotPath } from './hot-path-sql.ts';
import { migrate, type MigrateResult } from './migrate.ts';
import { sqliteHotPath } from './sqlite-hot-path.ts';
import { DEFAULT_DATABASE_URL } from '../config/server-defaults.ts';

export type { Database, DatabaseDialect } from './database-handle.ts';

export const DATABASE_URL_ENV = 'LOCKKEEPER_DATABASE_URL';
export { DEFAULT_DATABASE_URL };
/** How long a statement waits for another connection's lock before failing (SQLite busy_timeout). */
const DEFAULT_BUSY_TIMEOUT_MS = 5000;

export interface OpenDatabaseOptions {
  /**
   * `file:<path>` (or a plain path). Relative paths are resolved against `cwd`.
   * When omitted: `$LOCKKEEPER_DATABASE_URL`, else `file:./data/lockkeeper.db`.
   */
  url?: string;
  /** Base directory for a relative path in the URL; default `process.cwd()`. */
  cwd?: string;
  /** SQLite busy_timeout for our connections; default {@link DEFAULT_BUSY_TIMEOUT_MS}. */
  busyTimeoutMs?: number;
  /** Where the migrations live; default `prisma/migrations/` (SQLite) or `prisma/migrations-postgresql/` of this checkout. */
  migrationsDir?: string;
  /** PostgreSQL: how long a transaction of ours may sit idle before the server ends it (OpenPostgresOptions). */
  idleInTransactionTimeoutMs?: number;
}

/** The database could not be opened: not a SQLite file, locked, unreadable, bad migrations... */
export class DatabaseOpenError extends Error {
  override readonly name = 'DatabaseOpenError';
  constructor(
    /** Absolute path of the database file (or the URL when it could not be resolved); for PostgreSQL the URL without its password. */
    readonly file: string,
    cause: unknown,
  ) {
    super(`cannot open database ${file}: ${describe(cause)}`, { cause });
  }
}

function describe(cause: unknown): string {
  if (cause instanceof Error) {
    const code = (cause as { code?: unknown }).code;
    return typeof code === 'string' && !cause.message.includes(code) ? `${cause.message} (${code})` : cause.message;
  }
  return String(cause);
}

/**
 * The absolute file path named by a database URL: `file:./x.db`, `file:/abs/x.db`,
 * `file:///abs/x.db` or a plain path; a `?query` suffix is ignored. In-memory databases and
 * other schemes are refused (throws a plain Error).
 */
export function resolveDatabaseFile(url: string, cwd: string = process.cwd()): string {
  let path: string;
  if (url.startsWith('file://')) {
    path = fileURLToPath(url.replace(/\?.*$/, ''));
  } else if (url.startsWith('file:')) {
    path = url.slice('file:'.length).replace(/\?.*$/, '');
  } else if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) {
    throw new Error(`unsupported database URL ${JSON.stringify(url)}: use file:<path> (SQLite) or postgresql://… (PostgreSQL)`);
  } else {
    path = url;
  }
  if (path === '' || path === ':memory:' || path.startsWith(':memory:')) {
    throw new Error(`unsupported database URL ${JSON.stringify(url)}: in-memory databases are not supported`);
  }
  return isAbsolute(path) ? path : resolve(cwd, path);
}

const SQLITE_HEADER = Buffer.from('SQLite format 3\0', 'latin1');

/** Throws when `file` exists, is not empty, and does not start with the SQLite header. */
function assertSqliteFile(file: string): void {
  let size: number;
  try {
    const stats = statSync(file);
    if (!stats.isFile()) throw new Error('not a regular file');
    size = stats.size;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  if (size === 0) return; // SQLite treats an empty file as an empty database.
  const header = Buffer.alloc(SQLITE_HEADER.length);
  const fd = openSync(file, 'r');
  try {
    readSync(fd, header, 0, header.length, 0);
  } finally {
    closeSync(fd);
  }
  if (!header.equals(SQLITE_HEADER)) {
    throw new Error('file is not a database (no SQLite header); it was left untouched');
  }
}

/**
 * Prisma's better-sqlite3 adapter, keeping the connection it opens so that the hot path
 * writes on the same connection (sqlite-hot-path.ts says why). The adapter holds it in its
 * `client` field; a Prisma upgrade that renames it fails here, at open, by name.
 */
class ConnectionKeepingAdapter extends PrismaBetterSqlite3 {
  connection: BetterSqlite3.Database | null = null;

  override async connect(): ReturnType<PrismaBetterSqlite3['connect']> {
    const adapter = await super.connect();
    const client: unknown = (adapter as unknown as { client?: unknown }).client;
    if (!(client instanceof BetterSqlite3)) throw new Error("Prisma's better-sqlite3 adapter no longer exposes its connection as `client`");
    this.connection = client;
    return adapter;
  }
}

/** Whether the URL selects PostgreSQL (ha:DB1). */
export function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//i.test(url);
}

/**
 * Opens and migrates the database the URL names (SQLite: creating the file when missing),
 * then returns a Prisma client on it.
 */
export async function openDatabase(options: OpenDatabaseOptions = {}): Promise<Database> {
  const url = options.url ?? process.env[DATABASE_URL_ENV] ?? DEFAULT_DATABASE_URL;
  if (isPostgresUrl(url)) {
    const { openPostgresDatabase } = await import('./postgresql-database.ts');
    return openPostgresDatabase(
      url,
      {
        ...(options.migrationsDir && { migrationsDir: options.migrationsDir }),
        ...(options.idleInTransactionTimeoutMs !== undefined && { idleInTransactionTimeoutMs: options.idleInTransactionTimeoutMs }),
      },
      (where, cause) => new DatabaseOpenError(where, cause),
    );
  }
  let file: string;
  try {
    file = resolveDatabaseFile(url, options.cwd ?? process.cwd());
  } catch (error) {
    throw new DatabaseOpenError(url, error);
  }
  const busyTimeoutMs = options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS;

  // Phase 1: a plain better-sqlite3 connection for the checks, the persistent pragmas and
  // the migrations.
  let migrations: MigrateResult;
  let db: BetterSqlite3.Database | undefined;
  try {
    mkdirSync(dirname(file), { recursive: true });
    assertSqliteFile(file);
    db = new BetterSqlite3(file, { timeout: busyTimeoutMs });
    // Reading the schema makes SQLite check the file now, before anything could write to
    // it (not a database, malformed, locked...).
    db.prepare('SELECT count(*) FROM sqlite_master').get();
    if (db.pragma('journal_mode', { simple: true }) !== 'wal') {
      const mode = db.pragma('journal_mode = WAL', { simple: true });
      if (mode !== 'wal') throw new Error(`could not switch to WAL journal mode (got ${String(mode)})`);
    }
    migrations = migrate(db, options.migrationsDir ? { migrationsDir: options.migrationsDir } : {});
  } catch (error) {
    throw new DatabaseOpenError(file, error);
  } finally {
    db?.close();
  }

  // Phase 2: the Prisma client on its own connection (the adapter opens it; the file must
  // exist by now, so nothing is ever created here).
  const adapter = new ConnectionKeepingAdapter({ url: file, timeout: busyTimeoutMs, fileMustExist: true });
  const prisma = new PrismaClient({ adapter });
  let hotPath: HotPath;
  try {
    await prisma.$connect();
    if (!adapter.connection) throw new Error('the database adapter did not connect');
    hotPath = sqliteHotPath(adapter.connection);
    // Per-connection settings. better-sqlite3 is built with foreign keys on and its
    // `timeout` sets busy_timeout; say both explicitly. synchronous=NORMAL is SQLite's
    // recommendation for WAL: durable against a killed process, only a power cut can lose
    // the last commits (never corrupt the file).
    await prisma.$executeRawUnsafe('PRAGMA foreign_keys = ON');
    await prisma.$queryRawUnsafe(`PRAGMA busy_timeout = ${Math.max(0, Math.floor(busyTimeoutMs))}`);
    await prisma.$executeRawUnsafe('PRAGMA synchronous = NORMAL');
  } catch (error) {
    await prisma.$disconnect().catch(() => {});
    throw new DatabaseOpenError(file, error);
  }

  let closing: Promise<void> | undefined;
  const faults = sqliteFaults(adapter.connection!, hotPath);
  return {
    prisma,
    dialect: 'sqlite',
    file,
    hotPath: faults.hotPath,
    faults,
    migrations,
    close: () => (closing ??= prisma.$disconnect()),
  };
}

/**
 * Database.faults for SQLite: while on, every statement prepared on the connection (Prisma's
 * adapter prepares each one) and every hot-path commit fails with SQLITE_IOERR, as a disk
 * that stopped answering does. BEGIN, COMMIT and ROLLBACK still run (they touch no page
 * once the statements between failed): a transaction begun before the fault does not stay
 * open on the connection, and Prisma's adapter, which takes its transaction lock before
 * BEGIN and keeps it when BEGIN throws, is not left locked for good.
 */
function sqliteFaults(connection: BetterSqlite3.Database, hotPath: HotPath): { unavailable(on: boolean): void; hotPath: HotPath } {
  let failing = false;
  const ioError = () => new BetterSqlite3.SqliteError('disk I/O error (injected fault)', 'SQLITE_IOERR');
  const prepare = connection.prepare.bind(connection);
  const exec = connection.exec.bind(connection);
  connection.prepare = ((sql: string) => {
    if (failing && !/^\s*(BEGIN|COMMIT|END|ROLLBACK)\b/i.test(sql)) throw ioError();
    return prepare(sql);
  }) as typeof connection.prepare;
  connection.exec = ((sql: string) => {
    if (failing) throw ioError();
    return exec(sql);
  }) as typeof connection.exec;
  const direct = hotPath.commitDirect;
  const findApiToken = hotPath.findApiToken;
  return {
    unavailable: (on) => {
      failing = on;
    },
    hotPath: {
      ...hotPath,
      ...(direct && {
        commitDirect: (batch) => (failing ? Promise.reject(ioError()) : direct(batch)),
      }),
      ...(findApiToken && {
        findApiToken: (tokenHash) => (failing ? Promise.reject(ioError()) : findApiToken(tokenHash)),
      }),
    },
  };
}
