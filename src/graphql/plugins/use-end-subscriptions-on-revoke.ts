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

function endOnRevoke<T>(source: AsyncIterable<T>, auth: Watcher, identity: Identity): AsyncIterableIterator<T> {
  const iterator = source[Symbol.asyncIterator]();
  let revoked: ((reason: string) => void) | undefined;
  const revocation = new Promise<string>((resolve) => (revoked = resolve));
  const unwatch = auth.watch(identity, (reason) => revoked!(reason));
  let finished = false;
  const finish = () => {
    if (finished) return;
    finished = true;
    unwatch();
    // Not awaited: an async generator waiting on its source only returns once that yields.
    Promise.resolve(iterator.return?.()).catch(() => {});
  };
  return {
    [Symbol.asyncIterator]() {
      return this;
    },
    async next() {
      if (finished) return { done: true, value: undefined };
      const next = await Promise.race([iterator.next(), revocation.then((reason) => ({ revokedReason: reason }))]);
      if ('revokedReason' in next) {
        finish();
        const error = new GraphQLError(`subscription ended: ${next.revokedReason}`, { extensions: { code: 'UNAUTHENTICATED' } });
        return { done: false, value: { errors: [error] } as T };
      }
      if (next.done) finish();
      return next;
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
