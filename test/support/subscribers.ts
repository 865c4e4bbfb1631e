import type { Client } from 'graphql-ws';
import { expect } from 'vitest';
import { until } from './child-server.ts';
import type { EventBus } from '../../src/events/bus.ts';

/**
 * Resolves once `count` subscribers listen on `topic` of the app's bus: the definite signal
 * that a subscription opened over graphql-ws or SSE will see the next publish. Polls in real
 * time (the subscription is set up by the server's own I/O); the limit only catches a hang.
 */
export async function untilSubscribed(bus: EventBus, topic: string, count = 1, limitMs = 60_000): Promise<void> {
  const give = Date.now() + limitMs;
  while (bus.subscribers(topic) < count) {
    if (Date.now() > give) throw new Error(`${count} subscriber(s) of ${topic} not listening within ${limitMs} ms (${bus.subscribers(topic)} are)`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** An `eventLog` subscription over graphql-ws: every seq it delivered, and how it ended (null: still open). */
export function followEventLog(client: Client, after: number): { seqs: number[]; state: { ended: unknown } } {
  const seqs: number[] = [];
  const state: { ended: unknown } = { ended: null };
  client.subscribe<{ eventLog: { seq: number } }>(
    { query: `subscription { eventLog(after: ${after}) { seq } }` },
    {
      next: (r) => {
        if (r.errors) state.ended = r.errors;
        else seqs.push(r.data!.eventLog.seq);
      },
      error: (e) => (state.ended = e ?? 'error'),
      complete: () => (state.ended = 'complete'),
    },
  );
  return { seqs, state };
}

/** Waits until every follower has delivered the newest of `expected`, then checks each delivered exactly `expected` (none lost, none twice) and is still open. */
export async function expectEachDeliveredOnce(expected: number[], followers: ReturnType<typeof followEventLog>[]): Promise<void> {
  const newest = expected.at(-1)!;
  await until(() => (followers.every((f) => f.seqs.at(-1) === newest) ? true : undefined), 'every subscription to reach the newest event');
  for (const f of followers) {
    expect(f.seqs).toEqual(expected);
    expect(f.state.ended).toBeNull();
  }
}
