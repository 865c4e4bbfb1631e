import { createSourceEventStream, execute, type ExecutionArgs, type ExecutionResult } from 'graphql';
import { isAsyncIterable, type Plugin } from 'graphql-yoga';
import type { Publication } from '../../events/bus.ts';
import type { GraphQLContext } from '../context.ts';

type Result = ExecutionResult | Promise<ExecutionResult>;

/**
 * A published event is executed once per distinct subscription, not once per subscriber
 * (issue 29, point 3): subscribers of the same document, operation, variables and token
 * (scope checks depend on the identity; arguments and filters on the variables) share the
 * ExecutionResult of one publish. Results are kept under the bus's publication of the
 * payload, a new object at every publish, never under the payload: backends publish the
 * same node object again after a change (or after a change of what its fields resolve from,
 * as the scheduling policy), and a result kept under the object would be served again,
 * stale. Whatever a subscriber executes was computed after the latest publish of its event.
 * Events the bus did not publish (an `operationProgress` opening snapshot) are executed per
 * subscriber. Revocation stays per subscriber: useEndSubscriptionsOnRevoke wraps the stream
 * this returns, so an ended token's stream is never handed a shared result.
 */
export function useSharedSubscriptionResults(): Plugin<GraphQLContext> {
  const byPublication = new WeakMap<Publication, Map<string, Result>>();
  // Documents come from yoga's parse cache, one per query text: the document object names it.
  const documentIds = new WeakMap<object, number>();
  let documents = 0;
  return {
    onSubscribe({ args, setSubscribeFn }) {
      const { identity, bus } = args.contextValue;
      let documentId = documentIds.get(args.document);
      if (documentId === undefined) documentIds.set(args.document, (documentId = ++documents));
      const key = JSON.stringify([
        documentId,
        args.operationName ?? null,
        identity?.tokenId ?? null,
        identity?.name ?? null,
        identity?.scope ?? null,
        args.variableValues ?? {},
      ]);
      setSubscribeFn(async (a: ExecutionArgs) => {
        const source = await createSourceEventStream(a);
        if (!isAsyncIterable(source)) return source as ExecutionResult;
        return mapEvents(source, (payload) => {
          const publication = bus.publication(payload);
          if (!publication) return execute({ ...a, rootValue: payload });
          let results = byPublication.get(publication);
          if (!results) byPublication.set(publication, (results = new Map()));
          let shared = results.get(key);
          if (shared === undefined) {
            shared = execute({ ...a, rootValue: payload });
            results.set(key, shared);
          }
          return shared;
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
