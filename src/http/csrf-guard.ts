import { csrfRefusal } from '../auth/csrf.ts';
import { headerOf, sendJson } from '../rest/http-io.ts';
import type { Guard } from './router.ts';

/** Cross-site browser requests and form posts are refused (src/auth/csrf.ts) on every path but `exempt`. */
export function csrfGuard(allowedOrigins: readonly string[], exempt: readonly string[]): Guard {
  return (req, res, path) => {
    if (exempt.includes(path)) return false;
    const refusal = csrfRefusal(req.method ?? 'GET', (name) => headerOf(req, name), allowedOrigins);
    if (!refusal) return false;
    req.resume();
    sendJson(res, 403, { msg: refusal });
    return true;
  };
}
