import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { DATABASE_URL_ENV, DatabaseOpenError, DEFAULT_DATABASE_URL, openDatabase, resolveDatabaseFile, type Database } from '../../src/store/database.ts';
import { readMigrations } from '../../src/store/migrate.ts';
import { useTempDir } from './helpers.ts';

const tempDir = useTempDir();
const opened: Database[] = [];
afterEach(async () => {
  for (const db of opened.splice(0)) await db.close();
});

async function open(options: Parameters<typeof openDatabase>[0]): Promise<Database> {
  const db = await openDatabase(options);
  opened.push(db);
  return db;
}

async function openError(options: Parameters<typeof openDatabase>[0]): Promise<DatabaseOpenError> {
  try {
    opened.push(await openDatabase(options));
  } catch (error) {
    expect(error).toBeInstanceOf(DatabaseOpenError);
    return error as DatabaseOpenError;
  }
  throw new Error('openDatabase succeeded, expected a DatabaseOpenError');
}

describe('resolveDatabaseFile', () => {
  it('resolves file: URLs and plain paths against the given directory', () => {
    expect(resolveDatabaseFile(DEFAULT_DATABASE_URL, '/srv/lk')).toBe('/srv/lk/data/lockkeeper.db');
    expect(resolveDatabaseFile('file:state.db?connection_limit=1', '/srv/lk')).toBe('/srv/lk/state.db');
    expect(resolveDatabaseFile('file:/var/lib/lk.db', '/srv/lk')).toBe('/var/lib/lk.db');
    expect(resolveDatabaseFile('file:///var/lib/lk.db', '/srv/lk')).toBe('/var/lib/lk.db');
    expect(resolveDatabaseFile('rel/x.db', '/srv/lk')).toBe('/srv/lk/rel/x.db');
  });

  it('refuses in-memory and non-file URLs', () => {
    expect(() => resolveDatabaseFile('file::memory:')).toThrow(/in-memory/);
    expect(() => resolveDatabaseFile('mysql://db/lk')).toThrow(/use file:<path> \(SQLite\) or postgresql:/);
  });
});

describe('openDatabase', () => {
  it('creates the data/ directory and the file by default, migrates, and round-trips rows through Prisma', async () => {
    const dir = tempDir();
    const db = await open({ cwd: dir });
    expect(db.file).toBe(join(dir, 'data', 'lockkeeper.db'));
    expect(existsSync(db.file)).toBe(true);
    expect(db.migrations.applied).toEqual(readMigrations().map((m) => m.name));

    const { prisma } = db;
    await prisma.nodeState.create({ data: { id: 'node-1', maintenancePhase: 'DRAINING', maintenanceReason: 'kernel' } });
    const op = await prisma.operation.create({
      data: {
        kind: 'drain',
        nodeId: 'node-1',
        state: 'RUNNING',
        params: JSON.stringify({ force: false }),
        steps: {
          create: [
            { workloadKind: 'vm', workloadId: 'ns/web', action: 'migrate', state: 'PENDING', seq: 1 },
            { workloadKind: 'shard', workloadId: 't1/0', action: 'cutover', state: 'DONE', seq: 2, toNodeId: 'node-2' },
          ],
        },
      },
    });
    await prisma.event.createMany({
      data: [
        { type: 'a', nodeId: 'node-1' },
        { type: 'b', operationId: op.id },
      ],
    });

    const node = await prisma.nodeState.findUniqueOrThrow({ where: { id: 'node-1' } });
    expect(node).toMatchObject({ schedulingPolicy: 'ACTIVE', maintenancePhase: 'DRAINING', maintenanceForce: false });
    const read = await prisma.operation.findUniqueOrThrow({ where: { id: op.id }, include: { steps: { orderBy: { seq: 'asc' } } } });
    expect(JSON.parse(read.params)).toEqual({ force: false });
    expect(read.steps.map((s) => `${s.workloadKind}:${s.workloadId}:${s.state}`)).toEqual(['vm:ns/web:PENDING', 'shard:t1/0:DONE']);
    const events = await prisma.event.findMany({ where: { seq: { gt: 0 } }, orderBy: { seq: 'asc' } });
    expect(events.map((e) => [e.seq, e.type])).toEqual([
      [1, 'a'],
      [2, 'b'],
    ]);

    // Pragmas on Prisma's connection: foreign keys enforced (the cascade works), WAL.
    await prisma.operation.delete({ where: { id: op.id } });
    expect(await prisma.operationStep.count()).toBe(0);
    expect(await prisma.$queryRawUnsafe('PRAGMA journal_mode')).toEqual([{ journal_mode: 'wal' }]);
    expect(await prisma.$queryRawUnsafe('PRAGMA foreign_keys')).toEqual([{ foreign_keys: 1n }]);

    // Reopening keeps the data and applies nothing.
    await db.close();
    const again = await open({ cwd: dir });
    expect(again.migrations.applied).toEqual([]);
    expect(await again.prisma.nodeState.count()).toBe(1);
  });

  it('takes the URL from LOCKKEEPER_DATABASE_URL when none is given', async () => {
    const dir = tempDir();
    const saved = process.env[DATABASE_URL_ENV];
    process.env[DATABASE_URL_ENV] = `file:${join(dir, 'from-env', 'lk.db')}`;
    try {
      const db = await open({});
      expect(db.file).toBe(join(dir, 'from-env', 'lk.db'));
      // An explicit URL wins over the environment.
      const explicit = await open({ url: `file:${join(dir, 'explicit.db')}` });
      expect(explicit.file).toBe(join(dir, 'explicit.db'));
    } finally {
      if (saved === undefined) delete process.env[DATABASE_URL_ENV];
      else process.env[DATABASE_URL_ENV] = saved;
    }
  });

  it('close() is idempotent', async () => {
    const db = await open({ url: `file:${join(tempDir(), 'x.db')}` });
    const first = db.close();
    expect(db.close()).toBe(first);
    await first;
    await db.close();
  });

  it('refuses a file that is not a SQLite database, naming it, and leaves its bytes untouched', async () => {
    const dir = tempDir();
    const file = join(dir, 'lockkeeper.db');
    const bytes = Buffer.from('this is a text file, not a database\n'.repeat(200));
    writeFileSync(file, bytes);
    const error = await openError({ url: `file:${file}` });
    expect(error.file).toBe(file);
    expect(error.message).toContain(file);
    expect(error.message).toMatch(/not a database/);
    expect(readFileSync(file).equals(bytes)).toBe(true);
    expect(readdirSync(dir)).toEqual(['lockkeeper.db']);
  });

  it('refuses a database whose pages are damaged, leaving it untouched', async () => {
    const dir = tempDir();
    const file = join(dir, 'lockkeeper.db');
    const db = await openDatabase({ url: `file:${file}` });
    await db.close();
    // Keep the SQLite header, trash the rest of page 1 (the schema table).
    const damaged = readFileSync(file);
    damaged.fill(0xa5, 100, 4096);
    writeFileSync(file, damaged);
    const error = await openError({ url: `file:${file}` });
    expect(error.message).toContain(file);
    expect(error.message).toMatch(/malformed|not a database|corrupt/i);
    expect(readFileSync(file).equals(damaged)).toBe(true);
  });

  it('reports a locked database, naming it', async () => {
    const dir = tempDir();
    const file = join(dir, 'locked.db');
    const other = new BetterSqlite3(file);
    try {
      other.exec('CREATE TABLE "Other" ("id" INTEGER)');
      other.exec('BEGIN EXCLUSIVE');
      const started = Date.now();
      const error = await openError({ url: `file:${file}`, busyTimeoutMs: 100 });
      expect(Date.now() - started).toBeLessThan(5000);
      expect(error.file).toBe(file);
      expect(error.message).toContain(file);
      expect(error.message).toMatch(/locked|busy/i);
    } finally {
      if (other.inTransaction) other.exec('ROLLBACK');
      other.close();
    }
    // Once the lock is gone the same file opens and migrates.
    const db = await open({ url: `file:${file}` });
    expect(db.migrations.applied.length).toBeGreaterThan(0);
  });

  it('reports a failed migration as a DatabaseOpenError naming the file and the migration', async () => {
    const dir = tempDir();
    const migrations = join(dir, 'migrations');
    const name = '0001_broken';
    mkdirSync(join(migrations, name), { recursive: true });
    writeFileSync(join(migrations, name, 'migration.sql'), 'CREATE TABLE oops (');
    const file = join(dir, 'm.db');
    const error = await openError({ url: `file:${file}`, migrationsDir: migrations });
    expect(error.message).toContain(file);
    expect(error.message).toContain(name);
  });
});
