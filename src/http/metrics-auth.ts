import type { Scope } from '../auth/scopes.ts';
import { AuthRefusal, AuthService } from '../auth/service.ts';
import { DatabaseUnavailableError } from '../domain/errors.ts';
import { challengeHeaders } from './bearer-challenge.ts';
import type { Guard } from './router.ts';

/** /metrics needs `scope` when authentication is on (config `auth.metrics`); "public" lets anyone read it. */
export function metricsAuth(auth: AuthService, scope: 'public' | Scope): Guard {
  return async (req, res) => {
    if (scope === 'public') return false;
    try {
      await auth.authorize(AuthService.credentialFromHeader(req.headers.authorization), scope);
      return false;
    } catch (e) {
      if (e instanceof DatabaseUnavailableError) {
        res.writeHead(503, { 'content-type': 'text/plain; charset=utf-8', 'retry-after': String(DatabaseUnavailableError.RETRY_AFTER_S) });
        res.end(`${e.message}\n`);
        return true;
      }
      if (!(e instanceof AuthRefusal)) throw e;
      res.writeHead(e.status, { 'content-type': 'text/plain; charset=utf-8', ...challengeHeaders(e) });
      res.end(`${e.message}\n`);
      return true;
    }
  };
}
