import { GraphQLError } from 'graphql';
import { isAsyncIterable, type Plugin } from 'graphql-yoga';

type HttpExtension = { status?: number; spec?: boolean; headers?: Record<string, string> };

const httpOf = (error: GraphQLError) => error.extensions?.http as HttpExtension | undefined;

/**
 * The GraphQL-over-HTTP status rule, where yoga's own marks fall short. yoga answers 200
 * with `errors` to a client accepting only the legacy `application/json` for errors marked
 * `http.spec`, and their 4xx to `application/graphql-response+json`; the spec wants that
 * for GraphQL request errors (a document that does not parse or validate — depth, cost and
 * alias limits are validation rules — and variables that do not coerce), and a plain 400
 * for a request that is not a well-formed GraphQL-over-HTTP request at all.
 *
 * - Variables that do not coerce (or an operation name that names none): the executor marks
 *   them 400 without `spec` (graphql-jit not at all); they get 400 with `spec`.
 * - A body that is not JSON (and the other BAD_REQUEST refusals yoga marks `spec`): the
 *   mark is dropped, so every client gets 400.
 */
export function useHttpStatus(): Plugin {
  return {
    onExecute() {
      return {
        onExecuteDone({ result, setResult }) {
          // No `data` at all: the request failed before execution began (GraphQL spec).
          if (isAsyncIterable(result) || 'data' in result || !result.errors?.length) return;
          const errors = result.errors.map((error) => {
            const http = httpOf(error as GraphQLError);
            if (http?.status === 400 && http.spec === undefined) http.spec = true;
            if (http) return error;
            // graphql-jit (compiled queries) reports such errors without yoga's mark.
            const e = error as GraphQLError;
            return new GraphQLError(e.message, {
              nodes: e.nodes,
              source: e.source,
              positions: e.positions,
              path: e.path,
              extensions: { ...e.extensions, http: { status: 400, spec: true } },
            });
          });
          setResult({ ...result, errors });
        },
      };
    },
    onResultProcess({ result, setResult }) {
      if (Array.isArray(result) || isAsyncIterable(result) || !result.errors?.some((e) => e.extensions?.code === 'BAD_REQUEST' && httpOf(e)?.spec)) return;
      const errors = result.errors.map((e) => {
        const http = httpOf(e);
        if (e.extensions?.code !== 'BAD_REQUEST' || !http?.spec) return e;
        const { spec: _spec, ...rest } = http;
        return new GraphQLError(e.message, {
          nodes: e.nodes,
          source: e.source,
          positions: e.positions,
          path: e.path,
          extensions: { ...e.extensions, http: rest },
        });
      });
      setResult({ ...result, errors });
    },
  };
}
