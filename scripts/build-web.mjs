#!/usr/bin/env node
// Builds the dashboard (src/web) into dist/web: one bundled, minified app.js with Preact,
// htm and graphql-ws inside, beside index.html and style.css. Run by `npm run build` and
// at install (postinstall), so `npm install` + `npm start` serve it with no CDN (rollout:W2).
import { copyFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'dist', 'web');
mkdirSync(out, { recursive: true });
await build({
  entryPoints: [join(root, 'src', 'web', 'app.ts')],
  outfile: join(out, 'app.js'),
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2020',
  minify: true,
  sourcemap: false,
  legalComments: 'none',
  logLevel: 'warning',
});
for (const file of ['index.html', 'style.css']) copyFileSync(join(root, 'src', 'web', file), join(out, file));
