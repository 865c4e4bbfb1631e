/**
 * Where the project's files are, the same whether this code runs as TypeScript from `src/`
 * (tsx, tests) or compiled into `dist/` by `npm run build`, where esbuild's chunks sit at
 * various depths: the root is the nearest directory upward with a package.json.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function findRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json above ${from}`);
  }
}

const PROJECT_ROOT = findRoot(dirname(fileURLToPath(import.meta.url)));

/** True in the compiled build: its modules end in .js (this one is bundled into a chunk). */
export const COMPILED = import.meta.url.endsWith('.js');

/** A path inside the project, e.g. `prisma/migrations/`. */
export const projectPath = (path: string) => join(PROJECT_ROOT, path);
