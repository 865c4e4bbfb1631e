import { readFile } from 'node:fs/promises';
import { pathToFileURL } from 'node:url';
import { securityHeaders } from '../graphql/browser-hardening.ts';
import { projectPath } from '../project-root.ts';
import type { Handler } from './router.ts';

/** Where `npm run build` puts the dashboard (scripts/build-web.mjs): served from the package, no CDN (rollout:W1). */
const DASHBOARD_DIR = pathToFileURL(projectPath('dist/web/'));

const FILES: Record<string, { file: string; type: string }> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/dashboard/app.js': { file: 'app.js', type: 'text/javascript; charset=utf-8' },
  '/dashboard/style.css': { file: 'style.css', type: 'text/css; charset=utf-8' },
};

export const DASHBOARD_PATHS = Object.keys(FILES);

/** Serves one of the dashboard's files; a checkout that was never built says how to build it. */
export function dashboardFile(path: string): Handler {
  const { file, type } = FILES[path]!;
  return async (_req, res) => {
    let body: Buffer;
    try {
      body = await readFile(new URL(file, DASHBOARD_DIR));
    } catch {
      res.writeHead(503, { 'content-type': 'text/plain; charset=utf-8' });
      res.end('The dashboard is not built: run `npm run build` (npm install does it). GraphiQL is at /graphql.\n');
      return;
    }
    const page = type.startsWith('text/html') ? securityHeaders(body.toString('utf8')) : {};
    res.writeHead(200, { 'content-type': type, 'cache-control': 'no-cache', 'x-content-type-options': 'nosniff', ...page });
    res.end(body);
  };
}
