// Whether dist/ is older than a source it is built from (`build-server.mjs --if-stale`, and
// scripts/start.mjs): one stat walk of the sources, no esbuild.
import { readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
/** Written by scripts/build-server.mjs after each build. */
export const BUILD_STAMP = join(root, 'dist', '.server-build');
const SOURCES = ['src', 'plugins', 'bin', 'prisma/schema.prisma', 'package.json'];
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
