/**
 * Opening the store on PostgreSQL (ha:DB1): a `postgres://` or
 * `postgresql://` URL selects it. A pool of `pg` connections, the migrator under its
 * advisory lock (ha:DB2), then a Prisma client on `@prisma/adapter-pg`, generated for
 * PostgreSQL from the same models as the SQLite one. Loaded only when such a URL is
 * configured, so a SQLite gateway never loads `pg`.
 */
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { PrismaClient as PostgresPrismaClient } from './generated-postgresql/client.ts';
import type { PrismaClient } from './generated/client.ts';
import type { Database } from './database-handle.ts';
import { migratePostgres } from './migrate-postgresql.ts';
import { postgresqlHotPath } from './postgresql-hot-path.ts';

export interface OpenPostgresOptions {
  migrationsDir?: string;
  /** Connections in the pool; default 10. */
  maxConnections?: number;
  /** How long to wait for a connection at start; default 10 s. */
  connectTimeoutMs?: number;
  /**
   * How long a transaction of ours may sit idle (the process frozen or partitioned between its
   * statements) before the server ends it and drops its locks; default 5 s. A leader frozen
   * inside a fenced transaction holds the lease row's share lock (lockkeeper_fence), and the
   * stand-by's take-over would wait on it for as long as the freeze lasts (ha:L4): keep it
   * under the lease's TTL (idleInTransactionTimeoutMs in src/leadership/leadership.ts).
   */
  idleInTransactionTimeoutMs?: number;
}

const DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT_MS = 5_000;

/** The URL as an operator may read it in a log: user, host, port and database, never the password. */
export function describePostgresUrl(url: string): string {
  const target = postgresTarget(url);
  return `postgresql://${target.user ? `${target.user}@` : ''}${target.host}:${target.port}/${target.database}`;
}

/** Host, port, database and user a URL names, with libpq's defaults. */
function postgresTarget(url: string): { host: string; port: number; database: string; user: string } {
  const parsed = new URL(url);
  const user = decodeURIComponent(parsed.username);
  const host = parsed.hostname || new URLSearchParams(parsed.search).get('host') || 'localhost';
  return {
    host,
    port: parsed.port ? Number(parsed.port) : 5432,
    database: decodeURIComponent(parsed.pathname.replace(/^\//, '')) || user || 'postgres',
    user,
  };
}

/** Opens, migrates and wraps the database; a failure names host, port and database (DatabaseOpenError). */
export async function openPostgresDatabase(url: string, options: OpenPostgresOptions, fail: (where: string, cause: unknown) => Error): Promise<Database> {
  let where: string;
  try {
    where = describePostgresUrl(url);
  } catch (e) {
    throw fail('(unparsable PostgreSQL URL)', e);
  }
  const pool = new pg.Pool({
    connectionString: url,
    max: options.maxConnections ?? 10,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
    idle_in_transaction_session_timeout: options.idleInTransactionTimeoutMs ?? DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT_MS,
  });
  // An idle connection the server dropped must not crash the process; the next query reconnects.
  pool.on('error', () => {});
  let migrations;
  try {
    const client = await pool.connect();
    try {
      migrations = await migratePostgres(client, options.migrationsDir ? { migrationsDir: options.migrationsDir } : {});
    } finally {
      client.release();
    }
  } catch (e) {
    await pool.end().catch(() => {});
    throw fail(where, e);
  }
  const prisma = new PostgresPrismaClient({ adapter: new PrismaPg(pool) }) as unknown as PrismaClient;
  let closing: Promise<void> | undefined;
  return {
    prisma,
    dialect: 'postgresql',
    file: where,
    hotPath: postgresqlHotPath,
    migrations,
    postgres: { pool, url },
    close: () => (closing ??= prisma.$disconnect().finally(() => pool.end())),
  };
}
