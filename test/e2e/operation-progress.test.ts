/**
 * `operationProgress` as a client gets it: over graphql-ws from a real listening server while
 * a real drain runs (system clock, the simulated cluster's own latencies), and, in process,
 * the subscription's promise that no change between its first read and its listening is lost.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, type ExecutionResult } from 'graphql';
import { createClient, type Client } from 'graphql-ws';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { shardIdOf } from '../../plugins/fake/index.ts';
import { ANONYMOUS_ADMIN } from '../../src/auth/service.ts';
import { createLogger } from '../../src/logger.ts';
import { startLockkeeper, type Started } from '../../src/start.ts';
import { createTestApp, type TestApp } from '../support/graphql-app.ts';
import { driveUntil, mutate } from '../operations/drive.ts';

const SHARDS = 12;
const SHARD_IDS = Array.from({ length: SHARDS }, (_, i) => shardIdOf({ tenantId: 't', shardNumber: i, shardCount: SHARDS }));

let started: Started | undefined;
let client: Client | undefined;
let t: TestApp | undefined;
afterEach(async () => {
  await client?.dispose();
  await started?.app.stop();
  await t?.stop();
  client = started = t = undefined;
});

const shardsOn1 = (count: number) =>
  Array.from({ length: count }, (_, i) => ({
    tenantId: 't',
    shardNumber: i,
    shardCount: count,
    attachedNodeId: '1',
    secondaries: [{ nodeId: i % 2 ? '2' : '3' }],
  }));

const PROGRESS = `subscription ($id: ID!) { operationProgress(id: $id) {
  operation { id state counts { planned moving moved skipped failed total } waitingOn { kind } }
  steps { workloadId state toNodeId } } }`;

async function gql(url: string, query: string): Promise<any> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) });
  const body = (await res.json()) as { data?: any; errors?: unknown };
  if (body.errors) throw new Error(JSON.stringify(body.errors));
  return body.data;
}

describe('operationProgress', () => {
  it('over graphql-ws, against a real server during a real drain: the state now, every change in order, the end, then completion', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'lk-progress-'));
    writeFileSync(
      join(cwd, 'lockkeeper.config.json'),
      JSON.stringify({
        plugins: [
          { name: 'fake', options: { latenciesMs: { cutOver: 40 }, topology: { nodes: [{ id: '1' }, { id: '2' }, { id: '3' }], shards: shardsOn1(SHARDS) } } },
        ],
        operations: { maxConcurrentMoves: 3 },
      }),
    );
    started = await startLockkeeper({ log: createLogger('silent'), env: {}, cwd, port: 0 });
    const { url } = started;
    // Every cut-over is held until the subscription has its first answer: the whole drain is then seen live.
    await gql(url, `mutation { simulation { injectFaults(input: { stuck: ${JSON.stringify(SHARD_IDS)} }) { __typename } } }`);
    const op = (await gql(url, 'mutation { startNodeDrain(nodeId: "1", reason: "progress test") { __typename ... on Operation { id } } }')).startNodeDrain;
    expect(op.__typename).toBe('Operation');

    client = createClient({ url: url.replace(/^http/, 'ws'), webSocketImpl: WebSocket, retryAttempts: 0 });
    const messages: any[] = [];
    let firstArrived!: () => void;
    const first = new Promise<void>((resolve) => (firstArrived = resolve));
    const completed = new Promise<void>((resolve, reject) => {
      client!.subscribe(
        { query: PROGRESS, variables: { id: op.id } },
        {
          next: (m) => {
            messages.push((m as ExecutionResult<any>).data!.operationProgress);
            firstArrived();
          },
          error: reject,
          complete: resolve,
        },
      );
    });
    await first;
    expect(messages[0].operation).toMatchObject({ id: op.id, state: 'RUNNING', counts: { total: SHARDS } });
    await gql(url, 'mutation { simulation { clearFaults { stuck } } }');
    await completed;

    const last = messages.at(-1);
    expect(last.operation).toMatchObject({ state: 'SUCCEEDED', counts: { planned: 0, moving: 0, moved: SHARDS, skipped: 0, failed: 0, total: SHARDS } });
    // In order: counts never go back, and every message before the last is a running operation.
    const moved = messages.map((m) => m.operation.counts.moved);
    expect(moved).toEqual([...moved].sort((a, b) => a - b));
    expect(messages.slice(0, -1).every((m) => m.operation.state === 'RUNNING')).toBe(true);
    // Every step's end reached the client: each shard last seen MOVED, to the node it now is on.
    const lastStep = new Map<string, { state: string; toNodeId: string }>();
    for (const m of messages) for (const s of m.steps) lastStep.set(s.workloadId, s);
    const shards = (await gql(url, '{ shards(first: 100) { edges { node { id attachedNodeId } } } }')).shards.edges.map((e: any) => e.node);
    expect(lastStep.size).toBe(SHARDS);
    for (const s of shards) expect(lastStep.get(s.id), s.id).toEqual({ workloadId: s.id, state: 'MOVED', toNodeId: s.attachedNodeId });
    // And what the stream ended with is what the query says.
    const queried = (await gql(url, `{ operation(id: "${op.id}") { ... on Operation { state counts { moved } } } }`)).operation;
    expect(queried).toEqual({ state: 'SUCCEEDED', counts: { moved: SHARDS } });
  });

  it('loses no change made between its first answer and the next pull (it listens before it reads)', async () => {
    t = await createTestApp({ topology: { nodes: [{ id: '1' }, { id: '2' }, { id: '3' }], shards: shardsOn1(4) }, latenciesMs: { cutOver: 100 } });
    const op = await mutate(t, 'startNodeDrain', '1');
    // The subscription as graphql-ws runs it (yoga's envelop pipeline), pulled by hand.
    const env = t.app.yoga.getEnveloped({ identity: ANONYMOUS_ADMIN, params: { query: PROGRESS } });
    const stream = (await env.subscribe({
      schema: env.schema,
      document: parse(PROGRESS),
      variableValues: { id: op.id },
      contextValue: await env.contextFactory(),
    })) as AsyncGenerator<ExecutionResult<any>>;
    const first = await stream.next();
    expect(first.value.data.operationProgress.operation.state).toBe('RUNNING');
    // The whole drain happens before the client asks for more: each change must be waiting for it.
    await driveUntil(t, () => t!.app.storage.activeOperation('1') === null);
    const states: string[] = [];
    for (;;) {
      const next = await stream.next();
      if (next.done) break;
      states.push(next.value.data.operationProgress.operation.state);
    }
    expect(states.at(-1)).toBe('SUCCEEDED');
  });
});
