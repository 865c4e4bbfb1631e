/**
 * ha:E3 on a real PostgreSQL server: a graphql-ws client on a stand-by's HTTP port follows a
 * drain the leader runs — `operationProgress` (relayed from the event log and the steps in
 * the database), `nodeChanged` for the node's policy, `workloadChanged` from the shared
 * backend. Ends on signals (the operation's end, the policy seen), never on a sleep.
 */
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import { afterEach, describe, expect, it } from 'vitest';
import type { ShardSpec } from '../../plugins/fake/index.ts';
import { startReplicas, type ReplicaSet } from '../support/replicas.ts';
import { createPostgresDatabase, postgresSkipReason } from '../support/test-database.ts';

const skip = postgresSkipReason();
let set: ReplicaSet | undefined;
const clients: Client[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.dispose();
  await set?.stop();
  set = undefined;
});

const SHARDS = 24;
const shards: ShardSpec[] = Array.from({ length: SHARDS }, (_, i) => ({
  tenantId: `t${Math.floor(i / 8)}`,
  shardNumber: i % 8,
  shardCount: 8,
  attachedNodeId: '1',
  secondaries: [{ nodeId: i % 2 ? '2' : '3' }],
}));

/** Collects a subscription's payloads until `done` says so (or it ends). */
function follow<T>(client: Client, query: string, done: (value: T) => boolean): { values: T[]; finished: Promise<T[]> } {
  const values: T[] = [];
  const finished = new Promise<T[]>((resolve, reject) => {
    const stop = client.subscribe<T>(
      { query },
      {
        next: ({ data, errors }) => {
          if (errors) return reject(new Error(JSON.stringify(errors)));
          values.push(data as T);
          if (done(data as T)) {
            stop();
            resolve(values);
          }
        },
        error: reject,
        complete: () => resolve(values),
      },
    );
  });
  return { values, finished };
}

type Progress = { operationProgress: { operation: { state: string; counts: { moved: number } }; steps: { workloadId: string; state: string }[] } };

describe.skipIf(skip)(skip ?? 'subscriptions on a stand-by', () => {
  it('ha:E3: operationProgress, nodeChanged and workloadChanged on a stand-by follow the drain the leader runs', async () => {
    set = await startReplicas(await createPostgresDatabase(), 2, {
      cluster: { topology: { nodes: [{ id: '1' }, { id: '2' }, { id: '3' }], shards }, latenciesMs: { cutOver: 60 } },
      settings: { maxConcurrentMoves: 1 },
    });
    const leader = await set.untilLeader();
    const standby = set.replicas.find((r) => r !== leader)!;
    const { url } = await standby.app.start(0, '127.0.0.1');
    const wsUrl = new URL('/graphql', url);
    wsUrl.protocol = 'ws:';
    const client = createClient({ url: wsUrl.toString(), webSocketImpl: WebSocket, retryAttempts: 0 });
    clients.push(client);

    const policies = follow<{ nodeChanged: { id: string; schedulingPolicy: string } }>(
      client,
      'subscription { nodeChanged(nodeId: "1") { id schedulingPolicy } }',
      (v) => v.nodeChanged.schedulingPolicy === 'PAUSE_FOR_RESTART',
    );
    const workloads = follow<{ workloadChanged: { id: string; shard: { attachedNodeId: string } | null } }>(
      client,
      'subscription { workloadChanged(kind: SHARD) { id shard { attachedNodeId } } }',
      (v) => v.workloadChanged.shard?.attachedNodeId !== '1',
    );
    // Subscriptions are registered on the stand-by before the drain starts (a query round trip on the same socket orders it).
    await new Promise<void>((resolve, reject) => client.subscribe({ query: '{ leadership { role } }' }, { next: () => {}, error: reject, complete: resolve }));

    const res = await leader.gql(`mutation { startNodeDrain(nodeId: "1") { ... on Operation { id } } }`);
    const id = res.data.startNodeDrain.id as string;
    const progress = follow<Progress>(
      client,
      `subscription { operationProgress(id: "${id}") { operation { state counts { moved } } steps { workloadId state } } }`,
      (v) => ['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(v.operationProgress.operation.state),
    );
    const seen = await progress.finished;
    const first = seen[0]!.operationProgress.operation;
    const last = seen.at(-1)!.operationProgress.operation;
    expect(last).toMatchObject({ state: 'SUCCEEDED', counts: { moved: SHARDS } });
    // Every move after the subscription's first answer reached the stand-by's subscriber, each as a step change.
    const moved = new Set(seen.flatMap((v) => v.operationProgress.steps.filter((s) => s.state === 'MOVED').map((s) => s.workloadId)));
    expect(moved.size).toBeGreaterThanOrEqual(SHARDS - first.counts.moved);
    expect(seen.length).toBeGreaterThan(2);
    // The leader's policy change at the drain's end reaches the stand-by's nodeChanged.
    const policySeen = (await policies.finished).map((v) => v.nodeChanged.schedulingPolicy);
    expect(policySeen.at(-1)).toBe('PAUSE_FOR_RESTART');
    // And the shared backend's workload changes, on the stand-by's own bus.
    expect((await workloads.finished).length).toBeGreaterThan(0);
    // The stand-by never acted.
    expect(set.actions.filter((a) => a.replica === standby.name)).toEqual([]);
  });
});
