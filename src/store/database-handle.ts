import type pg from 'pg';
import type { PrismaClient } from './generated/client.ts';
import type { HotPath } from './hot-path-sql.ts';
import type { MigrateResult } from './migrate.ts';

export type DatabaseDialect = 'sqlite' | 'postgresql';

export interface Database {
  /**
   * The Prisma client generated for the dialect. Typed as the SQLite client: the models are
   * the same, and its types are the subset both clients accept.
   */
  prisma: PrismaClient;
  dialect: DatabaseDialect;
  /** SQLite: the absolute path of the file. PostgreSQL: the URL without its password. */
  file: string;
  /** The dialect's hand-written hot-path statements (ha:DB3), chosen once here. */
  hotPath: HotPath;
  /** PostgreSQL only: the connection pool and the URL it was opened with (for LISTEN connections). */
  postgres?: { pool: pg.Pool; url: string };
  /** What the migrator did while opening. */
  migrations: MigrateResult;
  /**
   * SQLite only: fault injection (tests, issue 27). Run as root, a test cannot take the file
   * away by permissions; this makes every statement fail as failing I/O does (SQLITE_IOERR),
   * on Prisma's connection and the hot path alike, until turned off.
   */
  faults?: { unavailable(on: boolean): void };
  /** Disconnects Prisma. Idempotent: later calls return the same promise. */
  close(): Promise<void>;
}
