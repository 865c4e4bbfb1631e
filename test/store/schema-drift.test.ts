import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { beforeAll, describe, expect, it } from 'vitest';
import { Prisma } from '../../src/store/generated/client.ts';
import { migrate, sha256Hex } from '../../src/store/migrate.ts';
import {
  defaultSchemaFile,
  diffSchemas,
  expectedSchema,
  liveSchema,
  loadGeneratedDatamodel,
  type DmmfField,
  type GeneratedDatamodel,
  type SchemaShape,
} from '../support/schema-drift.ts';
import { useTempDir } from './helpers.ts';

const tempDir = useTempDir();
const datamodel = loadGeneratedDatamodel();

/** A fresh database migrated with the checked-in migrations. */
function migratedSchema(): { db: BetterSqlite3.Database; schema: SchemaShape } {
  const db = new BetterSqlite3(join(tempDir(), 'drift.db'));
  migrate(db);
  return { db, schema: liveSchema(db) };
}

function clone(): GeneratedDatamodel {
  return structuredClone(datamodel);
}

function model(dm: GeneratedDatamodel, name: string) {
  const found = dm.models.find((m) => m.name === name);
  if (!found) throw new Error(`no model ${name}`);
  return found;
}

function scalar(name: string, type: string, extra: Partial<DmmfField> = {}): DmmfField {
  return {
    name,
    kind: 'scalar',
    type,
    isList: false,
    isRequired: false,
    isUnique: false,
    isId: false,
    hasDefaultValue: false,
    ...extra,
  };
}

describe('Prisma model metadata', () => {
  it('was generated from the current prisma/schema.prisma (else: npm run generate)', () => {
    expect(datamodel.schemaSha256, 'src/store/generated is stale: run `npm run generate`').toBe(sha256Hex(readFileSync(defaultSchemaFile, 'utf8')));
  });

  it('agrees with the generated client (same models, same scalar fields)', () => {
    expect(Object.values(Prisma.ModelName).sort()).toEqual(datamodel.models.map((m) => m.name).sort());
    const enums = Prisma as unknown as Record<string, Record<string, string> | undefined>;
    for (const m of datamodel.models) {
      const scalars = m.fields.filter((f) => f.kind !== 'object').map((f) => f.name);
      expect(Object.keys(enums[`${m.name}ScalarFieldEnum`] ?? {}), m.name).toEqual(scalars);
    }
  });
});

describe('schema drift', () => {
  let live: SchemaShape;
  beforeAll(() => {
    const { db, schema } = migratedSchema();
    db.close();
    live = schema;
  });

  it('the checked-in migrations produce exactly the schema that schema.prisma describes', () => {
    expect(diffSchemas(expectedSchema(datamodel), live)).toEqual([]);
    // And the comparison is not vacuous.
    expect(Object.keys(live).sort()).toEqual([
      'ApiToken',
      'AuditEntry',
      'Event',
      'LeaderLease',
      'NodeState',
      'Operation',
      'OperationPlan',
      'OperationStep',
      'PluginMeta',
      'PluginNode',
      'PluginShard',
      'Rehearsal',
      'VmTracking',
    ]);
    expect(live.OperationStep?.foreignKeys).toEqual([
      { columns: ['operationId'], table: 'Operation', references: ['id'], onDelete: 'CASCADE', onUpdate: 'CASCADE' },
    ]);
    expect(live.OperationStep?.uniqueIndexes).toEqual(['operationId,workloadKind,workloadId']);
    expect(live.Event?.autoincrement).toBe(true);
  });

  it('reports a field added to a model without a migration', () => {
    const dm = clone();
    model(dm, 'NodeState').fields.push(scalar('drainedBy', 'String'));
    expect(diffSchemas(expectedSchema(dm), live)).toEqual([
      expect.stringMatching(/^table NodeState: column drainedBy is in the Prisma schema but not in the database/),
    ]);
  });

  it('reports a model added without a migration', () => {
    const dm = clone();
    dm.models.push({
      name: 'Lease',
      dbName: null,
      primaryKey: null,
      uniqueFields: [],
      fields: [scalar('id', 'String', { isId: true, isRequired: true })],
    });
    expect(diffSchemas(expectedSchema(dm), live)).toEqual([expect.stringMatching(/^table Lease: in the Prisma schema but not in the database/)]);
  });

  it('reports nullability, type and default changes', () => {
    const dm = clone();
    const fields = model(dm, 'Operation').fields;
    const reason = fields.find((f) => f.name === 'reason')!;
    reason.isRequired = true;
    const kind = fields.find((f) => f.name === 'kind')!;
    kind.type = 'Int';
    const params = fields.find((f) => f.name === 'params')!;
    params.default = '[]';
    expect(diffSchemas(expectedSchema(dm), live)).toEqual([
      'table Operation: column kind has type TEXT, the Prisma schema says INTEGER',
      'table Operation: column reason is nullable in the database, required in the Prisma schema',
      "table Operation: column params has default '{}', the Prisma schema says '[]'",
    ]);
  });

  it('reports unique indexes, plain indexes, primary keys and foreign keys', () => {
    const dm = clone();
    model(dm, 'VmTracking').uniqueFields.push(['nodeName', 'strategy']);
    model(dm, 'AuditEntry').fields.find((f) => f.name === 'actor')!.isUnique = true;
    dm.indexes.push({ model: 'Event', type: 'normal', fields: [{ name: 'operationId' }] });
    dm.indexes = dm.indexes.filter((i) => !(i.model === 'Operation' && i.fields[0]?.name === 'state'));
    const event = model(dm, 'Event');
    event.fields.find((f) => f.name === 'seq')!.isId = false;
    event.primaryKey = { name: null, fields: ['type', 'at'] };
    model(dm, 'OperationStep').fields.find((f) => f.name === 'operation')!.relationOnDelete = 'Restrict';
    const problems = diffSchemas(expectedSchema(dm), live);
    expect(problems).toEqual(
      expect.arrayContaining([
        'table VmTracking: unique index (nodeName,strategy) is in the Prisma schema but not in the database',
        'table AuditEntry: unique index (actor) is in the Prisma schema but not in the database',
        'table Event: index (operationId) is in the Prisma schema but not in the database',
        'table Operation: index (state) is in the database but not in the Prisma schema',
        'table Event: primary key (seq) in the database, (type, at) in the Prisma schema',
        expect.stringMatching(/^table OperationStep: foreign key .*ON DELETE RESTRICT.* is in the Prisma schema but not in the database/),
        expect.stringMatching(/^table OperationStep: foreign key .*ON DELETE CASCADE.* is in the database but not in the Prisma schema/),
      ]),
    );
  });

  it('reports a migration that changed the database without schema.prisma', () => {
    const { db } = migratedSchema();
    db.exec('ALTER TABLE "NodeState" ADD COLUMN "zone" TEXT');
    db.exec('CREATE TABLE "Orphan" ("id" TEXT NOT NULL PRIMARY KEY)');
    expect(diffSchemas(expectedSchema(datamodel), liveSchema(db))).toEqual([
      expect.stringMatching(/^table Orphan: in the database but not in the Prisma schema/),
      expect.stringMatching(/^table NodeState: column zone is in the database but not in the Prisma schema/),
    ]);
    db.close();
  });
});
