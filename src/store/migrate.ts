/**
 * Lockkeeper's own migration runner (docs/architecture.md §3).
 *
 * Applies the Prisma-format migrations in `prisma/migrations/<name>/migration.sql`, in name
 * order, each inside its own transaction, and records them in `_prisma_migrations` exactly
 * as `prisma migrate deploy` does (same table, same columns, checksum = sha256 hex of the
 * file). A database migrated here is seen as up to date by `prisma migrate deploy` and vice
 * versa (checked by hand with Prisma 6.19's CLI: same table DDL, same checksum, ISO-8601
 * timestamps, applied_steps_count 1).
 *
 * We do not use `prisma migrate deploy` at run time because Prisma 7's migrate commands
 * need the native schema engine, which cannot be downloaded on these machines (and the
 * gateway should not shell out to a CLI to start).
 *
 * How the checked-in SQL is produced (details and the exact commands: prisma/README.md):
 * `prisma migrate diff --script` from Prisma 6.19's CLI, installed in a scratch directory
 * under /tmp (never in this project), with `engine: "js"` and a better-sqlite3 adapter in
 * its prisma.config.ts. 20261129232318_init was produced that way from the empty schema.
 * test/store/schema-drift.test.ts proves the migrations match prisma/schema.prisma.
 *
 * Rules:
 * - An applied migration whose file changed (checksum differs) → refuse, naming it.
 * - A migration recorded as started but never finished (a failed `prisma migrate deploy`)
 *   → refuse, naming it: someone must look at the database first.
 * - A migration recorded in the database but missing from the folder (the database is
 *   newer than this code) → refuse, naming it.
 * - A failing migration is rolled back whole and leaves no row behind.
 * - Foreign-key enforcement is switched off while migrating (SQLite's recommended
 *   procedure for schema changes: Prisma's table-redefinition SQL drops and recreates
 *   tables, and with enforcement on, dropping a parent table would cascade-delete
 *   children) and `PRAGMA foreign_key_check` must pass before each commit.
 */
import { createHash, randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { projectPath } from '../project-root.ts';
import type BetterSqlite3 from 'better-sqlite3';

/** `prisma/migrations/` of this checkout. */
export const defaultMigrationsDir = projectPath('prisma/migrations/');

export const MIGRATIONS_TABLE = '_prisma_migrations';

/** The DDL `prisma migrate deploy` uses for SQLite. */
const CREATE_MIGRATIONS_TABLE = `CREATE TABLE IF NOT EXISTS "${MIGRATIONS_TABLE}" (
    "id"                    TEXT PRIMARY KEY NOT NULL,
    "checksum"              TEXT NOT NULL,
    "finished_at"           DATETIME,
    "migration_name"        TEXT NOT NULL,
    "logs"                  TEXT,
    "rolled_back_at"        DATETIME,
    "started_at"            DATETIME NOT NULL DEFAULT current_timestamp,
    "applied_steps_count"   INTEGER UNSIGNED NOT NULL DEFAULT 0
)`;

export interface MigrationFile {
  /** Folder name, e.g. `20261129232318_init`. */
  name: string;
  sql: string;
  /** sha256 hex of the file's bytes. */
  checksum: string;
}

export interface MigrateResult {
  /** Migrations applied by this run, in order. */
  applied: string[];
  /** Migrations that were already applied before this run. */
  alreadyApplied: string[];
}

export interface MigrateOptions {
  /** Defaults to {@link defaultMigrationsDir}. */
  migrationsDir?: string;
}

/** A migration could not be applied, or the recorded history does not match the files. */
export class MigrationError extends Error {
  override readonly name = 'MigrationError';
  constructor(
    message: string,
    /** The migration at fault. */
    readonly migration: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** Prisma accepts a file whose line endings were converted (e.g. git autocrlf); so do we. */
function matchesChecksum(file: MigrationFile, recorded: string): boolean {
  return file.checksum === recorded || sha256Hex(file.sql.replace(/\r\n/g, '\n')) === recorded;
}

/** The migration folders in name order (a folder without migration.sql is skipped, as Prisma does). */
export function readMigrations(migrationsDir: string = defaultMigrationsDir): MigrationFile[] {
  if (!existsSync(migrationsDir)) return [];
  return readdirSync(migrationsDir)
    .filter((name) => statSync(join(migrationsDir, name)).isDirectory())
    .sort()
    .flatMap((name) => {
      const file = join(migrationsDir, name, 'migration.sql');
      if (!existsSync(file)) return [];
      const sql = readFileSync(file, 'utf8');
      return [{ name, sql, checksum: sha256Hex(sql) }];
    });
}

/** A row of `_prisma_migrations` as both dialects' runners read it. */
export interface MigrationRow {
  id: string;
  checksum: string;
  finished_at: string | number | Date | null;
  migration_name: string;
  rolled_back_at: string | number | Date | null;
}

/** Timestamps in the format Prisma's CLI writes into `_prisma_migrations` on SQLite. */
function timestamp(): string {
  return new Date().toISOString().replace(/Z$/, '+00:00');
}

function recordedMigrations(db: BetterSqlite3.Database): MigrationRow[] {
  return db
    .prepare(`SELECT id, checksum, finished_at, migration_name, rolled_back_at FROM "${MIGRATIONS_TABLE}" ORDER BY started_at, migration_name`)
    .all() as MigrationRow[];
}

/** Checks the recorded history against the files; throws a {@link MigrationError} on any mismatch. Returns the applied names. */
export function verifyHistory(rows: MigrationRow[], files: MigrationFile[]): Set<string> {
  const byName = new Map(files.map((file) => [file.name, file]));
  const applied = new Set<string>();
  for (const row of rows) {
    if (row.rolled_back_at !== null) continue;
    const file = byName.get(row.migration_name);
    if (row.finished_at === null) {
      throw new MigrationError(
        `migration ${row.migration_name} was started but did not finish (recorded in ${MIGRATIONS_TABLE}); ` +
          'inspect the database, then mark it rolled back or applied before starting again',
        row.migration_name,
      );
    }
    if (!file) {
      throw new MigrationError(
        `migration ${row.migration_name} is applied to the database but missing from the migrations folder ` + '(the database is newer than this code)',
        row.migration_name,
      );
    }
    if (!matchesChecksum(file, row.checksum)) {
      throw new MigrationError(
        `migration ${row.migration_name} was modified after it was applied ` + `(checksum in database ${row.checksum}, file ${file.checksum})`,
        row.migration_name,
      );
    }
    applied.add(row.migration_name);
  }
  return applied;
}

/**
 * Applies every pending migration to `db`, synchronously. Safe against a concurrent
 * migrator on the same file: each migration takes the write lock (`BEGIN IMMEDIATE`) and
 * re-reads the history before applying.
 */
export function migrate(db: BetterSqlite3.Database, options: MigrateOptions = {}): MigrateResult {
  const files = readMigrations(options.migrationsDir ?? defaultMigrationsDir);
  db.exec(CREATE_MIGRATIONS_TABLE);

  const alreadyApplied = verifyHistory(recordedMigrations(db), files);
  const result: MigrateResult = { applied: [], alreadyApplied: files.filter((f) => alreadyApplied.has(f.name)).map((f) => f.name) };
  const pending = files.filter((file) => !alreadyApplied.has(file.name));
  if (pending.length === 0) return result;

  const foreignKeys = db.pragma('foreign_keys', { simple: true }) as number;
  db.pragma('foreign_keys = OFF');
  try {
    for (const file of pending) {
      db.exec('BEGIN IMMEDIATE');
      try {
        // Another process may have applied it while we waited for the lock.
        if (verifyHistory(recordedMigrations(db), files).has(file.name)) {
          db.exec('ROLLBACK');
          result.alreadyApplied.push(file.name);
          continue;
        }
        const id = randomUUID();
        db.prepare(`INSERT INTO "${MIGRATIONS_TABLE}" (id, checksum, migration_name, started_at, applied_steps_count) VALUES (?, ?, ?, ?, 0)`).run(
          id,
          file.checksum,
          file.name,
          timestamp(),
        );
        db.exec(file.sql);
        const violations = db.pragma('foreign_key_check') as unknown[];
        if (violations.length > 0) {
          throw new Error(`foreign key check failed after the migration: ${JSON.stringify(violations.slice(0, 5))}`);
        }
        db.prepare(`UPDATE "${MIGRATIONS_TABLE}" SET finished_at = ?, applied_steps_count = 1 WHERE id = ?`).run(timestamp(), id);
        db.exec('COMMIT');
        result.applied.push(file.name);
      } catch (error) {
        if (db.inTransaction) db.exec('ROLLBACK');
        if (error instanceof MigrationError) throw error;
        const message = error instanceof Error ? error.message : String(error);
        throw new MigrationError(`migration ${file.name} failed and was rolled back: ${message}`, file.name, {
          cause: error,
        });
      }
    }
  } finally {
    db.pragma(`foreign_keys = ${foreignKeys ? 'ON' : 'OFF'}`);
  }
  return result;
}
