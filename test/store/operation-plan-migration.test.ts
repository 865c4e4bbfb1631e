import { cpSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { defaultMigrationsDir, migrate, readMigrations } from '../../src/store/migrate.ts';
import { useTempDir } from './helpers.ts';

const tempDir = useTempDir();
const PLAN_MIGRATION = '20261210130000_operation_plan';

describe('migration operation_plan', () => {
  it('moves the plan of an existing operation out of its params into OperationPlan, keeping the other params', () => {
    const dir = tempDir();
    // The migrations before this one, as an older gateway had applied them.
    const older = join(dir, 'older');
    mkdirSync(older);
    for (const m of readMigrations()) if (m.name < PLAN_MIGRATION) cpSync(join(defaultMigrationsDir, m.name), join(older, m.name), { recursive: true });
    const db = new BetterSqlite3(join(dir, 'test.db'));
    migrate(db, { migrationsDir: older });
    const plan = [['shard', 't-0001', 'CUT_OVER', 'PLANNED', null, '1', '2']];
    const insert = db.prepare(
      `INSERT INTO "Operation" ("id", "kind", "nodeId", "state", "params", "updatedAt") VALUES (?, 'DRAIN', '1', 'RUNNING', ?, '2026-12-01T00:00:00.000Z')`,
    );
    insert.run('with-plan', JSON.stringify({ settings: { maxConcurrentMoves: 64 }, plan }));
    insert.run('without-plan', JSON.stringify({ force: false }));

    migrate(db);

    expect(db.prepare(`SELECT "operationId", "plan" FROM "OperationPlan"`).all()).toEqual([{ operationId: 'with-plan', plan: JSON.stringify(plan) }]);
    const params = db.prepare(`SELECT "id", "params" FROM "Operation" ORDER BY "id"`).all() as { id: string; params: string }[];
    expect(params.map((r) => [r.id, JSON.parse(r.params)])).toEqual([
      ['with-plan', { settings: { maxConcurrentMoves: 64 } }],
      ['without-plan', { force: false }],
    ]);
    db.close();
  });
});
