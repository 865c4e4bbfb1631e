/**
 * The migrator on PostgreSQL (ha:DB2): the same rules as on SQLite
 * (src/store/migrate.ts: checksums, unfinished or unknown migrations refused, one
 * transaction each, recorded in `_prisma_migrations` as `prisma migrate deploy` does), from
 * `prisma/migrations-postgresql/`, under a session-level advisory lock so that replicas
 * starting together apply each migration once: the second waits, then finds it applied.
 */
import { randomUUID } from 'node:crypto';
import { projectPath } from '../project-root.ts';
import type pg from 'pg';
import { MIGRATIONS_TABLE, MigrationError, readMigrations, verifyHistory, type MigrateResult, type MigrationRow } from './migrate.ts';

export const defaultPostgresMigrationsDir = projectPath('prisma/migrations-postgresql/');

/** The advisory lock key the migrators of every replica share ("LKMG"). */
const MIGRATION_LOCK_KEY = 0x4c4b4d47;

/** The DDL `prisma migrate deploy` uses for PostgreSQL. */
const CREATE_MIGRATIONS_TABLE = `CREATE TABLE IF NOT EXISTS "${MIGRATIONS_TABLE}" (
    "id"                    VARCHAR(36) PRIMARY KEY NOT NULL,
    "checksum"              VARCHAR(64) NOT NULL,
    "finished_at"           TIMESTAMPTZ,
    "migration_name"        VARCHAR(255) NOT NULL,
    "logs"                  TEXT,
    "rolled_back_at"        TIMESTAMPTZ,
    "started_at"            TIMESTAMPTZ NOT NULL DEFAULT now(),
    "applied_steps_count"   INTEGER NOT NULL DEFAULT 0
)`;

async function recorded(client: pg.ClientBase): Promise<MigrationRow[]> {
  const { rows } = await client.query<MigrationRow>(
    `SELECT id, checksum, finished_at, migration_name, rolled_back_at FROM "${MIGRATIONS_TABLE}" ORDER BY started_at, migration_name`,
  );
  return rows;
}

/** Applies every pending migration on `client` (one connection, kept for the whole run). */
export async function migratePostgres(client: pg.ClientBase, options: { migrationsDir?: string } = {}): Promise<MigrateResult> {
  const files = readMigrations(options.migrationsDir ?? defaultPostgresMigrationsDir);
  await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
  try {
    await client.query(CREATE_MIGRATIONS_TABLE);
    const alreadyApplied = verifyHistory(await recorded(client), files);
    const result: MigrateResult = { applied: [], alreadyApplied: files.filter((f) => alreadyApplied.has(f.name)).map((f) => f.name) };
    for (const file of files.filter((f) => !alreadyApplied.has(f.name))) {
      await client.query('BEGIN');
      try {
        const id = randomUUID();
        await client.query(`INSERT INTO "${MIGRATIONS_TABLE}" (id, checksum, migration_name, started_at, applied_steps_count) VALUES ($1, $2, $3, now(), 0)`, [
          id,
          file.checksum,
          file.name,
        ]);
        // The simple query protocol: the file may hold many statements (and $$-quoted bodies).
        await client.query(file.sql);
        await client.query(`UPDATE "${MIGRATIONS_TABLE}" SET finished_at = now(), applied_steps_count = 1 WHERE id = $1`, [id]);
        await client.query('COMMIT');
        result.applied.push(file.name);
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        const message = error instanceof Error ? error.message : String(error);
        throw new MigrationError(`migration ${file.name} failed and was rolled back: ${message}`, file.name, { cause: error });
      }
    }
    return result;
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => {});
  }
}
