import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { postGraphQL, spawnLockkeeper, until } from '../support/child-server.ts';

const SHARDS = 24;
let server: ReturnType<typeof spawnLockkeeper> | undefined;
afterEach(() => {
  server?.child.kill('SIGKILL');
});

describe('kill -9 during a drain', () => {
  it('resumes on restart with the same database and finishes with every shard accounted for exactly once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lk-kill-'));
    // The simulated cluster keeps its state in a file: like a real cluster, it outlives the gateway.
    writeFileSync(
      join(dir, 'lockkeeper.config.json'),
      JSON.stringify({
        plugins: [
          {
            name: 'fake',
            options: {
              statePath: 'cluster-state.json',
              latenciesMs: { cutOver: 150 },
              topology: {
                nodes: [{ id: '1' }, { id: '2' }, { id: '3' }],
                shards: Array.from({ length: SHARDS }, (_, i) => ({
                  tenantId: 't',
                  shardNumber: i,
                  shardCount: SHARDS,
                  attachedNodeId: '1',
                  secondaries: [{ nodeId: i % 2 ? '2' : '3' }],
                })),
              },
            },
          },
        ],
        operations: { maxConcurrentMoves: 2 },
      }),
    );
    server = spawnLockkeeper({}, dir);
    await server.ready;
    const started = await postGraphQL(server.url, 'mutation { startNodeDrain(nodeId: "1", reason: "kill test") { ... on Operation { id } } }');
    const id: string = started.startNodeDrain.id;
    await until(async () => {
      const op = (await postGraphQL(server!.url, `{ operation(id: "${id}") { ... on Operation { counts { moved } } } }`)).operation;
      return op.counts.moved >= 6 ? op : undefined;
    }, 'six shards moved');
    server.child.kill('SIGKILL');
    expect((await server.exited).signal).toBe('SIGKILL');

    server = spawnLockkeeper({}, dir);
    await server.ready;
    expect(server.stdout()).toContain('resuming drain of node 1');
    const done = await until(async () => {
      const op = (await postGraphQL(server!.url, `{ operation(id: "${id}") { ... on Operation { state counts { moved skipped failed planned moving } } } }`))
        .operation;
      return op.state === 'RUNNING' ? undefined : op;
    }, 'the drain to finish');
    expect(done).toEqual({ state: 'SUCCEEDED', counts: { moved: SHARDS, skipped: 0, failed: 0, planned: 0, moving: 0 } });

    const data = await postGraphQL(
      server.url,
      `{ operation(id: "${id}") { ... on Operation { steps(first: 1000) { totalCount edges { node { workloadId state } } } } }
         operations { totalCount }
         node(id: "1") { ... on ClusterNode { schedulingPolicy } }
         shards(first: 1000) { totalCount edges { node { id attachedNodeId secondaryNodeIds } } } }`,
    );
    const steps = data.operation.steps.edges.map((e: any) => e.node);
    const shardIds = data.shards.edges.map((e: any) => e.node.id);
    // Exactly one step per shard, each moved once; one operation; nothing left on the node.
    expect(steps).toHaveLength(SHARDS);
    expect(new Set(steps.map((s: any) => s.workloadId))).toEqual(new Set(shardIds));
    expect(steps.every((s: any) => s.state === 'MOVED')).toBe(true);
    expect(data.operations.totalCount).toBe(1);
    expect(data.node.schedulingPolicy).toBe('PAUSE_FOR_RESTART');
    expect(data.shards.totalCount).toBe(SHARDS);
    for (const { node } of data.shards.edges) {
      expect(node.attachedNodeId).not.toBe('1');
      expect(node.secondaryNodeIds).toEqual(['1']);
    }
  });
});
