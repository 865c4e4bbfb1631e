#!/usr/bin/env node
// Compiles the gateway (src/, plugins/, bin/) to plain JavaScript in dist/, so that
// `npm start` runs `node` with no run-time transpiler (issue 15 point 1). Tests, benches and
// scripts keep running the TypeScript through tsx.
//
// esbuild bundles our code and most packages (EXTERNAL below says which stay in node_modules):
// - dist/src/cli.js: the command line (`npm start` runs `serve`);
// - dist/plugins/<name>/index.js: one entry per plugin, loaded by name at start
//   (src/config/plugin-registry.ts), so a plugin that is not configured is never read;
// - dist/rehearsal/worker.js and dist/rehearsal/loaders/<plugin>.js: the rehearsal's worker
//   thread (src/rehearsal/run-in-worker.ts starts it by URL) and the loaders it reads by name;
// - dist/chunks/: code shared between them (one copy of src/cluster, src/domain...), and
//   code behind a dynamic import (PostgreSQL, db copy, client verbs) loaded only when used;
//
// `--if-stale` builds only when a source file is newer than the last build, so
// `npm start` after an edit never runs old code and costs one stat walk otherwise.
import { readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BUILD_STAMP as stamp, serverBuildIsStale } from './server-build-stale.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'dist');
if (process.argv.includes('--if-stale') && !serverBuildIsStale()) process.exit(0);

// Packages stay in node_modules when they load files by path at run time (native addons,
// Prisma's query compiler, pino's worker transports), are tools, or belong to a plugin (so
// that they are read only when it is configured). Everything else is bundled: resolving and
// reading ~1 000 small files was most of the start-up time (issue 15 point 3).
const EXTERNAL = ['better-sqlite3', '@prisma/*', 'prisma', 'pg', 'pg-*', 'pino', 'pino-*', 'thread-stream', '@kubernetes/client-node', 'esbuild', 'tsx'];

// Under Node, @prisma/client's exports pick its CommonJS runtime (the `node` condition comes
// before `import`). Imported from an ES module, Node then scans those 200 KB with its
// CommonJS lexer for the export names: ~0.3 s of start-up (issue 29 point 5). The runtime's
// ES-module build is the same code; it is what our imports name. Both dialects' generated
// clients import it, so there is one copy of Prisma's classes (Prisma.sql, Decimal...).
const prismaRuntimeAsModule = {
  name: 'prisma-runtime-esm',
  setup(b) {
    b.onResolve({ filter: /^@prisma\/client\/runtime\/client$/ }, () => ({ path: '@prisma/client/runtime/client.mjs', external: true }));
  },
};

const { build } = await import('esbuild');
const plugins = readdirSync(join(root, 'plugins'), { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .map((d) => join(root, 'plugins', d.name, 'index.ts'));
const rehearsal = [
  join(root, 'rehearsal', 'worker.ts'),
  ...readdirSync(join(root, 'rehearsal', 'loaders'))
    .filter((f) => f.endsWith('.ts') && f !== 'types.ts')
    .map((f) => join(root, 'rehearsal', 'loaders', f)),
];

for (const dir of ['src', 'plugins', 'rehearsal', 'chunks', 'bin']) rmSync(join(out, dir), { recursive: true, force: true });
await build({
  entryPoints: [join(root, 'src', 'cli.ts'), ...plugins, ...rehearsal],
  outdir: out,
  outbase: root,
  entryNames: '[dir]/[name]',
  chunkNames: 'chunks/[name]-[hash]',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  external: EXTERNAL,
  plugins: [prismaRuntimeAsModule],
  // Bundled CommonJS packages (ws, …) require Node's built-ins; an ES module has no `require`.
  banner: { js: "import { createRequire as __lkCreateRequire } from 'node:module'; const require = __lkCreateRequire(import.meta.url);" },
  // Less source for the JavaScript engine to scan at start (Node 20 caches no compiled ES module); names are kept
  // as written (no identifier mangling), so stack traces and class names read as in the source.
  minifyWhitespace: true,
  minifySyntax: true,
  sourcemap: true,
  legalComments: 'none',
  logLevel: 'warning',
});
writeFileSync(stamp, `${new Date().toISOString()}\n`);
