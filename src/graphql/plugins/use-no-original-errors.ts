import { GraphQLError } from 'graphql';
import { isAsyncIterable, type Plugin } from 'graphql-yoga';

/**
 * yoga attaches the JSON parser's own error (`extensions.originalError`) to "POST body sent
 * invalid JSON."; clients get the message and the code, never an inner error object.
 */
export function useNoOriginalErrors(): Plugin {
  return {
    onResultProcess({ result, setResult }) {
      // Batching is off: one result (subscriptions stream theirs without parser errors).
      if (Array.isArray(result) || isAsyncIterable(result) || !result.errors?.some((e) => e.extensions?.originalError !== undefined)) return;
      const errors = result.errors.map((e) => {
        if (e.extensions?.originalError === undefined) return e;
        const { originalError: _dropped, ...extensions } = e.extensions;
        return new GraphQLError(e.message, { nodes: e.nodes, source: e.source, positions: e.positions, path: e.path, extensions });
      });
      setResult({ ...result, errors });
    },
  };
}
