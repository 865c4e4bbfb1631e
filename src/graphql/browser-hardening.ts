import { createHash } from 'node:crypto';
import type { Plugin } from 'graphql-yoga';

/**
 * The headers of every HTML page Lockkeeper serves (the dashboard at `/`, GraphiQL at
 * /graphql; issue 31, point 6). With authentication off every local caller is admin, so a
 * page that framed the dashboard would be one tricked click from a drain: no page may frame
 * ours (`frame-ancestors 'none'`, and X-Frame-Options for older browsers), and no script
 * runs but our own files and the inline scripts whose SHA-256 the policy names.
 *
 * `editor`: GraphiQL's page, whose editor (Monaco) writes <style> elements and style
 * attributes as it runs (inline styles allowed there only) and starts its language
 * workers from blob: URLs. The dashboard allows neither.
 */
export function securityHeaders(html: string, editor = false): Record<string, string> {
  const page = editor ? 'graphiql' : 'dashboard';
  let last = memo[page];
  if (last?.html !== html) memo[page] = last = { html, headers: compute(html, editor) };
  return last.headers;
}

/** GraphiQL's page is 9 MB and the same at every request: hashed once (one slot a page). */
const memo: Partial<Record<'graphiql' | 'dashboard', { html: string; headers: Record<string, string> }>> = {};

function compute(html: string, editor: boolean): Record<string, string> {
  const hashes = [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((m) => `'sha256-${createHash('sha256').update(m[1]!).digest('base64')}'`);
  const policy = [
    "default-src 'self'",
    `script-src 'self'${hashes.map((h) => ` ${h}`).join('')}`,
    `style-src 'self'${editor ? " 'unsafe-inline'" : ''}`,
    "img-src 'self' data:",
    "font-src 'self' data:",
    `worker-src 'self'${editor ? ' blob:' : ''}`,
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
  return {
    'content-security-policy': policy,
    'x-frame-options': 'DENY',
    'referrer-policy': 'no-referrer',
    'x-content-type-options': 'nosniff',
  };
}

/** GraphiQL's page (yoga renders it) gets the same headers as the dashboard's. */
export function useBrowserHardening(): Plugin {
  return {
    async onResponse({ response, setResponse, fetchAPI }) {
      if (!response.headers.get('content-type')?.startsWith('text/html')) return;
      const html = await response.text();
      const headers = new fetchAPI.Headers(response.headers);
      for (const [name, value] of Object.entries(securityHeaders(html, true))) headers.set(name, value);
      setResponse(new fetchAPI.Response(html, { status: response.status, headers }));
    },
  };
}
