// Whether dist/ is older than a source it is built from (`build-server.mjs --if-stale`,
// scripts/start.mjs and bin/lockkeeper.js): one stat walk of the sources, no esbuild; and the
// rebuild itself, under a lock.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
/** Written by scripts/build-server.mjs after each build. */
export const BUILD_STAMP = join(root, 'dist', '.server-build');
const SOURCES = ['src', 'plugins', 'rehearsal', 'bin', 'prisma/schema.prisma', 'package.json'];
const SKIP = new Set(['web', 'node_modules']);

function newestMtime(path) {
  const stat = statSync(path, { throwIfNoEntry: false });
  if (!stat) return 0;
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = stat.mtimeMs;
  for (const entry of readdirSync(path)) if (!SKIP.has(entry)) newest = Math.max(newest, newestMtime(join(path, entry)));
  return newest;
}

export function serverBuildIsStale() {
  const built = statSync(BUILD_STAMP, { throwIfNoEntry: false })?.mtimeMs ?? 0;
  return built < Math.max(...SOURCES.map((s) => newestMtime(join(root, s))));
}

const LOCK = join(root, 'dist', '.build-lock');
/** A build takes seconds; a lock older than this was left by a process that died mid-build. */
const LOCK_STALE_MS = 120_000;
const pause = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/**
 * Rebuilds dist/ when a source is newer (scripts/start.mjs, bin/lockkeeper.js), one process
 * at a time: several `lockkeeper` commands started at once after an edit (a test suite, a
 * shell loop) must not rebuild over each other, nor run a half-written dist/. The others
 * wait for the lock, then find dist/ current. Returns the build's exit status.
 */
export function buildServerIfStale(stdio = 'inherit') {
  if (!serverBuildIsStale()) return 0;
  mkdirSync(join(root, 'dist'), { recursive: true });
  for (;;) {
    try {
      mkdirSync(LOCK);
      break;
    } catch (e) {
      if (e.code !== 'EEXIST') throw e;
      const since = statSync(LOCK, { throwIfNoEntry: false })?.mtimeMs;
      if (since !== undefined && Date.now() - since > LOCK_STALE_MS) rmSync(LOCK, { recursive: true, force: true });
      else pause(100);
    }
  }
  try {
    if (!serverBuildIsStale()) return 0;
    return spawnSync(process.execPath, [join(root, 'scripts', 'build-server.mjs')], { stdio }).status ?? 1;
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
}
