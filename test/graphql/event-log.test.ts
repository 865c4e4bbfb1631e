import { afterEach, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../support/graphql-app.ts';
import { mutate, settle } from '../operations/drive.ts';

let t: TestApp;
afterEach(async () => {
  await t?.stop();
});

const topology = {
  nodes: [{ id: '1' }, { id: '2' }],
  shards: [0, 1].map((n) => ({ tenantId: 't', shardNumber: n, shardCount: 2, attachedNodeId: '1', secondaries: [{ nodeId: '2' }] })),
};

describe('event log', () => {
  it('pages from a cursor, oldest first, with filters', async () => {
    t = await createTestApp({ topology });
    const op = await mutate(t, 'startNodeDrain', '1');
    await settle(t, '1');
    const all = await t.gql(`{ eventLog(first: 3) { events { seq type nodeId operationId payload } nextCursor hasMore } }`);
    const page = all.data.eventLog;
    // The start and its policy change are one transaction: both, then the moves.
    expect(page.events.map((e: any) => e.type)).toEqual(['OPERATION_STARTED', 'NODE_POLICY_CHANGED', 'SHARD_MOVED']);
    // issue 17, point 6: `payload` is a JSON scalar, an object as it is, not a JSON-encoded string.
    expect(page.events[1].payload).toMatchObject({ from: 'ACTIVE', to: 'DRAINING' });
    for (const e of page.events) expect(typeof e.payload, e.type).toBe('object');
    expect(page.hasMore).toBe(true);
    const rest = await t.gql(`{ eventLog(after: ${page.nextCursor}, first: 100) { events { seq type } hasMore } }`);
    expect(rest.data.eventLog.events.map((e: any) => e.type)).toEqual(['SHARD_MOVED', 'OPERATION_FINISHED', 'NODE_POLICY_CHANGED']);
    expect(rest.data.eventLog.events[0].seq).toBeGreaterThan(page.nextCursor);
    expect(rest.data.eventLog.hasMore).toBe(false);
    const filtered = await t.gql(`{ eventLog(operationId: "${op.id}", types: ["SHARD_MOVED"]) { events { type operationId } } }`);
    expect(filtered.data.eventLog.events).toEqual([
      { type: 'SHARD_MOVED', operationId: op.id },
      { type: 'SHARD_MOVED', operationId: op.id },
    ]);
  });

  it('the subscription replays from a cursor, then streams new events', async () => {
    t = await createTestApp({ topology });
    await t.gql('mutation { configureNode(nodeId: "2", policy: PAUSE) { __typename } }');
    const res = await t.app.yoga.fetch('http://lockkeeper.test/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ query: 'subscription { eventLog(after: 0) { seq type payload } }' }),
    });
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    const next = async (): Promise<any> => {
      for (;;) {
        const at = buffer.indexOf('\n\n');
        if (at >= 0) {
          const chunk = buffer.slice(0, at);
          buffer = buffer.slice(at + 2);
          const data = chunk.split('\n').find((l) => l.startsWith('data:'));
          if (data) return JSON.parse(data.slice(5)).data.eventLog;
          continue;
        }
        const { value, done } = await reader.read();
        if (done) throw new Error('stream ended');
        buffer += decoder.decode(value, { stream: true });
      }
    };
    // Replayed: the configureNode from before the subscription.
    const replayed = await next();
    expect(replayed.type).toBe('NODE_POLICY_CHANGED');
    expect(replayed.payload).toMatchObject({ to: 'PAUSE', cause: 'configure' });
    // Live: a change made after subscribing.
    await t.gql('mutation { configureNode(nodeId: "2", policy: ACTIVE) { __typename } }');
    const live = await next();
    expect(live.seq).toBeGreaterThan(replayed.seq);
    expect(live.payload).toMatchObject({ from: 'PAUSE', to: 'ACTIVE' });
    await reader.cancel();
  });
});
