import { useGraphQlJit } from '@envelop/graphql-jit';
import { getOperationAST } from 'graphql';
import type { Plugin } from 'graphql-yoga';

/**
 * Queries run compiled (graphql-jit): each document is compiled once, on first use, into a
 * function that resolves it — no per-field type checks and lookups of the generic executor
 * (issue 15 point 5: the read path). yoga's parse cache hands back the same document for
 * the same query text, so the compiled function is found again by document. Mutations and
 * subscriptions keep the reference executor: they are not the hot path, and mutations'
 * root fields must run one after another.
 */
export function useCompiledQueries(): Plugin {
  return useGraphQlJit({}, { enableIf: (args) => getOperationAST(args.document, args.operationName)?.operation === 'query' }) as Plugin;
}
