/**
 * The persistence layer's public surface (DESIGN.md §3). Import from here, not from
 * `./generated/` directly.
 */
export {
  DATABASE_URL_ENV,
  DEFAULT_BUSY_TIMEOUT_MS,
  DEFAULT_DATABASE_URL,
  DatabaseOpenError,
  openDatabase,
  resolveDatabaseFile,
  type Database,
  type OpenDatabaseOptions,
} from './database.ts';
export { MigrationError, migrate, readMigrations, type MigrateResult } from './migrate.ts';
export { Prisma, PrismaClient } from './generated/client.ts';
export type { ApiToken, AuditEntry, Event, NodeState, Operation, OperationStep, VmTracking } from './generated/client.ts';
