// The PostgreSQL variant of prisma/schema.prisma (ha:DB2): the same models, the
// PostgreSQL datasource, written to src/store/prisma-postgresql/schema.prisma, the client
// generated into src/store/generated-postgresql/. One data
// model, two generated clients (Prisma 7 generates one per provider). Used by
// scripts/prisma-generate.mjs and by the PostgreSQL schema-drift test.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The derived schema's text. Throws when the SQLite schema does not have the shape this expects. */
export function postgresSchemaText(sqliteSchema) {
  const generator = /generator client \{[^}]*\}/;
  const dmmf = /\n(?:\/\/[^\n]*\n)*generator dmmf \{[^}]*\}\n/;
  const datasource = /datasource db \{\s*provider\s*=\s*"sqlite"\s*\}/;
  for (const [name, re] of [
    ['generator client', generator],
    ['generator dmmf', dmmf],
    ['datasource db (sqlite)', datasource],
  ]) {
    if (!re.test(sqliteSchema)) throw new Error(`prisma/schema.prisma: ${name} block not found`);
  }
  return (
    '// GENERATED from prisma/schema.prisma by src/store/postgresql-schema.mjs: edit that file instead.\n' +
    sqliteSchema
      .replace(
        generator,
        'generator client {\n  provider      = "prisma-client"\n  output        = "../generated-postgresql"\n  moduleFormat  = "esm"\n  runtime       = "nodejs"\n  compilerBuild = "small"\n}',
      )
      .replace(dmmf, '\n')
      .replace(datasource, 'datasource db {\n  provider = "postgresql"\n}')
  );
}

/** Writes src/store/prisma-postgresql/schema.prisma (gitignored) and returns its path. */
export function writePostgresSchema(root) {
  const dir = join(root, 'src/store/prisma-postgresql');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'schema.prisma');
  writeFileSync(file, postgresSchemaText(readFileSync(join(root, 'prisma/schema.prisma'), 'utf8')));
  return file;
}
