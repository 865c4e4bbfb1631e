#!/usr/bin/env node
// Generates the Prisma client (prisma/schema.prisma -> src/store/generated/) offline.
//
// Run by `npm run generate` and by `postinstall`, so a fresh `npm ci` produces the client.
//
// `prisma generate` (Prisma 7) does not use the native schema engine, but the CLI insists
// on resolving it first and, when it is missing, tries to download it — which fails on
// machines without internet (prisma/README.md). When PRISMA_SCHEMA_ENGINE_BINARY names an
// existing file, the CLI only checks that the file exists and moves on. So, when the
// variable is unset, we point it at this script itself: an existing file that is never
// executed by `generate` (and would fail loudly, not silently, if it ever were).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writePostgresSchema } from '../src/store/postgresql-schema.mjs';

const self = fileURLToPath(import.meta.url);
const root = resolve(dirname(self), '..');
const require = createRequire(import.meta.url);

const env = { ...process.env };
if (!env.PRISMA_SCHEMA_ENGINE_BINARY) env.PRISMA_SCHEMA_ENGINE_BINARY = self;
// No update check / telemetry round trips (they would only time out offline).
env.CHECKPOINT_DISABLE ??= '1';
env.PRISMA_HIDE_UPDATE_MESSAGE ??= '1';

let cli;
try {
  cli = require.resolve('prisma/build/index.js', { paths: [root] });
} catch {
  console.error('prisma-generate: the `prisma` package is not installed; run `npm install` (it is a dependency of this project).');
  process.exit(1);
}

const schema = resolve(root, 'prisma/schema.prisma');
if (!existsSync(schema)) {
  console.error(`prisma-generate: ${schema} not found`);
  process.exit(1);
}

// Prisma 7 generates one client per provider (ha:DB2): the SQLite client
// from prisma/schema.prisma itself, and the PostgreSQL client from the same models with the
// PostgreSQL datasource (src/store/postgresql-schema.mjs derives it; nothing is copied by hand).
const postgresSchema = writePostgresSchema(root);

for (const file of [schema, postgresSchema]) {
  const result = spawnSync(process.execPath, [cli, 'generate', '--schema', file], {
    cwd: root,
    env,
    stdio: 'inherit',
  });
  if (result.error) {
    console.error(`prisma-generate: could not run prisma: ${result.error.message}`);
    process.exit(1);
  }
  if (result.status !== 0) process.exit(result.status ?? 1);
}
