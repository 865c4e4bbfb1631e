/**
 * ha:DB2: the schema-drift test on PostgreSQL. The PostgreSQL migrations
 * (prisma/migrations-postgresql/) applied to an empty database must produce exactly the
 * schema prisma/schema.prisma describes, in PostgreSQL's column types; the PostgreSQL client
 * must have been generated from the current models.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresSchemaText } from '../../src/store/postgresql-schema.mjs';
import { defaultSchemaFile, diffSchemas, expectedSchema, livePostgresSchema, loadGeneratedDatamodel, type SchemaShape } from '../support/schema-drift.ts';
import { openTestDatabase, postgresSkipReason } from '../support/test-database.ts';

const skip = postgresSkipReason();
const datamodel = loadGeneratedDatamodel();

describe.skipIf(skip)(skip ?? 'schema drift on PostgreSQL', () => {
  let client: pg.Client;
  let live: SchemaShape;
  beforeAll(async () => {
    const db = await openTestDatabase({ dialect: 'postgresql' });
    await db.close();
    client = new pg.Client({ connectionString: db.url });
    await client.connect();
    live = await livePostgresSchema(client);
  });
  afterAll(() => client?.end());

  it('the PostgreSQL client was generated from the current prisma/schema.prisma (else: npm run generate)', () => {
    const derived = fileURLToPath(new URL('../../src/store/prisma-postgresql/schema.prisma', import.meta.url));
    expect(readFileSync(derived, 'utf8'), 'src/store/generated-postgresql is stale: run `npm run generate`').toBe(
      postgresSchemaText(readFileSync(defaultSchemaFile, 'utf8')),
    );
  });

  it('the checked-in PostgreSQL migrations produce exactly the schema that schema.prisma describes', () => {
    expect(diffSchemas(expectedSchema(datamodel, 'postgresql'), live)).toEqual([]);
    // Not vacuous: the same tables as on SQLite, with PostgreSQL's types.
    expect(Object.keys(live).sort()).toEqual(datamodel.models.map((m) => m.dbName ?? m.name).sort());
    expect(live.Event?.autoincrement).toBe(true);
    expect(live.Operation?.columns.createdAt).toEqual({ type: 'timestamp(3) without time zone', notNull: true, default: 'CURRENT_TIMESTAMP' });
    expect(live.NodeState?.columns.schedulingPolicy).toEqual({ type: 'text', notNull: true, default: "'ACTIVE'" });
    expect(live.OperationStep?.foreignKeys).toEqual([
      { columns: ['operationId'], table: 'Operation', references: ['id'], onDelete: 'CASCADE', onUpdate: 'CASCADE' },
    ]);
  });

  it('reports a change made by a migration without schema.prisma', async () => {
    await client.query('BEGIN');
    try {
      await client.query('ALTER TABLE "NodeState" ADD COLUMN "zone" TEXT');
      await client.query('DROP INDEX "Operation_state_idx"');
      expect(diffSchemas(expectedSchema(datamodel, 'postgresql'), await livePostgresSchema(client))).toEqual([
        expect.stringMatching(/^table NodeState: column zone is in the database but not in the Prisma schema/),
        'table Operation: index (state) is in the Prisma schema but not in the database',
      ]);
    } finally {
      await client.query('ROLLBACK');
    }
  });
});
