import { createSourceEventStream, execute, type ExecutionArgs, type ExecutionResult } from 'graphql';
import { isAsyncIterable, type Plugin } from 'graphql-yoga';
import type { GraphQLContext } from '../context.ts';

/**
 * A published event is resolved once per distinct subscription, not once per subscriber
 * (issue 29, point 3): subscribers of the same document, variables and identity (scope
 * checks and their refusals depend on it, nothing else in a result does) share the
 * ExecutionResult of an event, kept as long as the event object itself (a WeakMap on the
 * payload the bus hands every listener). A thousand watchers of `nodeChanged` cost one
 * execution per change, then only graphql-ws's message per socket.
 */
export function useSharedSubscriptionResults(): Plugin<GraphQLContext> {
  const byEvent = new WeakMap<object, Map<string, unknown>>();
  // Documents come from yoga's parse cache, one per query text: the document object names it.
  const documentIds = new WeakMap<object, number>();
  let documents = 0;
  return {
    onSubscribe({ args, setSubscribeFn }) {
      const identity = args.contextValue.identity;
      let documentId = documentIds.get(args.document);
      if (documentId === undefined) documentIds.set(args.document, (documentId = ++documents));
      const key = [documentId, identity?.tokenId ?? '', identity?.scope ?? '', args.operationName ?? '', JSON.stringify(args.variableValues ?? {})].join('\0');
      setSubscribeFn(async (a: ExecutionArgs) => {
        const source = await createSourceEventStream(a);
        if (!isAsyncIterable(source)) return source as ExecutionResult;
        return mapEvents(source, (payload) => {
          if (typeof payload !== 'object' || payload === null) return execute({ ...a, rootValue: payload });
          let results = byEvent.get(payload);
          if (!results) byEvent.set(payload, (results = new Map()));
          let shared = results.get(key);
          if (shared === undefined) {
            shared = execute({ ...a, rootValue: payload });
            results.set(key, shared);
          }
          return shared as ExecutionResult | Promise<ExecutionResult>;
        });
      });
    },
  };
}

function mapEvents<T, R>(source: AsyncIterable<T>, map: (value: T) => R | Promise<R>): AsyncIterableIterator<R> {
  const iterator = source[Symbol.asyncIterator]();
  return {
    [Symbol.asyncIterator]() {
      return this;
    },
    async next() {
      const next = await iterator.next();
      return next.done ? { done: true, value: undefined } : { done: false, value: await map(next.value) };
    },
    async return() {
      await iterator.return?.();
      return { done: true, value: undefined };
    },
    async throw(error?: unknown) {
      await iterator.return?.();
      throw error;
    },
  };
}
