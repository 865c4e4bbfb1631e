#!/usr/bin/env node
// `lockkeeper`: runs the compiled command line (dist/), rebuilt first when a source is newer,
// as `npm start` does, so an edited checkout never runs old code. Plain node, no run-time
// transpiler: `lockkeeper --help` answers in about the time of a bare node start (issue 30,
// point 2; bench/cli.ts). The build's own output goes to stderr, never into a command's
// stdout (scripts read --json from it).
import { buildServerIfStale } from '../scripts/server-build-stale.mjs';

const status = buildServerIfStale(['ignore', 2, 2]);
if (status !== 0) {
  process.stderr.write('lockkeeper: rebuilding dist/ failed (npm run build shows why)\n');
  process.exit(status);
}
await import('../dist/src/cli.js');
