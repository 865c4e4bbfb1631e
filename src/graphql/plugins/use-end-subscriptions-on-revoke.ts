import { GraphQLError } from 'graphql';
import { isAsyncIterable, type Plugin } from 'graphql-yoga';
import type { AuthService, Identity } from '../../auth/service.ts';
import type { GraphQLContext } from '../context.ts';

type Watcher = Pick<AuthService, 'watch'>;

/**
 * A subscription started with a token ends when the token is revoked or expires (over
 * WebSocket the socket is closed too, see src/http/websocket.ts; this covers SSE as well):
 * the stream sends one UNAUTHENTICATED error and completes.
 */
export function useEndSubscriptionsOnRevoke({ auth }: { auth: Watcher }): Plugin<GraphQLContext> {
  return {
    onSubscribe({ args }) {
      const identity = args.contextValue.identity;
      if (!identity?.tokenId) return;
      return {
        onSubscribeResult({ result, setResult }) {
          if (isAsyncIterable(result)) setResult(endOnRevoke(result, auth, identity));
        },
      };
    },
  };
}

/**
 * The source's events as they come, until the token ends. One watcher per subscription,
 * nothing per event: a `Promise.race` with a revocation promise that never settles would
 * leave one reaction on it per event and subscriber, kept until the subscription ends
 * (issue 29: with 1 000 subscribers, garbage the fan-out paid for on every event).
 */
function endOnRevoke<T>(source: AsyncIterable<T>, auth: Watcher, identity: Identity): AsyncIterableIterator<T> {
  const iterator = source[Symbol.asyncIterator]();
  let revokedReason: string | null = null;
  /** Settles the `next()` waiting on the source, if any, with the revocation. */
  let interrupt: ((reason: string) => void) | null = null;
  const unwatch = auth.watch(identity, (reason) => {
    revokedReason = reason;
    interrupt?.(reason);
  });
  let finished = false;
  const finish = () => {
    if (finished) return;
    finished = true;
    unwatch();
    // Not awaited: an async generator waiting on its source only returns once that yields.
    Promise.resolve(iterator.return?.()).catch(() => {});
  };
  const ended = (reason: string): IteratorResult<T> => {
    finish();
    const error = new GraphQLError(`subscription ended: ${reason}`, { extensions: { code: 'UNAUTHENTICATED' } });
    return { done: false, value: { errors: [error] } as T };
  };
  return {
    [Symbol.asyncIterator]() {
      return this;
    },
    next() {
      if (finished) return Promise.resolve({ done: true, value: undefined });
      if (revokedReason !== null) return Promise.resolve(ended(revokedReason));
      return new Promise<IteratorResult<T>>((resolve, reject) => {
        interrupt = (reason) => {
          interrupt = null;
          resolve(ended(reason));
        };
        iterator.next().then(
          (next) => {
            if (finished) return;
            interrupt = null;
            if (next.done) finish();
            resolve(next);
          },
          (e: unknown) => {
            interrupt = null;
            reject(e);
          },
        );
      });
    },
    async return() {
      finish();
      return { done: true, value: undefined };
    },
    async throw(error?: unknown) {
      finish();
      throw error;
    },
  };
}
