/**
 * CSRF prevention for browser-originated requests (issue 7). Bearer tokens are never
 * attached by a browser on its own, but in open mode (no tokens, loopback) any page the
 * operator visits could otherwise post a mutation to 127.0.0.1. So:
 *
 * - a request carrying an `Origin` other than the server's own (or one listed in
 *   `server.allowedOrigins`) is refused;
 * - `Sec-Fetch-Site: cross-site` / `same-site` (a browser request from another site) is
 *   refused unless its Origin is allowed; top-level navigations (opening GraphiQL from a
 *   link) are let through, they cannot carry a mutation (GET never runs one);
 * - a POST with a body type an HTML form or a no-cors fetch can send
 *   (`application/x-www-form-urlencoded`, `multipart/form-data`, `text/plain`) is refused
 *   unless it carries the `X-Lockkeeper-CSRF` header, which such requests cannot set.
 *
 * Scripts (curl, graphql-ws, fetch from Node) send none of these headers and pass.
 */
const CSRF_HEADER = 'x-lockkeeper-csrf';
const SIMPLE_TYPES = ['application/x-www-form-urlencoded', 'multipart/form-data', 'text/plain'];

export type HeaderLookup = (name: string) => string | null | undefined;

/** The reason to refuse the request, or null when it may go on. */
export function csrfRefusal(method: string, header: HeaderLookup, allowedOrigins: readonly string[]): string | null {
  const origin = header('origin');
  const host = header('host');
  const allowed = (o: string) => allowedOrigins.includes(o) || allowedOrigins.includes('*');
  if (origin) {
    let originHost: string | null = null;
    try {
      originHost = origin === 'null' ? null : new URL(origin).host;
    } catch {
      originHost = null;
    }
    if (originHost !== host && !allowed(origin)) return `cross-origin request from ${origin.slice(0, 100)} refused (see server.allowedOrigins)`;
  }
  const site = header('sec-fetch-site');
  if ((site === 'cross-site' || site === 'same-site') && header('sec-fetch-mode') !== 'navigate' && !(origin && allowed(origin))) {
    return 'cross-site browser request refused (see server.allowedOrigins)';
  }
  if (method === 'POST' && !header(CSRF_HEADER)) {
    const type = (header('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
    if (type === '' || SIMPLE_TYPES.includes(type)) {
      return `a POST with content type "${type || '(none)'}" needs the ${CSRF_HEADER} header (CSRF prevention); send application/json`;
    }
  }
  return null;
}
