import type { AuthRefusal } from '../auth/service.ts';

/** A 401 names the scheme to answer with (RFC 6750), so clients know to send a bearer token. */
export function challengeHeaders(refusal: AuthRefusal): Record<string, string> {
  return refusal.status === 401 ? { 'www-authenticate': 'Bearer realm="lockkeeper"' } : {};
}
