import { describe, expect, it } from 'vitest';
import type { Identity } from '../../src/auth/service.ts';
import { useEndSubscriptionsOnRevoke } from '../../src/graphql/plugins/use-end-subscriptions-on-revoke.ts';

/**
 * The stream a token's subscription sees (SSE as well as WebSocket): events pass through
 * until the token ends, then one UNAUTHENTICATED error and the end, whether the stream was
 * waiting for an event or not; its token is watched once per subscription, not per event.
 */
function setUp() {
  const watchers = new Set<(reason: string) => void>();
  let watches = 0;
  const auth = {
    watch(_identity: Identity, onEnd: (reason: string) => void) {
      watches++;
      watchers.add(onEnd);
      return () => watchers.delete(onEnd);
    },
  };
  const queue: ((v: IteratorResult<string>) => void)[] = [];
  const buffered: IteratorResult<string>[] = [];
  let returned = false;
  const source: AsyncIterableIterator<string> = {
    [Symbol.asyncIterator]() {
      return this;
    },
    next: () => new Promise((resolve) => (buffered.length ? resolve(buffered.shift()!) : queue.push(resolve))),
    return: async () => {
      returned = true;
      return { done: true, value: undefined };
    },
  };
  const emit = (value: string) => (queue.length ? queue.shift()!({ done: false, value }) : buffered.push({ done: false, value }));
  let stream: AsyncIterableIterator<unknown> | undefined;
  const hooks = useEndSubscriptionsOnRevoke({ auth }).onSubscribe!({ args: { contextValue: { identity: { tokenId: 't1' } } } } as never) as {
    onSubscribeResult(p: { result: unknown; setResult(r: unknown): void }): void;
  };
  hooks.onSubscribeResult({ result: source, setResult: (r) => (stream = r as AsyncIterableIterator<unknown>) });
  return {
    stream: stream!,
    emit,
    revoke: (reason: string) => [...watchers].forEach((w) => w(reason)),
    watching: () => watchers.size,
    watches: () => watches,
    returned: () => returned,
  };
}

describe('useEndSubscriptionsOnRevoke', () => {
  it('passes events through, watching the token once for all of them', async () => {
    const s = setUp();
    for (let i = 0; i < 100; i++) {
      const next = s.stream.next();
      s.emit(`e${i}`);
      expect(await next).toEqual({ done: false, value: `e${i}` });
    }
    expect(s.watches()).toBe(1);
    expect(await s.stream.return!()).toEqual({ done: true, value: undefined });
    expect(s.watching()).toBe(0);
    expect(s.returned()).toBe(true);
  });

  it('a revocation while the stream waits for an event ends it: one UNAUTHENTICATED error, then done; the source is returned', async () => {
    const s = setUp();
    const waiting = s.stream.next();
    s.revoke('token "ci" has been revoked');
    const ended = (await waiting) as { done: boolean; value: { errors: { message: string; extensions: { code: string } }[] } };
    expect(ended.done).toBe(false);
    expect(ended.value.errors.map((e) => [e.message, e.extensions.code])).toEqual([['subscription ended: token "ci" has been revoked', 'UNAUTHENTICATED']]);
    expect(await s.stream.next()).toEqual({ done: true, value: undefined });
    expect(s.watching()).toBe(0);
    expect(s.returned()).toBe(true);
    // An event the source still delivers is dropped.
    s.emit('late');
    expect(await s.stream.next()).toEqual({ done: true, value: undefined });
  });

  it('a revocation between events ends the stream at its next pull', async () => {
    const s = setUp();
    const first = s.stream.next();
    s.emit('e0');
    expect(await first).toEqual({ done: false, value: 'e0' });
    s.revoke('token "ci" expired');
    const ended = (await s.stream.next()) as { value: { errors: { message: string }[] } };
    expect(ended.value.errors[0]!.message).toBe('subscription ended: token "ci" expired');
    expect(await s.stream.next()).toEqual({ done: true, value: undefined });
  });
});
