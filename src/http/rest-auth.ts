import type { IncomingMessage } from 'node:http';
import type { Scope } from '../auth/scopes.ts';
import { AuthRefusal, AuthService, type Identity } from '../auth/service.ts';
import { HttpError } from '../rest/http-io.ts';
import type { NeonFacadeDeps } from '../rest/neon-facade.ts';
import { challengeHeaders } from './bearer-challenge.ts';

/** The REST facade's door: 401 / 403 as Neon's controller answers, 429 past the mutation rate. */
export function restAuthorizer(auth: AuthService): NonNullable<NeonFacadeDeps['authorize']> {
  return async (req: IncomingMessage, needed: Scope, changesState: boolean) => {
    let identity: Identity;
    try {
      identity = await auth.authorize(AuthService.credentialFromHeader(req.headers.authorization), needed);
    } catch (e) {
      if (e instanceof AuthRefusal) throw new HttpError(e.status, e.message, challengeHeaders(e));
      throw e;
    }
    if (changesState) {
      const waitMs = auth.takeMutations(identity, 1);
      if (waitMs > 0) {
        const retryAfter = Math.ceil(waitMs / 1000);
        throw new HttpError(
          429,
          `rate limit: at most ${auth.mutationsPerMinute} state-changing calls per minute for token "${identity.name}"; retry in ${retryAfter} s`,
          {
            'retry-after': String(retryAfter),
          },
        );
      }
    }
    return { actor: identity.name };
  };
}
