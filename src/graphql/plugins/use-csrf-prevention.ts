import type { Plugin } from 'graphql-yoga';
import { csrfRefusal } from '../../auth/csrf.ts';

/** Browser-originated cross-site requests and form posts are refused (src/auth/csrf.ts). */
export function useCsrfPrevention({ allowedOrigins }: { allowedOrigins: readonly string[] }): Plugin {
  return {
    onRequest({ request, endResponse, fetchAPI }) {
      const refusal = csrfRefusal(request.method, (name) => request.headers.get(name), allowedOrigins);
      if (!refusal) return;
      endResponse(
        new fetchAPI.Response(JSON.stringify({ errors: [{ message: refusal, extensions: { code: 'CSRF_REFUSED' } }] }), {
          status: 403,
          headers: { 'content-type': 'application/json' },
        }),
      );
    },
  };
}
