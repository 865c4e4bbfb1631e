import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BackendError } from '../../../src/cluster/errors.ts';
import type { ClusterEvent } from '../../../src/cluster/types.ts';
import { PageserverResponseError } from '../../../plugins/pageserver/index.ts';
import { closeAfterEach, shardIdOf, startSimCluster, type SimCluster, type SimShardSpec } from '../../support/pageserver-sim/cluster.ts';

let c: SimCluster | undefined;
const clusters = closeAfterEach(afterEach);

const SHARD: SimShardSpec = { tenant: 7, shardNumber: 0, shardCount: 1, attached: 1, secondaries: [2], generation: 4 };
const ID = shardIdOf(SHARD);
const LOCATION = /\/location_config$/;

async function setUp(shard: SimShardSpec = SHARD, downloadBytesPerSecond?: number) {
  c = clusters.use(await startSimCluster({ nodes: [{ id: 1 }, { id: 2 }, { id: 3 }], shards: [shard], downloadBytesPerSecond }));
  return c.startController({ requestTimeoutMs: 300 });
}

const persistedGeneration = () => JSON.parse(readFileSync(join(c!.dir, 'state/placement.json'), 'utf8')).shards.find((s: { id: string }) => s.id === ID).generation;

async function rejection(p: Promise<unknown>): Promise<BackendError> {
  const e = await p.then(() => expect.fail('expected the cut-over to fail'), (error: unknown) => error);
  expect(e).toBeInstanceOf(BackendError);
  return e as BackendError;
}

describe('pageserver cut-over (live migration)', () => {
  it('runs Neon\'s sequence, persisting the new generation before the destination is attached with it', async () => {
    const backend = await setUp();
    const puts: string[] = [];
    for (const id of [1, 2]) {
      c!.sim(id).onPut = (_shard, body) => puts.push(`${id}:${body.mode}@${body.generation ?? '-'}${body.secondary_conf ? ` warm=${(body.secondary_conf as { warm: boolean }).warm}` : ''} persisted=${persistedGeneration()}`);
    }
    const events: ClusterEvent[] = [];
    backend.watch((e) => events.push(e));
    await backend.cutOverShard(ID, { fromNodeId: '1', toNodeId: '2' });
    expect(puts).toEqual([
      '1:AttachedStale@4 persisted=4',
      '2:AttachedMulti@5 persisted=5',
      '1:Secondary@- warm=true persisted=5',
      '2:AttachedSingle@5 persisted=5',
    ]);
    expect(c!.sim(2).requests).toContain(`POST /v1/tenant/${ID}/secondary/download`);
    expect(c!.view()[ID]).toEqual({ '1': 'Secondary@-', '2': 'AttachedSingle@5' });
    expect(await backend.getShard(ID)).toMatchObject({ attachedNodeId: '2', secondaryNodeIds: ['1'] });
    await new Promise((r) => setTimeout(r, 10));
    expect(events.filter((e) => e.type === 'shardChanged')).toHaveLength(1);
    // Validate upcall: only the newest generation is valid.
    const res = await fetch(`${backend.upcallUrl}/upcall/v1/validate`, { method: 'POST', body: JSON.stringify({ tenants: [{ id: ID, gen: 4 }, { id: ID, gen: 5 }] }) });
    expect(await res.json()).toEqual({ tenants: [{ id: ID, valid: false }, { id: ID, valid: true }] });
  });

  it('retries a request answered 5xx, with backoff, and completes', async () => {
    const backend = await setUp();
    c!.sim(2).inject({ method: 'PUT', path: LOCATION, kind: { status: 503 }, times: 2 });
    await backend.cutOverShard(ID, { fromNodeId: '1', toNodeId: '2' });
    expect(c!.view()[ID]).toEqual({ '1': 'Secondary@-', '2': 'AttachedSingle@5' });
    expect(c!.sim(2).requests.filter((r) => r === `PUT /v1/tenant/${ID}/location_config`)).toHaveLength(4);
  });

  it('rolls back to the origin with a new generation when the destination keeps answering 5xx', async () => {
    const backend = await setUp();
    c!.sim(2).inject({ method: 'PUT', path: LOCATION, kind: { status: 500 } });
    const e = await rejection(backend.cutOverShard(ID, { fromNodeId: '1', toNodeId: '2' }));
    expect(e.message).toMatch(/answered 500.*rolled back: re-attached to node 1 with generation 6/);
    expect(c!.view()[ID]).toEqual({ '1': 'AttachedSingle@6', '2': 'Secondary@-' });
    expect(await backend.getShard(ID)).toMatchObject({ attachedNodeId: '1', secondaryNodeIds: ['2'] });
    expect(persistedGeneration()).toBe(6);
  });

  it('rolls back when the destination times out', async () => {
    const backend = await setUp();
    c!.sim(2).inject({ method: 'PUT', path: LOCATION, kind: 'timeout' });
    const e = await rejection(backend.cutOverShard(ID, { fromNodeId: '1', toNodeId: '2' }));
    expect(e.message).toMatch(/timed out after 300 ms.*rolled back: re-attached to node 1/);
    expect(c!.view()[ID]?.['1']).toBe('AttachedSingle@6');
  });

  it('rolls forward to the destination when the origin cannot take the shard back', async () => {
    const backend = await setUp();
    // The origin accepts AttachedStale, then answers 500 to everything.
    c!.sim(1).inject({ method: 'PUT', path: LOCATION, kind: { status: 500 }, skip: 1 });
    const e = await rejection(backend.cutOverShard(ID, { fromNodeId: '1', toNodeId: '2' }));
    expect(e.message).toMatch(/rollback to node 1 failed .*rolled forward: attached to node 2 with generation 7/);
    expect(c!.view()[ID]).toEqual({ '1': 'AttachedStale@4', '2': 'AttachedSingle@7' });
    expect(await backend.getShard(ID)).toMatchObject({ attachedNodeId: '2', secondaryNodeIds: ['1'] });
  });

  it('rolls back when the secondary does not finish downloading within downloadWaitMs', async () => {
    const backend = await setUp({ ...SHARD, lag: { 2: { bytes: 1024 * 1024 } } }, 0);
    const e = await rejection(backend.cutOverShard(ID, { fromNodeId: '1', toNodeId: '2' }));
    expect(e.message).toMatch(/had not finished downloading after 500 ms .*rolled back: re-attached to node 1 with generation 5/);
    expect(c!.view()[ID]).toEqual({ '1': 'AttachedSingle@5', '2': 'Secondary@-' });
  });

  it('malformed JSON is a typed error naming the endpoint', async () => {
    const backend = await setUp();
    c!.sim(2).inject({ method: 'GET', path: /secondary\/status$/, kind: 'malformed' });
    const e = await backend.getSecondaryStatus(ID, '2').catch((error: unknown) => error);
    expect(e).toBeInstanceOf(PageserverResponseError);
    expect((e as PageserverResponseError).endpoint).toBe(`GET /v1/tenant/${ID}/secondary/status`);
    expect((e as Error).message).toContain(`pageserver 2: malformed response from GET /v1/tenant/${ID}/secondary/status`);

    c!.sim(2).inject({ method: 'PUT', path: LOCATION, kind: 'malformed', times: 1 });
    const cut = await rejection(backend.cutOverShard(ID, { fromNodeId: '1', toNodeId: '2' }));
    expect(cut.message).toMatch(new RegExp(`malformed response from PUT /v1/tenant/${ID}/location_config.*rolled back`));
    expect(c!.view()[ID]?.['1']).toMatch(/^AttachedSingle@/);
  });

  it('reports lag from secondary/status; heatmap_mtime null = unknown', async () => {
    const backend = await setUp({ ...SHARD, secondaries: [2, 3], lag: { 2: { bytes: 3000 }, 3: { bytes: 0, heatmap: false } } }, 0);
    const status = await backend.getSecondaryStatus(ID, '2');
    expect(status.bytesTotal - status.bytesDownloaded).toBe(3000);
    expect(typeof status.heatmapMtime).toBe('number');
    expect((await backend.getSecondaryStatus(ID, '3')).heatmapMtime).toBeNull();
  });
});
