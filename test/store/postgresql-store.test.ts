/**
 * ha:DB1, ha:DB2 on a real PostgreSQL server: URL selection, the migrator under its advisory
 * lock (replicas starting together apply each migration once), its refusals, and start-up
 * errors that name host, port and database but never the password.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { DatabaseOpenError, openDatabase, type Database } from '../../src/store/database.ts';
import { readMigrations } from '../../src/store/migrate.ts';
import { defaultPostgresMigrationsDir, migratePostgres } from '../../src/store/migrate-postgresql.ts';
import { describePostgresUrl } from '../../src/store/postgresql-database.ts';
import { PASSWORD_ROLE } from '../support/postgres-server.ts';
import { createPostgresDatabase, postgresSkipReason } from '../support/test-database.ts';
import { useTempDir } from './helpers.ts';

const skip = postgresSkipReason();
const tempDir = useTempDir();
const clients: pg.Client[] = [];
const databases: Database[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.end();
  for (const d of databases.splice(0)) await d.close();
});

async function client(url: string): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  clients.push(c);
  return c;
}

async function recorded(c: pg.Client) {
  return (
    await c.query<{ migration_name: string; finished_at: Date | null }>('SELECT migration_name, finished_at FROM _prisma_migrations ORDER BY migration_name')
  ).rows;
}

describe('describePostgresUrl', () => {
  it('names user, host, port and database, never the password', () => {
    expect(describePostgresUrl('postgresql://lk:s3cret@db.example:6432/lockkeeper?sslmode=require')).toBe('postgresql://lk@db.example:6432/lockkeeper');
    expect(describePostgresUrl('postgres://db.example/lk')).toBe('postgresql://db.example:5432/lk');
  });
});

describe.skipIf(skip)(skip ?? 'PostgreSQL store', () => {
  it('ha:DB1: a postgres:// URL opens PostgreSQL, migrated, with its own hot path', async () => {
    const url = await createPostgresDatabase();
    const db = await openDatabase({ url: url.replace(/^postgresql:/, 'postgres:') });
    databases.push(db);
    expect(db.dialect).toBe('postgresql');
    expect(db.file).toBe(describePostgresUrl(url));
    expect(db.migrations.applied).toEqual(readMigrations(defaultPostgresMigrationsDir).map((f) => f.name));
    await db.prisma.nodeState.create({ data: { id: 'n1', schedulingPolicy: 'PAUSE' } });
    expect((await db.prisma.nodeState.findUnique({ where: { id: 'n1' } }))?.schedulingPolicy).toBe('PAUSE');
    // Opening it again applies nothing.
    const again = await openDatabase({ url });
    databases.push(again);
    expect(again.migrations).toEqual({ applied: [], alreadyApplied: db.migrations.applied });
  });

  it('ha:DB2: five replicas migrating one empty database at once apply each migration exactly once', async () => {
    const url = await createPostgresDatabase();
    const results = await Promise.all(Array.from({ length: 5 }, async () => migratePostgres(await client(url))));
    const files = readMigrations(defaultPostgresMigrationsDir).map((f) => f.name);
    // One of them applied everything; the others waited for the lock and found it done.
    expect(results.filter((r) => r.applied.length > 0)).toEqual([{ applied: files, alreadyApplied: [] }]);
    expect(results.filter((r) => r.applied.length === 0)).toHaveLength(4);
    const rows = await recorded(await client(url));
    expect(rows.map((r) => r.migration_name)).toEqual(files);
    expect(rows.every((r) => r.finished_at instanceof Date)).toBe(true);
  });

  it('ha:DB2: a failing migration is rolled back whole; a modified one is refused, naming it', async () => {
    const url = await createPostgresDatabase();
    const dir = join(tempDir(), 'migrations');
    const write = (name: string, sql: string) => {
      mkdirSync(join(dir, name), { recursive: true });
      writeFileSync(join(dir, name, 'migration.sql'), sql);
    };
    write('1_ok', 'CREATE TABLE "A" ("id" TEXT PRIMARY KEY);');
    write('2_bad', 'CREATE TABLE "B" ("id" TEXT PRIMARY KEY); SELECT no_such_function();');
    const c = await client(url);
    await expect(migratePostgres(c, { migrationsDir: dir })).rejects.toMatchObject({ name: 'MigrationError', migration: '2_bad' });
    expect((await recorded(c)).map((r) => r.migration_name)).toEqual(['1_ok']);
    expect((await c.query(`SELECT to_regclass('"B"') AS b`)).rows[0].b).toBeNull();

    write('1_ok', 'CREATE TABLE "A" ("id" TEXT PRIMARY KEY, "x" INT);');
    await expect(migratePostgres(c, { migrationsDir: dir })).rejects.toThrow(/migration 1_ok was modified after it was applied/);
  });

  it('start-up on an unreachable server names host, port and database, not the password', async () => {
    const error = await openDatabase({ url: 'postgresql://lk:hunter2hunter2@127.0.0.1:1/lockkeeper' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DatabaseOpenError);
    const message = (error as Error).message;
    expect(message).toContain('postgresql://lk@127.0.0.1:1/lockkeeper');
    expect(message).toMatch(/ECONNREFUSED/);
    expect(message).not.toContain('hunter2');
  });

  it('start-up with a wrong password or an unknown database says so, naming them', async () => {
    const url = await createPostgresDatabase();
    const admin = await client(url);
    await admin.query(`DROP ROLE IF EXISTS ${PASSWORD_ROLE}`);
    await admin.query(`CREATE ROLE ${PASSWORD_ROLE} LOGIN PASSWORD 'right-password'`);
    const server = new URL(url);
    const wrongPassword = `postgresql://${PASSWORD_ROLE}:wrong-password@${server.host}/${server.pathname.slice(1)}`;
    const denied = await openDatabase({ url: wrongPassword }).catch((e: unknown) => e);
    expect(denied).toBeInstanceOf(DatabaseOpenError);
    expect((denied as Error).message).toContain(`postgresql://${PASSWORD_ROLE}@${server.hostname}:${server.port}/${server.pathname.slice(1)}: `);
    expect((denied as Error).message).toMatch(/password authentication failed/);
    expect((denied as Error).message).not.toContain('wrong-password');
    // The right password opens it (the role may use the database's public schema).
    await admin.query(`GRANT ALL ON SCHEMA public TO ${PASSWORD_ROLE}`);
    const ok = await openDatabase({ url: wrongPassword.replace('wrong-password', 'right-password') });
    databases.push(ok);
    expect(ok.dialect).toBe('postgresql');
    const wrongDb = `postgresql://postgres@${server.host}/no_such_database`;
    const error = await openDatabase({ url: wrongDb }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DatabaseOpenError);
    expect((error as Error).message).toMatch(
      new RegExp(`postgresql://postgres@${server.hostname}:${server.port}/no_such_database: .*no_such_database.* does not exist`),
    );
  });
});
