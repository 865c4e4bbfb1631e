import { GraphQLError } from 'graphql';
import type { Plugin } from 'graphql-yoga';

type HttpExtension = { status?: number; spec?: boolean; headers?: Record<string, string> };

/** The same error without yoga's `spec` mark, which makes it answer 200 to plain application/json clients. */
function withoutSpecMark(error: GraphQLError): GraphQLError {
  const http = error.extensions?.http as HttpExtension | undefined;
  if (!http?.spec || !http.status) return error;
  const { spec: _spec, ...rest } = http;
  return new GraphQLError(error.message, {
    nodes: error.nodes,
    source: error.source,
    positions: error.positions,
    path: error.path,
    originalError: error.originalError,
    extensions: { ...error.extensions, http: rest },
  });
}

/**
 * A document that does not parse or validate is the client's fault: answer HTTP 400 for
 * every accepted media type (yoga answers 200 for plain `application/json`, which the
 * GraphQL-over-HTTP draft allows), so scripts that only look at the status still notice.
 */
export function useBadRequestStatus(): Plugin {
  return {
    onResultProcess({ result, setResult }) {
      if (Array.isArray(result) || !('errors' in result) || !result.errors?.length || 'data' in result) return;
      const errors = result.errors.map((e) => (e instanceof GraphQLError ? withoutSpecMark(e) : e));
      setResult({ ...result, errors });
    },
  };
}
