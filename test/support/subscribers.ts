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
