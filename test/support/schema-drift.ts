/**
 * Compares the live schema (SQLite, or PostgreSQL: ha:DB2) with Prisma's model metadata, so
 * that a schema.prisma edit without its migration is caught (docs/architecture.md §3).
 *
 * The metadata is the DMMF datamodel that `prisma generate` hands to generators; our
 * generator src/store/dmmf-generator.mjs saves it to src/store/generated/datamodel.json
 * (the `prisma-client` output itself keeps only field names and types).
 *
 * Compared, per table: columns (type, NOT NULL, default), the primary key (columns, in
 * order, and AUTOINCREMENT), unique and plain indexes (by columns), foreign keys (columns,
 * referenced table and columns, ON DELETE / ON UPDATE). Index names are not compared.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type BetterSqlite3 from 'better-sqlite3';
import type pg from 'pg';
import { MIGRATIONS_TABLE } from '../../src/store/migrate.ts';

// ---- DMMF (the subset we read) -------------------------------------------------------

export interface DmmfField {
  name: string;
  dbName?: string | null;
  kind: 'scalar' | 'object' | 'enum' | 'unsupported';
  type: string;
  isList: boolean;
  isRequired: boolean;
  isUnique: boolean;
  isId: boolean;
  hasDefaultValue: boolean;
  default?: unknown;
  relationFromFields?: string[];
  relationToFields?: string[];
  relationOnDelete?: string;
  relationOnUpdate?: string;
}

interface DmmfModel {
  name: string;
  dbName: string | null;
  fields: DmmfField[];
  primaryKey: { name: string | null; fields: string[] } | null;
  uniqueFields: string[][];
}

interface DmmfIndex {
  model: string;
  type: 'id' | 'unique' | 'normal' | 'fulltext';
  fields: { name: string }[];
}

export interface GeneratedDatamodel {
  prismaVersion: string | null;
  /** sha256 of prisma/schema.prisma when it was generated. */
  schemaSha256: string;
  models: DmmfModel[];
  indexes: DmmfIndex[];
}

const defaultDatamodelFile = fileURLToPath(new URL('../../src/store/generated/datamodel.json', import.meta.url));
export const defaultSchemaFile = fileURLToPath(new URL('../../prisma/schema.prisma', import.meta.url));

export function loadGeneratedDatamodel(file: string = defaultDatamodelFile): GeneratedDatamodel {
  return JSON.parse(readFileSync(file, 'utf8')) as GeneratedDatamodel;
}

// ---- A normalised table description, built from either side ---------------------------

interface ColumnShape {
  type: string;
  notNull: boolean;
  /** SQL text of the default as SQLite stores it, or null for none. */
  default: string | null;
}

interface ForeignKeyShape {
  columns: string[];
  table: string;
  references: string[];
  onDelete: string;
  onUpdate: string;
}

interface TableShape {
  columns: Record<string, ColumnShape>;
  primaryKey: string[];
  autoincrement: boolean;
  /** Column lists, each joined with ','. */
  uniqueIndexes: string[];
  indexes: string[];
  foreignKeys: ForeignKeyShape[];
}

export type SchemaShape = Record<string, TableShape>;

/** Prisma scalar → the column type Prisma's SQLite migrations declare. */
const SQLITE_TYPES: Record<string, string> = {
  String: 'TEXT',
  Int: 'INTEGER',
  BigInt: 'BIGINT',
  Float: 'REAL',
  Decimal: 'DECIMAL',
  Boolean: 'BOOLEAN',
  DateTime: 'DATETIME',
  Json: 'JSONB',
  Bytes: 'BLOB',
};

/** Prisma scalar → the column type Prisma's PostgreSQL migrations declare, as `format_type` prints it. */
const POSTGRES_TYPES: Record<string, string> = {
  String: 'text',
  Int: 'integer',
  BigInt: 'bigint',
  Float: 'double precision',
  Decimal: 'numeric(65,30)',
  Boolean: 'boolean',
  DateTime: 'timestamp(3) without time zone',
  Json: 'jsonb',
  Bytes: 'bytea',
};

const REFERENTIAL_ACTIONS: Record<string, string> = {
  Cascade: 'CASCADE',
  Restrict: 'RESTRICT',
  NoAction: 'NO ACTION',
  SetNull: 'SET NULL',
  SetDefault: 'SET DEFAULT',
};

/** The SQL default Prisma writes for a DMMF default; null = no database default. */
function expectedDefault(field: DmmfField): string | null {
  if (!field.hasDefaultValue || field.default === undefined) return null;
  const value = field.default;
  if (typeof value === 'string') return `'${value.replace(/'/g, "''")}'`;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (value && typeof value === 'object' && 'name' in value) {
    const fn = value as { name: string; args?: unknown[] };
    if (fn.name === 'now') return 'CURRENT_TIMESTAMP';
    if (fn.name === 'dbgenerated' && typeof fn.args?.[0] === 'string') return fn.args[0];
    return null; // uuid(), cuid(), autoincrement()...: produced by Prisma or the rowid, not a default.
  }
  return null;
}

/** The schema the Prisma models describe, in the dialect's column types. */
export function expectedSchema(datamodel: Pick<GeneratedDatamodel, 'models' | 'indexes'>, dialect: 'sqlite' | 'postgresql' = 'sqlite'): SchemaShape {
  const types = dialect === 'sqlite' ? SQLITE_TYPES : POSTGRES_TYPES;
  const models = new Map(datamodel.models.map((model) => [model.name, model]));
  const tableName = (model: DmmfModel) => model.dbName ?? model.name;
  const columnName = (model: DmmfModel, fieldName: string) => {
    const field = model.fields.find((f) => f.name === fieldName);
    return field?.dbName ?? fieldName;
  };
  const schema: SchemaShape = {};
  for (const model of datamodel.models) {
    const table: TableShape = {
      columns: {},
      primaryKey: [],
      autoincrement: false,
      uniqueIndexes: [],
      indexes: [],
      foreignKeys: [],
    };
    for (const field of model.fields) {
      if (field.kind === 'object') {
        const target = models.get(field.type);
        if (target && field.relationFromFields?.length) {
          table.foreignKeys.push({
            columns: field.relationFromFields.map((name) => columnName(model, name)),
            table: tableName(target),
            references: (field.relationToFields ?? []).map((name) => columnName(target, name)),
            onDelete: REFERENTIAL_ACTIONS[field.relationOnDelete ?? (field.isRequired ? 'Restrict' : 'SetNull')] ?? '?',
            onUpdate: REFERENTIAL_ACTIONS[field.relationOnUpdate ?? 'Cascade'] ?? '?',
          });
        }
        continue;
      }
      const name = field.dbName ?? field.name;
      table.columns[name] = {
        type: field.kind === 'enum' ? types.String! : (types[field.type] ?? `unknown Prisma type ${field.type}`),
        notNull: field.isRequired,
        default: expectedDefault(field),
      };
      if (field.isId) {
        table.primaryKey = [name];
        const fn = field.default as { name?: string } | undefined;
        table.autoincrement = fn?.name === 'autoincrement';
      }
      if (field.isUnique) table.uniqueIndexes.push(name);
    }
    if (model.primaryKey) table.primaryKey = model.primaryKey.fields.map((name) => columnName(model, name));
    for (const fields of model.uniqueFields) {
      table.uniqueIndexes.push(fields.map((name) => columnName(model, name)).join(','));
    }
    for (const index of datamodel.indexes) {
      if (index.model !== model.name || index.type !== 'normal') continue;
      table.indexes.push(index.fields.map((f) => columnName(model, f.name)).join(','));
    }
    schema[tableName(model)] = normaliseTable(table);
  }
  return schema;
}

interface TableInfoRow {
  name: string;
  type: string;
  notnull: number;
  dflt_value: string | null;
  pk: number;
}
interface IndexListRow {
  name: string;
  unique: number;
  origin: 'c' | 'u' | 'pk';
  partial: number;
}
interface ForeignKeyRow {
  id: number;
  seq: number;
  table: string;
  from: string;
  to: string;
  on_update: string;
  on_delete: string;
}

const quote = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** The schema of a live SQLite database (SQLite's and the migrator's own tables left out). */
export function liveSchema(db: BetterSqlite3.Database): SchemaShape {
  const tables = db
    .prepare("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name <> ?")
    .all(MIGRATIONS_TABLE) as { name: string; sql: string }[];
  const schema: SchemaShape = {};
  for (const { name, sql } of tables) {
    const info = db.prepare(`PRAGMA table_info(${quote(name)})`).all() as TableInfoRow[];
    const table: TableShape = {
      columns: {},
      primaryKey: info
        .filter((c) => c.pk > 0)
        .sort((a, b) => a.pk - b.pk)
        .map((c) => c.name),
      autoincrement: /\bAUTOINCREMENT\b/i.test(sql),
      uniqueIndexes: [],
      indexes: [],
      foreignKeys: [],
    };
    for (const column of info) {
      table.columns[column.name] = {
        type: column.type.toUpperCase(),
        notNull: column.notnull === 1,
        default: column.dflt_value,
      };
    }
    for (const index of db.prepare(`PRAGMA index_list(${quote(name)})`).all() as IndexListRow[]) {
      if (index.origin === 'pk') continue;
      const columns = (db.prepare(`PRAGMA index_info(${quote(index.name)})`).all() as { seqno: number; name: string }[])
        .sort((a, b) => a.seqno - b.seqno)
        .map((c) => c.name)
        .join(',');
      (index.unique ? table.uniqueIndexes : table.indexes).push(columns);
    }
    const fkRows = db.prepare(`PRAGMA foreign_key_list(${quote(name)})`).all() as ForeignKeyRow[];
    for (const id of [...new Set(fkRows.map((r) => r.id))]) {
      const rows = fkRows.filter((r) => r.id === id).sort((a, b) => a.seq - b.seq);
      const first = rows[0]!;
      table.foreignKeys.push({
        columns: rows.map((r) => r.from),
        table: first.table,
        references: rows.map((r) => r.to),
        onDelete: first.on_delete.toUpperCase(),
        onUpdate: first.on_update.toUpperCase(),
      });
    }
    schema[name] = normaliseTable(table);
  }
  return schema;
}

const PG_ACTIONS: Record<string, string> = { a: 'NO ACTION', r: 'RESTRICT', c: 'CASCADE', n: 'SET NULL', d: 'SET DEFAULT' };

/**
 * The schema of a live PostgreSQL database's current schema (the migrator's table left out).
 * Defaults are read as PostgreSQL prints them, less the `::text` casts it adds to string
 * literals; a `nextval(…)` default is SERIAL, Prisma's autoincrement.
 */
export async function livePostgresSchema(client: pg.ClientBase): Promise<SchemaShape> {
  const { rows: columns } = await client.query<{ table: string; column: string; type: string; notnull: boolean; dflt: string | null }>(
    `SELECT c.relname AS table, a.attname AS column, format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull AS notnull,
            pg_get_expr(d.adbin, d.adrelid) AS dflt
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
       LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
      WHERE c.relkind = 'r' AND n.nspname = current_schema() AND c.relname <> $1
      ORDER BY c.relname, a.attnum`,
    [MIGRATIONS_TABLE],
  );
  const { rows: indexes } = await client.query<{ table: string; primary: boolean; unique: boolean; columns: string[] }>(
    `SELECT c.relname AS table, i.indisprimary AS primary, i.indisunique AS unique,
            array(SELECT a.attname::text FROM unnest(i.indkey) WITH ORDINALITY k(attnum, ord)
                  JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum ORDER BY k.ord) AS columns
       FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = current_schema() AND c.relname <> $1`,
    [MIGRATIONS_TABLE],
  );
  const { rows: fks } = await client.query<{ table: string; columns: string[]; target: string; references: string[]; ondelete: string; onupdate: string }>(
    `SELECT c.relname AS table, t.relname AS target, f.confdeltype AS ondelete, f.confupdtype AS onupdate,
            array(SELECT a.attname::text FROM unnest(f.conkey) WITH ORDINALITY k(attnum, ord)
                  JOIN pg_attribute a ON a.attrelid = f.conrelid AND a.attnum = k.attnum ORDER BY k.ord) AS columns,
            array(SELECT a.attname::text FROM unnest(f.confkey) WITH ORDINALITY k(attnum, ord)
                  JOIN pg_attribute a ON a.attrelid = f.confrelid AND a.attnum = k.attnum ORDER BY k.ord) AS references
       FROM pg_constraint f JOIN pg_class c ON c.oid = f.conrelid JOIN pg_class t ON t.oid = f.confrelid
       JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE f.contype = 'f' AND n.nspname = current_schema()`,
  );
  const schema: SchemaShape = {};
  const table = (name: string): TableShape =>
    (schema[name] ??= { columns: {}, primaryKey: [], autoincrement: false, uniqueIndexes: [], indexes: [], foreignKeys: [] });
  for (const c of columns) {
    const serial = c.dflt?.startsWith('nextval(') ?? false;
    if (serial) table(c.table).autoincrement = true;
    table(c.table).columns[c.column] = { type: c.type, notNull: c.notnull, default: serial ? null : (c.dflt?.replace(/::text$/, '') ?? null) };
  }
  for (const i of indexes) {
    if (i.primary) table(i.table).primaryKey = i.columns;
    else (i.unique ? table(i.table).uniqueIndexes : table(i.table).indexes).push(i.columns.join(','));
  }
  for (const f of fks) {
    table(f.table).foreignKeys.push({
      columns: f.columns,
      table: f.target,
      references: f.references,
      onDelete: PG_ACTIONS[f.ondelete] ?? f.ondelete,
      onUpdate: PG_ACTIONS[f.onupdate] ?? f.onupdate,
    });
  }
  for (const name of Object.keys(schema)) schema[name] = normaliseTable(schema[name]!);
  return schema;
}

function normaliseTable(table: TableShape): TableShape {
  return {
    ...table,
    uniqueIndexes: [...new Set(table.uniqueIndexes)].sort(),
    indexes: [...new Set(table.indexes)].sort(),
    foreignKeys: [...table.foreignKeys].sort((a, b) => fkKey(a).localeCompare(fkKey(b))),
  };
}

const fkKey = (fk: ForeignKeyShape) => `(${fk.columns.join(',')}) -> ${fk.table}(${fk.references.join(',')}) ON DELETE ${fk.onDelete} ON UPDATE ${fk.onUpdate}`;

/**
 * Human-readable differences between what the Prisma schema expects and what the database
 * has; empty when they agree.
 */
export function diffSchemas(expected: SchemaShape, live: SchemaShape): string[] {
  const problems: string[] = [];
  const hint = '(schema.prisma changed without a migration, or a migration without schema.prisma?)';
  for (const name of Object.keys(expected).sort()) {
    if (!live[name]) problems.push(`table ${name}: in the Prisma schema but not in the database ${hint}`);
  }
  for (const name of Object.keys(live).sort()) {
    if (!expected[name]) problems.push(`table ${name}: in the database but not in the Prisma schema ${hint}`);
  }
  for (const name of Object.keys(expected).sort()) {
    const want = expected[name]!;
    const have = live[name];
    if (!have) continue;
    for (const column of Object.keys(want.columns)) {
      const w = want.columns[column]!;
      const h = have.columns[column];
      if (!h) {
        problems.push(`table ${name}: column ${column} is in the Prisma schema but not in the database ${hint}`);
        continue;
      }
      if (w.type !== h.type) problems.push(`table ${name}: column ${column} has type ${h.type}, the Prisma schema says ${w.type}`);
      if (w.notNull !== h.notNull) {
        problems.push(
          `table ${name}: column ${column} is ${h.notNull ? 'NOT NULL' : 'nullable'} in the database, ` +
            `${w.notNull ? 'required' : 'optional'} in the Prisma schema`,
        );
      }
      if (w.default !== h.default) {
        problems.push(`table ${name}: column ${column} has default ${h.default ?? 'none'}, the Prisma schema says ${w.default ?? 'none'}`);
      }
    }
    for (const column of Object.keys(have.columns)) {
      if (!want.columns[column]) problems.push(`table ${name}: column ${column} is in the database but not in the Prisma schema ${hint}`);
    }
    if (want.primaryKey.join(',') !== have.primaryKey.join(',')) {
      problems.push(`table ${name}: primary key (${have.primaryKey.join(', ')}) in the database, (${want.primaryKey.join(', ')}) in the Prisma schema`);
    }
    if (want.autoincrement !== have.autoincrement) {
      problems.push(
        `table ${name}: AUTOINCREMENT ${have.autoincrement ? 'present' : 'absent'} in the database, ${want.autoincrement ? 'expected' : 'not expected'} by the Prisma schema`,
      );
    }
    const parens = (list: string[]) => list.map((columns) => `(${columns})`);
    compareLists(problems, name, 'unique index', parens(want.uniqueIndexes), parens(have.uniqueIndexes));
    compareLists(problems, name, 'index', parens(want.indexes), parens(have.indexes));
    compareLists(problems, name, 'foreign key', want.foreignKeys.map(fkKey), have.foreignKeys.map(fkKey));
  }
  return problems;
}

function compareLists(problems: string[], table: string, what: string, want: string[], have: string[]): void {
  for (const item of want) if (!have.includes(item)) problems.push(`table ${table}: ${what} ${item} is in the Prisma schema but not in the database`);
  for (const item of have) if (!want.includes(item)) problems.push(`table ${table}: ${what} ${item} is in the database but not in the Prisma schema`);
}
