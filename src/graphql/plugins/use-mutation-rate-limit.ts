import { GraphQLError, getOperationAST, Kind, type DocumentNode, type SelectionSetNode } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { AuthService } from '../../auth/service.ts';
import type { GraphQLContext } from '../context.ts';

/** Root fields of a mutation, fragments included: each counts against the rate limit. */
function rootFieldCount(selectionSet: SelectionSetNode, document: DocumentNode, seen = new Set<string>()): number {
  let count = 0;
  for (const selection of selectionSet.selections) {
    if (selection.kind === Kind.FIELD) count += selection.name.value.startsWith('__') ? 0 : 1;
    else if (selection.kind === Kind.INLINE_FRAGMENT) count += rootFieldCount(selection.selectionSet, document, seen);
    else if (!seen.has(selection.name.value)) {
      seen.add(selection.name.value);
      const fragment = document.definitions.find((d) => d.kind === Kind.FRAGMENT_DEFINITION && d.name.value === selection.name.value);
      if (fragment && fragment.kind === Kind.FRAGMENT_DEFINITION) count += rootFieldCount(fragment.selectionSet, document, seen);
    }
  }
  return count;
}

/** Mutations per token per minute (HTTP and WebSocket alike): a 429 GraphQL error past the limit. */
export function useMutationRateLimit({ auth }: { auth: Pick<AuthService, 'takeMutations' | 'mutationsPerMinute'> }): Plugin<GraphQLContext> {
  return {
    onExecute({ args, setResultAndStopExecution }) {
      const operation = getOperationAST(args.document, args.operationName);
      if (operation?.operation !== 'mutation') return;
      const count = rootFieldCount(operation.selectionSet, args.document);
      const waitMs = auth.takeMutations(args.contextValue.identity, count);
      if (waitMs === 0) return;
      const retryAfter = Math.ceil(waitMs / 1000);
      setResultAndStopExecution({
        errors: [
          new GraphQLError(
            count > auth.mutationsPerMinute
              ? `rate limit: a request may carry at most ${auth.mutationsPerMinute} mutations`
              : `rate limit: at most ${auth.mutationsPerMinute} mutations per minute for token "${args.contextValue.identity.name}"; retry in ${retryAfter} s`,
            { extensions: { code: 'RATE_LIMITED', retryAfterSeconds: retryAfter, http: { status: 429, headers: { 'retry-after': String(retryAfter) } } } },
          ),
        ],
      });
    },
  };
}
