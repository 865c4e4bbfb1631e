import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BackendError } from '../../../src/cluster/errors.ts';
import type { ClusterEvent } from '../../../src/cluster/types.ts';
import { PageserverResponseError } from '../../../plugins/pageserver/index.ts';
import { shardIdOf, type SimShardSpec } from '../../../simulators/pageserver/index.ts';
import { closeAfterEach, startSimCluster, waitFor, type SimCluster } from '../../support/pageserver-cluster.ts';

let c: SimCluster | undefined;
const clusters = closeAfterEach(afterEach);

const SHARD: SimShardSpec = { tenant: 7, shardNumber: 0, shardCount: 1, attached: 1, secondaries: [2], generation: 4 };
const ID = shardIdOf(SHARD);
const LOCATION = /\/location_config$/;

/** Timeouts are short only where a test makes a simulator hold requests (see FAST_OPTIONS). */
const HELD = { requestTimeoutMs: 300 };

async function setUp(shard: SimShardSpec = SHARD, downloadBytesPerSecond?: number, options: Parameters<SimCluster['startController']>[0] = {}) {
  c = clusters.use(await startSimCluster({ nodes: [{ id: 1 }, { id: 2 }, { id: 3 }], shards: [shard], downloadBytesPerSecond }));
  return c.startController(options);
}

const persistedGeneration = () =>
  JSON.parse(readFileSync(join(c!.dir, 'state/placement.json'), 'utf8')).shards.find((s: { id: string }) => s.id === ID).generation;

async function rejection(p: Promise<unknown>): Promise<BackendError> {
  const e = await p.then(
    () => expect.fail('expected the cut-over to fail'),
    (error: unknown) => error,
  );
  expect(e).toBeInstanceOf(BackendError);
  return e as BackendError;
}

describe('pageserver cut-over (live migration)', () => {
  it("runs Neon's sequence, persisting the new generation before the destination is attached with it", async () => {
    const backend = await setUp();
    const puts: string[] = [];
    for (const id of [1, 2]) {
      c!.sim(id).onPut = (_shard, body) =>
        puts.push(
          `${id}:${body.mode}@${body.generation ?? '-'}${body.secondary_conf ? ` warm=${(body.secondary_conf as { warm: boolean }).warm}` : ''} persisted=${persistedGeneration()}`,
        );
    }
    const events: ClusterEvent[] = [];
    backend.watch((e) => events.push(e));
    expect(await backend.cutOverShard(ID, { fromNodeId: '1', toNodeId: '2' })).toEqual({});
    expect(puts).toEqual([
      '1:AttachedStale@4 persisted=4',
      '2:AttachedMulti@5 persisted=5',
      '1:Secondary@- warm=true persisted=5',
      '2:AttachedSingle@5 persisted=5',
    ]);
    expect(c!.sim(2).requests).toContain(`POST /v1/tenant/${ID}/secondary/download`);
    expect(c!.view()[ID]).toEqual({ '1': 'Secondary@-', '2': 'AttachedSingle@5' });
    expect(await backend.getShard(ID)).toMatchObject({ attachedNodeId: '2', secondaryNodeIds: ['1'] });
    // Emitted in the cut-over itself; its delivery (a microtask) is all that is left.
    await new Promise((r) => setImmediate(r));
    expect(events.filter((e) => e.type === 'shardChanged')).toHaveLength(1);
    // Validate upcall: only the newest generation is valid.
    const res = await fetch(`${backend.upcallUrl}/upcall/v1/validate`, {
      method: 'POST',
      body: JSON.stringify({
        tenants: [
          { id: ID, gen: 4 },
          { id: ID, gen: 5 },
        ],
      }),
    });
    expect(await res.json()).toEqual({
      tenants: [
        { id: ID, valid: false },
        { id: ID, valid: true },
      ],
    });
  });

  it('retries a request answered 5xx, with backoff, and completes; the note names the requests, node and attempts', async () => {
    const backend = await setUp();
    c!.sim(2).inject({ method: 'PUT', path: LOCATION, kind: { status: 503 }, times: 2 });
    c!.sim(2).inject({ method: 'POST', path: /secondary\/download$/, kind: { status: 502 }, times: 1 });
    const result = await backend.cutOverShard(ID, { fromNodeId: '1', toNodeId: '2' });
    expect(result).toEqual({
      note: 'retried: POST secondary/download on node 2 took 2 attempts (answered 502); PUT location_config AttachedMulti on node 2 took 3 attempts (answered 503, answered 503)',
    });
    expect(c!.view()[ID]).toEqual({ '1': 'Secondary@-', '2': 'AttachedSingle@5' });
    expect(c!.sim(2).requests.filter((r) => r === `PUT /v1/tenant/${ID}/location_config`)).toHaveLength(4);
  });

  it('rolls back to the origin with a new generation when the destination keeps answering 5xx', async () => {
    const backend = await setUp();
    c!.sim(2).inject({ method: 'PUT', path: LOCATION, kind: { status: 500 } });
    const e = await rejection(backend.cutOverShard(ID, { fromNodeId: '1', toNodeId: '2' }));
    expect(e.message).toMatch(/answered 500: injected fault 500 \(3 attempts\); rolled back to node 1: re-attached AttachedSingle with generation 6$/);
    expect(c!.view()[ID]).toEqual({ '1': 'AttachedSingle@6', '2': 'Secondary@-' });
    expect(await backend.getShard(ID)).toMatchObject({ attachedNodeId: '1', secondaryNodeIds: ['2'] });
    expect(persistedGeneration()).toBe(6);
  });

  it('rolls back when the destination times out: AttachedMulti until the destination confirms Secondary, then AttachedSingle', async () => {
    const backend = await setUp(SHARD, undefined, HELD);
    c!.sim(2).inject({ method: 'PUT', path: LOCATION, kind: 'timeout' });
    const e = await rejection(backend.cutOverShard(ID, { fromNodeId: '1', toNodeId: '2' }));
    // The destination may have applied AttachedMulti (no answer is not a refusal): the origin
    // must not be AttachedSingle next to it.
    expect(e.message).toMatch(
      /timed out after 300 ms \(3 attempts\); rolled back to node 1: re-attached AttachedMulti with generation 6; node 2 did not confirm it is no longer attached/,
    );
    expect(c!.view()[ID]).toEqual({ '1': 'AttachedMulti@6', '2': 'Secondary@-' });
    expect(backend.unsettledShards()).toEqual({ [ID]: ['1', '2'] });
    const refused = await rejection(backend.cutOverShard(ID, { fromNodeId: '1', toNodeId: '2' }));
    expect(refused.code).toBe('Conflict');
    expect(refused.message).toMatch(/being re-synchronised after a failed cut-over: waiting for node\(s\) 1, 2/);
    c!.sim(2).clearFaults();
    await waitFor(() => c!.view()[ID]?.['1'] === 'AttachedSingle@6', { what: 'node 1 AttachedSingle after node 2 answers' });
    expect(c!.view()[ID]).toEqual({ '1': 'AttachedSingle@6', '2': 'Secondary@-' });
    await waitFor(() => Object.keys(backend.unsettledShards()).length === 0, { what: 'shard settled' });
    expect(await backend.cutOverShard(ID, { fromNodeId: '1', toNodeId: '2' })).toEqual({});
  });

  it('rolls forward to the destination when the origin cannot take the shard back: resolves with a note', async () => {
    const backend = await setUp();
    // The origin accepts AttachedStale, then answers 500 to everything.
    c!.sim(1).inject({ method: 'PUT', path: LOCATION, kind: { status: 500 }, skip: 1 });
    const result = await backend.cutOverShard(ID, { fromNodeId: '1', toNodeId: '2' });
    expect(result?.note).toMatch(
      /^rolled forward: cut-over of shard \S+ from node 1 to node 2 failed: pageserver 1: PUT \S+ answered 500: injected fault 500 \(3 attempts\); rollback to node 1 failed \(.*\); node 2 attached AttachedSingle with generation 7$/,
    );
    expect(c!.view()[ID]).toEqual({ '1': 'AttachedStale@4', '2': 'AttachedSingle@7' });
    expect(await backend.getShard(ID)).toMatchObject({ attachedNodeId: '2', secondaryNodeIds: ['1'] });
    // The origin is set Secondary once it takes requests again.
    expect(backend.unsettledShards()).toEqual({ [ID]: ['1'] });
    c!.sim(1).clearFaults();
    await waitFor(() => Object.keys(backend.unsettledShards()).length === 0, { what: 'shard settled' });
    expect(c!.view()[ID]).toEqual({ '1': 'Secondary@-', '2': 'AttachedSingle@7' });
  });

  it('rolls forward when the destination holds the new generation and refuses to be set back', async () => {
    const backend = await setUp();
    // Destination: AttachedMulti accepted, then 500 to every PUT; the origin refuses Secondary.
    c!.sim(2).inject({ method: 'PUT', path: LOCATION, kind: { status: 500 }, skip: 1 });
    c!.sim(1).inject({ method: 'PUT', path: LOCATION, kind: { status: 500 }, skip: 1 });
    const result = await backend.cutOverShard(ID, { fromNodeId: '1', toNodeId: '2' });
    expect(result?.note).toMatch(
      /^rolled forward: .*pageserver 1: PUT \S+ answered 500.*; node 2 refused to be set back to Secondary \(.*\) and keeps the shard AttachedMulti with generation 5; it is made AttachedSingle when it answers$/,
    );
    expect(c!.view()[ID]).toEqual({ '1': 'AttachedStale@4', '2': 'AttachedMulti@5' });
    expect(backend.unsettledShards()).toEqual({ [ID]: ['1', '2'] });
    c!.sim(1).clearFaults();
    c!.sim(2).clearFaults();
    await waitFor(() => Object.keys(backend.unsettledShards()).length === 0, { what: 'shard settled' });
    expect(c!.view()[ID]).toEqual({ '1': 'Secondary@-', '2': 'AttachedSingle@5' });
    expect(backend.generationOf(ID)).toBe(5);
  });

  it('rolls back when the secondary does not finish downloading within downloadWaitMs', async () => {
    const backend = await setUp({ ...SHARD, lag: { 2: { bytes: 1024 * 1024 } } }, 0, { downloadWaitMs: 500 });
    const e = await rejection(backend.cutOverShard(ID, { fromNodeId: '1', toNodeId: '2' }));
    expect(e.message).toMatch(/had not finished downloading after 500 ms .*; rolled back to node 1: re-attached AttachedSingle with generation 5$/);
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

describe('re-synchronisation after a cut-over whose rollback and roll-forward both failed', () => {
  it('both nodes refuse: Unavailable; the origin is re-attached with the last generation when it takes requests again', async () => {
    const backend = await setUp();
    c!.sim(1).inject({ method: 'PUT', path: LOCATION, kind: { status: 500 }, skip: 1 });
    c!.sim(2).inject({ method: 'PUT', path: LOCATION, kind: { status: 500 } });
    const e = await rejection(backend.cutOverShard(ID, { fromNodeId: '1', toNodeId: '2' }));
    expect(e.code).toBe('Unavailable');
    expect(e.message).toMatch(
      /; not rolled back: node 1 refused the shard \(.*\); not rolled forward: node 2 refused it too \(.*\); the shard stays assigned to node 1/,
    );
    // The origin is still AttachedStale (an attached location); node 2 never took generation 7.
    expect(c!.view()[ID]).toEqual({ '1': 'AttachedStale@4', '2': 'Secondary@-' });
    expect(await backend.getShard(ID)).toMatchObject({ attachedNodeId: '1', secondaryNodeIds: ['2'] });
    expect(backend.generationOf(ID)).toBe(7);
    expect(backend.unsettledShards()).toEqual({ [ID]: ['1'] });
    // Heartbeats keep succeeding, the PUTs keep failing: two more re-sends to node 1 change nothing, burn no generation.
    const putsToOrigin = () => c!.sim(1).requests.filter((r) => r.startsWith('PUT ') && LOCATION.test(r)).length;
    const sent = putsToOrigin();
    await waitFor(() => putsToOrigin() >= sent + 2, { what: 'two more re-sends to node 1' });
    expect(backend.generationOf(ID)).toBe(7);
    expect(c!.view()[ID]).toEqual({ '1': 'AttachedStale@4', '2': 'Secondary@-' });
    c!.sim(1).clearFaults();
    await waitFor(() => Object.keys(backend.unsettledShards()).length === 0, { what: 'shard settled' });
    expect(c!.view()[ID]).toEqual({ '1': 'AttachedSingle@7', '2': 'Secondary@-' });
    expect(persistedGeneration()).toBe(7);
  });

  it('the destination does not answer (its requests are applied, the answers lost): the origin never gets a generation the destination may hold, nor AttachedSingle beside it', async () => {
    const backend = await setUp(SHARD, undefined, HELD);
    c!.sim(1).inject({ method: 'PUT', path: LOCATION, kind: { status: 500 }, skip: 1 });
    c!.sim(2).inject({ method: 'PUT', path: LOCATION, kind: 'lostAnswer' });
    const e = await rejection(backend.cutOverShard(ID, { fromNodeId: '1', toNodeId: '2' }));
    expect(e.message).toMatch(/not rolled back: node 1 refused .*not rolled forward: node 2 refused it too \(.*timed out/);
    // Unknown to the controller, node 2 did apply the roll-forward.
    expect(c!.view()[ID]).toEqual({ '1': 'AttachedStale@4', '2': 'AttachedSingle@7' });
    expect(backend.unsettledShards()).toEqual({ [ID]: ['1', '2'] });
    c!.sim(1).clearFaults();
    // Node 2 is told Secondary (applied, answer lost): node 1 is only AttachedMulti, with a new generation.
    await waitFor(() => c!.view()[ID]?.['1'] === 'AttachedMulti@8', { what: 'node 1 AttachedMulti@8' });
    expect(c!.view()[ID]?.['2']).toBe('Secondary@-');
    c!.sim(2).clearFaults();
    await waitFor(() => Object.keys(backend.unsettledShards()).length === 0, { what: 'shard settled' });
    expect(c!.view()[ID]).toEqual({ '1': 'AttachedSingle@8', '2': 'Secondary@-' });
    expect(backend.generationOf(ID)).toBe(8);
  });

  it('a restart of the origin while unsettled: re-attach answers AttachedMulti while the destination is unconfirmed', async () => {
    const backend = await setUp(SHARD, undefined, HELD);
    c!.sim(2).inject({ method: 'PUT', path: LOCATION, kind: 'timeout' });
    await rejection(backend.cutOverShard(ID, { fromNodeId: '1', toNodeId: '2' }));
    expect(backend.unsettledShards()).toEqual({ [ID]: ['1', '2'] });
    await c!.sim(1).restart();
    expect(c!.view()[ID]).toEqual({ '1': 'AttachedMulti@7', '2': 'Secondary@-' });
    c!.sim(2).clearFaults();
    await waitFor(() => Object.keys(backend.unsettledShards()).length === 0, { what: 'shard settled' });
    expect(c!.view()[ID]).toEqual({ '1': 'AttachedSingle@7', '2': 'Secondary@-' });
  });
});
