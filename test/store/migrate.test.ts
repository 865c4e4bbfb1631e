import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { defaultMigrationsDir, migrate, MigrationError, readMigrations, sha256Hex } from '../../src/store/migrate.ts';
import { useTempDir } from './helpers.ts';

const tempDir = useTempDir();

function openFile(dir: string): BetterSqlite3.Database {
  return new BetterSqlite3(join(dir, 'test.db'));
}

function writeMigration(dir: string, name: string, sql: string): void {
  mkdirSync(join(dir, name), { recursive: true });
  writeFileSync(join(dir, name, 'migration.sql'), sql);
}

/** Two tables, the child's rows deleted with their parent (as Prisma writes `onDelete: Cascade`). */
const PARENT_CHILD_SQL = `CREATE TABLE "Parent" ("id" TEXT NOT NULL PRIMARY KEY);
CREATE TABLE "Child" ("id" TEXT NOT NULL PRIMARY KEY, "parentId" TEXT NOT NULL,
  CONSTRAINT "Child_parentId_fkey" FOREIGN KEY ("parentId") REFERENCES "Parent" ("id") ON DELETE CASCADE ON UPDATE CASCADE);`;

function rows(db: BetterSqlite3.Database) {
  return db
    .prepare('SELECT migration_name, checksum, finished_at, rolled_back_at, applied_steps_count, logs FROM _prisma_migrations ORDER BY migration_name')
    .all() as { migration_name: string; checksum: string; finished_at: string | null; applied_steps_count: number }[];
}

function tableNames(db: BetterSqlite3.Database): string[] {
  return (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as { name: string }[]).map((r) => r.name);
}

describe('migrate (the checked-in migrations)', () => {
  it('applies every migration once and records it as prisma migrate deploy does', () => {
    const db = openFile(tempDir());
    const files = readMigrations();
    expect(files.length).toBeGreaterThan(0);

    const first = migrate(db);
    expect(first).toEqual({ applied: files.map((f) => f.name), alreadyApplied: [] });
    expect(tableNames(db)).toEqual(
      expect.arrayContaining(['_prisma_migrations', 'NodeState', 'Operation', 'OperationStep', 'Event', 'AuditEntry', 'VmTracking']),
    );
    const recorded = rows(db);
    expect(recorded.map((r) => r.migration_name)).toEqual(files.map((f) => f.name));
    for (const [i, row] of recorded.entries()) {
      const sql = readFileSync(join(defaultMigrationsDir, files[i]!.name, 'migration.sql'), 'utf8');
      expect(row.checksum).toBe(sha256Hex(sql));
      expect(row.finished_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00$/);
      expect(row.applied_steps_count).toBe(1);
    }

    // The table has exactly the columns Prisma's CLI uses.
    const columns = (db.prepare('PRAGMA table_info(_prisma_migrations)').all() as { name: string; type: string; notnull: number }[]).map(
      (c) => `${c.name} ${c.type}${c.notnull ? ' NOT NULL' : ''}`,
    );
    expect(columns).toEqual([
      'id TEXT NOT NULL',
      'checksum TEXT NOT NULL',
      'finished_at DATETIME',
      'migration_name TEXT NOT NULL',
      'logs TEXT',
      'rolled_back_at DATETIME',
      'started_at DATETIME NOT NULL',
      'applied_steps_count INTEGER UNSIGNED NOT NULL',
    ]);

    // A second run is a no-op.
    const second = migrate(db);
    expect(second).toEqual({ applied: [], alreadyApplied: files.map((f) => f.name) });
    expect(rows(db)).toEqual(recorded);
    db.close();
  });
});

describe('migrate (scratch migrations)', () => {
  it('refuses to run when an applied migration was modified, naming it', () => {
    const dir = tempDir();
    const migrations = join(dir, 'migrations');
    cpSync(defaultMigrationsDir, migrations, { recursive: true });
    const db = openFile(dir);
    migrate(db, { migrationsDir: migrations });

    const name = readMigrations(migrations)[0]!.name;
    const file = join(migrations, name, 'migration.sql');
    writeFileSync(file, `${readFileSync(file, 'utf8')}\n-- edited after it was applied\n`);
    writeMigration(migrations, '99990101000000_later', 'CREATE TABLE "Later" ("id" TEXT NOT NULL PRIMARY KEY);');

    let error: unknown;
    try {
      migrate(db, { migrationsDir: migrations });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(MigrationError);
    expect((error as MigrationError).migration).toBe(name);
    expect((error as Error).message).toContain(name);
    expect((error as Error).message).toMatch(/modified/);
    // Nothing after the mismatch ran.
    expect(tableNames(db)).not.toContain('Later');
    db.close();
  });

  it('accepts a file whose line endings were converted to CRLF (as Prisma does)', () => {
    const dir = tempDir();
    writeMigration(dir, '0001_a', 'CREATE TABLE "A" ("id" TEXT NOT NULL PRIMARY KEY);\nCREATE TABLE "B" ("id" TEXT);\n');
    const db = openFile(dir);
    migrate(db, { migrationsDir: dir });
    writeFileSync(join(dir, '0001_a', 'migration.sql'), 'CREATE TABLE "A" ("id" TEXT NOT NULL PRIMARY KEY);\r\nCREATE TABLE "B" ("id" TEXT);\r\n');
    expect(migrate(db, { migrationsDir: dir })).toEqual({ applied: [], alreadyApplied: ['0001_a'] });
    db.close();
  });

  it('rolls a failing migration back whole, leaving no table and no record behind', () => {
    const dir = tempDir();
    writeMigration(dir, '0001_ok', 'CREATE TABLE "A" ("id" TEXT NOT NULL PRIMARY KEY);');
    writeMigration(
      dir,
      '0002_bad',
      'CREATE TABLE "B" ("id" TEXT NOT NULL PRIMARY KEY);\nINSERT INTO "A" ("id") VALUES (\'x\');\nINSERT INTO "NoSuchTable" VALUES (1);\n',
    );
    writeMigration(dir, '0003_after', 'CREATE TABLE "C" ("id" TEXT NOT NULL PRIMARY KEY);');
    const db = openFile(dir);

    expect(() => migrate(db, { migrationsDir: dir })).toThrow(/migration 0002_bad failed and was rolled back: .*NoSuchTable/);
    expect(tableNames(db)).toEqual(['A', '_prisma_migrations']);
    expect(db.prepare('SELECT count(*) AS n FROM "A"').get()).toEqual({ n: 0 });
    expect(rows(db).map((r) => r.migration_name)).toEqual(['0001_ok']);
    expect(db.inTransaction).toBe(false);
    expect(db.pragma('foreign_keys', { simple: true })).toBe(1);

    // Fixed, it applies, and so does what follows.
    writeMigration(dir, '0002_bad', 'CREATE TABLE "B" ("id" TEXT NOT NULL PRIMARY KEY);');
    expect(migrate(db, { migrationsDir: dir })).toEqual({ applied: ['0002_bad', '0003_after'], alreadyApplied: ['0001_ok'] });
    db.close();
  });

  it('refuses a database that has migrations this code does not know', () => {
    const dir = tempDir();
    writeMigration(dir, '0001_a', 'CREATE TABLE "A" ("id" TEXT NOT NULL PRIMARY KEY);');
    writeMigration(dir, '0002_b', 'CREATE TABLE "B" ("id" TEXT NOT NULL PRIMARY KEY);');
    const db = openFile(dir);
    migrate(db, { migrationsDir: dir });
    const older = join(dir, 'older');
    cpSync(join(dir, '0001_a'), join(older, '0001_a'), { recursive: true });
    expect(() => migrate(db, { migrationsDir: older })).toThrow(/0002_b is applied to the database but missing/);
    db.close();
  });

  it('refuses a migration recorded as started but not finished (a failed prisma migrate deploy)', () => {
    const dir = tempDir();
    writeMigration(dir, '0001_a', 'CREATE TABLE "A" ("id" TEXT NOT NULL PRIMARY KEY);');
    const db = openFile(dir);
    migrate(db, { migrationsDir: dir });
    db.prepare('UPDATE _prisma_migrations SET finished_at = NULL').run();
    expect(() => migrate(db, { migrationsDir: dir })).toThrow(/0001_a was started but did not finish/);
    // Marked rolled back (prisma migrate resolve --rolled-back), it is applied again.
    db.exec('DROP TABLE "A"');
    db.prepare("UPDATE _prisma_migrations SET rolled_back_at = '2020-01-01T00:00:00.000+00:00'").run();
    expect(migrate(db, { migrationsDir: dir }).applied).toEqual(['0001_a']);
    db.close();
  });

  it('does not cascade-delete child rows when a migration redefines a parent table (Prisma SQLite style)', () => {
    const dir = tempDir();
    writeMigration(dir, '0001_init', PARENT_CHILD_SQL);
    const db = openFile(dir);
    migrate(db, { migrationsDir: dir });
    db.exec(`INSERT INTO "Parent" VALUES ('p'); INSERT INTO "Child" VALUES ('c', 'p');`);
    // What `prisma migrate diff` emits to add a required column with a default on SQLite.
    writeMigration(
      dir,
      '0002_redefine',
      `PRAGMA defer_foreign_keys=ON;
PRAGMA foreign_keys=OFF;
CREATE TABLE "new_Parent" ("id" TEXT NOT NULL PRIMARY KEY, "label" TEXT NOT NULL DEFAULT 'x');
INSERT INTO "new_Parent" ("id") SELECT "id" FROM "Parent";
DROP TABLE "Parent";
ALTER TABLE "new_Parent" RENAME TO "Parent";
PRAGMA foreign_keys=ON;
PRAGMA defer_foreign_keys=OFF;
`,
    );
    expect(migrate(db, { migrationsDir: dir }).applied).toEqual(['0002_redefine']);
    expect(db.prepare('SELECT * FROM "Child"').all()).toEqual([{ id: 'c', parentId: 'p' }]);
    expect(db.prepare('SELECT * FROM "Parent"').all()).toEqual([{ id: 'p', label: 'x' }]);
    expect(db.pragma('foreign_keys', { simple: true })).toBe(1);
    db.close();
  });

  it('refuses a migration that leaves foreign keys dangling', () => {
    const dir = tempDir();
    writeMigration(dir, '0001_init', PARENT_CHILD_SQL);
    writeMigration(dir, '0002_dangling', `INSERT INTO "Child" VALUES ('c', 'nobody');`);
    const db = openFile(dir);
    expect(() => migrate(db, { migrationsDir: dir })).toThrow(/0002_dangling failed .*foreign key check/);
    expect(db.prepare('SELECT count(*) AS n FROM "Child"').get()).toEqual({ n: 0 });
    db.close();
  });
});
