import BetterSqlite3 from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import type { CutOverProgress } from '../../../src/cluster/shard-control.ts';
import { DEFAULT_TIMELINE_ID, shardIdOf, type SimShardSpec } from '../../../simulators/pageserver/index.ts';
import { calls, closeAfterEach, startSimCluster, type SimCluster } from '../../support/pageserver-cluster.ts';

/**
 * neon:C1–C11 and neon:scenario-1–5 on three simulated pageservers and the simulated
 * compute hook, through the plugin's contract (the GraphQL and REST paths are in
 * test/e2e/). Time is virtual: waits and backoffs are asserted to the millisecond of the
 * harness's 100 ms steps.
 */

const clusters = closeAfterEach(afterEach);
const SHARD: SimShardSpec = { tenant: 7, shardNumber: 0, shardCount: 1, attached: 1, secondaries: [2], generation: 4 };
const ID = shardIdOf(SHARD);
const LOCATION = /\/location_config$/;
const OTHER_TIMELINE = 'c'.repeat(32);

async function setUp(options: { hook?: boolean } = {}) {
  const c: SimCluster = clusters.use(await startSimCluster({ nodes: [{ id: 1 }, { id: 2 }, { id: 3 }], shards: [SHARD] }));
  const backend = await c.startController({}, options);
  return { c, backend, mark: c.log.entries.length };
}

/** Reads the shard's persisted generation synchronously, as a pageserver request arrives. */
function generationReader(c: SimCluster) {
  const db = new BetterSqlite3(c.db.file, { readonly: true });
  return {
    read: () => (db.prepare('SELECT generation FROM PluginShard WHERE id = ?').get(ID) as { generation: number }).generation,
    close: () => db.close(),
  };
}

describe('neon:scenario-1 — the order of a cut-over (neon:C1–C9)', () => {
  it('logs exactly neon:C1, neon:C2 on the origin, neon:C3 on the destination, the generation persisted, neon:C5, neon:C6 with the baseline, the hook naming node 2, neon:C8, neon:C9', async () => {
    const { c, backend, mark } = await setUp();
    const db = generationReader(c);
    const persistedAtAttachedMulti: number[] = [];
    c.sim(2).onPut = (_id, body) => {
      if (body.mode === 'AttachedMulti') persistedAtAttachedMulti.push(db.read());
    };
    const phases: string[] = [];
    await c.drive(backend.cutOverShard(ID, { fromNodeId: '1', toNodeId: '2', onProgress: (p: CutOverProgress) => phases.push(p.phase) }));
    db.close();
    expect(calls(c, mark)).toEqual([
      'node 1 PUT /v1/tenant/:id/location_config flush_ms=10000 AttachedStale@4',
      'node 1 GET /v1/tenant/:id/timeline',
      'node 2 POST /v1/tenant/:id/secondary/download wait_ms=5000',
      'node 2 PUT /v1/tenant/:id/location_config AttachedMulti@5',
      'node 2 POST /v1/tenant/:id/wait_lsn',
      'hook PUT /notify-attach nodes=2',
      'node 1 PUT /v1/tenant/:id/location_config Secondary@-',
      'node 2 PUT /v1/tenant/:id/location_config AttachedSingle@5',
    ]);
    // neon:C4: generation 5 was committed before the AttachedMulti carrying it arrived.
    expect(persistedAtAttachedMulti).toEqual([5]);
    // neon:C6: the baseline as Neon's LSN strings, and serde's Duration as the timeout.
    const waitLsn = c.log.find({ path: /wait_lsn$/ })[0]!;
    expect(waitLsn.body).toEqual({ [DEFAULT_TIMELINE_ID]: c.sim(2).lsns(ID)![DEFAULT_TIMELINE_ID], timeout: { secs: 10, nanos: 0 } });
    expect(c.hook.bodiesFor(ID.slice(0, 32))).toEqual([
      { tenant_id: ID.slice(0, 32), preferred_az: 'az-a', stripe_size: null, shards: [{ node_id: 2, shard_number: 0 }] },
    ]);
    expect(phases).toEqual([
      'ORIGIN_STALE',
      'BASELINE',
      'WARM_UP',
      'GENERATION',
      'DESTINATION_MULTI',
      'WAL_CATCH_UP',
      'COMPUTE_NOTIFY',
      'ORIGIN_SECONDARY',
      'DESTINATION_SINGLE',
    ]);
    expect(c.view()[ID]).toEqual({ '1': 'Secondary@-', '2': 'AttachedSingle@5' });
    expect(await backend.getShard(ID)).toMatchObject({ attachedNodeId: '2', secondaryNodeIds: ['1'], pendingComputeNotification: false });
  });

  it('neon:C3: a destination without a secondary gets no warm-up; one whose download never finishes is warmed until the timeout, and the cut-over carries on', async () => {
    const { c, backend, mark } = await setUp();
    c.sim(2).setDownloadRate(0);
    c.sim(2).setSecondaryProgress(ID, 10, 4 * 1024 * 1024);
    const started = c.clock.now();
    await c.drive(backend.cutOverShard(ID, { fromNodeId: '1', toNodeId: '2', warmup: { timeoutMs: 3000, requestTimeoutMs: 1000 } }));
    const downloads = c.log.find({ source: 'node 2', path: /secondary\/download$/ }).slice(0);
    // 1 s long polls, asked again at once (no sleep), until more than 3 s had passed.
    expect(downloads.map((d) => d.at - started)).toEqual([0, 1000, 2000, 3000]);
    expect(downloads.every((d) => d.query.wait_ms === '1000')).toBe(true);
    expect(calls(c, mark).at(-1)).toBe('node 2 PUT /v1/tenant/:id/location_config AttachedSingle@5');
    // A download that fails also lets the cut-over go on.
    const back = c.log.entries.length;
    c.sim(1).inject({ method: 'POST', path: /secondary\/download$/, kind: { status: 500 } });
    const result = await c.drive(backend.cutOverShard(ID, { fromNodeId: '2', toNodeId: '1' }));
    expect(result?.note).toMatch(/warm-up of node 1 stopped: pageserver 1: POST \S+ answered 500/);
    expect(calls(c, back).at(-1)).toBe('node 1 PUT /v1/tenant/:id/location_config AttachedSingle@6');
  });
});

describe('neon:C15 — a cut-over to a node that holds nothing', () => {
  it('goes straight to AttachedMulti there: no secondary built or warmed, catch-up before AttachedSingle, the hook before the origin turns Secondary', async () => {
    const { c, backend, mark } = await setUp();
    expect(c.view()[ID]).toEqual({ '1': 'AttachedSingle@4', '2': 'Secondary@-' });
    const phases: string[] = [];
    // As a migrate without prewarm moves it (neon:W3): node 3 attached, node 1 its secondary.
    await c.drive(
      backend.placement.placeShard(ID, { attachedNodeId: '3', secondaryNodeIds: ['1'] }, { onProgress: (p: CutOverProgress) => phases.push(p.phase) }),
    );
    expect(calls(c, mark)).toEqual([
      'node 1 PUT /v1/tenant/:id/location_config flush_ms=10000 AttachedStale@4',
      'node 1 GET /v1/tenant/:id/timeline',
      'node 3 PUT /v1/tenant/:id/location_config AttachedMulti@5',
      'node 3 POST /v1/tenant/:id/wait_lsn',
      'hook PUT /notify-attach nodes=3',
      'node 1 PUT /v1/tenant/:id/location_config Secondary@-',
      'node 3 PUT /v1/tenant/:id/location_config AttachedSingle@5',
      'node 2 PUT /v1/tenant/:id/location_config Detached@-',
    ]);
    expect(phases).toEqual([
      'ORIGIN_STALE',
      'BASELINE',
      'GENERATION',
      'DESTINATION_MULTI',
      'WAL_CATCH_UP',
      'COMPUTE_NOTIFY',
      'ORIGIN_SECONDARY',
      'DESTINATION_SINGLE',
    ]);
    expect(c.view()[ID]).toEqual({ '1': 'Secondary@-', '3': 'AttachedSingle@5' });
  });

  it('AttachedMulti at once, not after a warm-up; the empty node catching up slowly holds the hook and AttachedSingle until wait_lsn is satisfied', async () => {
    const { c, backend } = await setUp();
    c.sim(3).holdCatchUp(ID, 2000);
    // Nothing to download there would stall a warm-up until its timeout: there must be none.
    c.sim(3).setDownloadRate(0);
    const started = c.clock.now();
    await c.drive(backend.placement.placeShard(ID, { attachedNodeId: '3', secondaryNodeIds: ['1'] }));
    const multi = c.log.find({ source: 'node 3', method: 'PUT' }).find((e) => (e.body as { mode: string }).mode === 'AttachedMulti')!;
    const hook = c.log.find({ source: 'hook' })[0]!;
    const single = c.log.find({ source: 'node 3', method: 'PUT' }).find((e) => (e.body as { mode: string }).mode === 'AttachedSingle')!;
    expect(multi.at - started).toBe(0);
    expect(hook.at - started).toBe(2000);
    expect(single.at).toBeGreaterThanOrEqual(hook.at);
  });
});

describe('neon:scenario-2 — WAL catch-up (neon:C6)', () => {
  it('wait_lsn answers 200 once the destination caught up: no hook call and no neon:C8 before', async () => {
    const { c, backend } = await setUp();
    c.sim(2).holdCatchUp(ID, 3000);
    const started = c.clock.now();
    await c.drive(backend.cutOverShard(ID, { fromNodeId: '1', toNodeId: '2' }));
    const hook = c.log.find({ source: 'hook' })[0]!;
    const originSecondary = c.log.find({ source: 'node 1', method: 'PUT' }).find((e) => (e.body as { mode: string }).mode === 'Secondary')!;
    expect(hook.at - started).toBe(3000);
    expect(originSecondary.at).toBeGreaterThanOrEqual(hook.at);
    expect(c.log.find({ path: /\/timeline$/, source: 'node 2' })).toEqual([]);
  });

  it('after another answer to wait_lsn it polls the timelines every 500 ms until caught up; a timeline deleted on the destination does not block', async () => {
    const { c, backend } = await setUp();
    c.wal.addTimeline(ID, OTHER_TIMELINE);
    c.sim(2).dropTimeline(ID, OTHER_TIMELINE);
    c.sim(2).holdCatchUp(ID, 3000);
    c.sim(2).inject({ method: 'POST', path: /wait_lsn$/, kind: { status: 500 } });
    const started = c.clock.now();
    await c.drive(backend.cutOverShard(ID, { fromNodeId: '1', toNodeId: '2' }));
    const polls = c.log.find({ source: 'node 2', path: /\/timeline$/ }).map((e) => e.at - started);
    expect(polls).toEqual([0, 500, 1000, 1500, 2000, 2500, 3000]);
    expect(c.log.find({ source: 'hook' })[0]!.at - started).toBe(3000);
    expect(c.view()[ID]).toEqual({ '1': 'Secondary@-', '2': 'AttachedSingle@5' });
  });

  it('a transport error on wait_lsn is retried after 500 ms', async () => {
    const { c, backend } = await setUp();
    c.sim(2).inject({ method: 'POST', path: /wait_lsn$/, kind: 'timeout', times: 1 });
    const started = c.clock.now();
    await c.drive(backend.cutOverShard(ID, { fromNodeId: '1', toNodeId: '2' }));
    // The held request times out after 20 s (2 x the wait_lsn timeout), then one more after 500 ms.
    expect(c.log.find({ path: /wait_lsn$/ }).map((e) => e.at - started)).toEqual([0, 20_500]);
  });
});

describe('neon:scenario-3 — the compute notification blocks the cut-over (neon:C7)', () => {
  it('423 for 20 s: it waits between neon:C6 and neon:C8 with rounds 0, 2, 4, 8, 10 s apart, checking the origin, and completes after the first 200', async () => {
    const { c, backend } = await setUp();
    const started = c.clock.now();
    c.hook.answerWith(() => ({ status: c.clock.now() - started < 20_000 ? 423 : 200 }));
    const phases: string[] = [];
    await c.drive(backend.cutOverShard(ID, { fromNodeId: '1', toNodeId: '2', onProgress: (p) => phases.push(p.description) }));
    const rounds = c.log.find({ source: 'hook' }).map((e) => e.at - started);
    expect(rounds).toEqual([0, 0, 2000, 6000, 14_000, 24_000]);
    expect(c.hook.notifications.map((n) => n.status)).toEqual([423, 423, 423, 423, 423, 200]);
    // Between rounds: is the origin still attached? (3 retries, 5 s.)
    expect(c.log.find({ source: 'node 1', path: /^\/v1\/location_config\// })).toHaveLength(5);
    expect(phases).toContain('compute notification refused (423), retrying (node 2)');
    const c8 = c.log.find({ source: 'node 1', method: 'PUT' }).find((e) => (e.body as { mode: string }).mode === 'Secondary')!;
    expect(c8.at - started).toBe(24_000);
  });

  it('400: the cut-over fails with 1 AttachedStale and 2 AttachedMulti; the retry is a direct attach with g+2; 1 turns Secondary only in the first reconcile whose notification succeeds', async () => {
    const { c, backend } = await setUp();
    c.hook.answerWith(() => ({ status: 400 }));
    const moving = backend.cutOverShard(ID, { fromNodeId: '1', toNodeId: '2' });
    let done = false;
    void moving.then(() => (done = true));
    await c.until(() => c.hook.notifications.length === 1, { what: 'the first notification' });
    expect(c.view()[ID]).toEqual({ '1': 'AttachedStale@4', '2': 'AttachedMulti@5' });
    // The background pass (20 s) retries as a direct attach: generation 6, AttachedSingle; the notify fails again.
    await c.until(() => c.view()[ID]?.['2'] === 'AttachedSingle@6', { what: 'direct attach', maxMs: 25_000 });
    await c.drive(moving);
    expect(done).toBe(true);
    expect(c.view()[ID]).toEqual({ '1': 'AttachedStale@4', '2': 'AttachedSingle@6' });
    expect((await backend.getShard(ID))?.pendingComputeNotification).toBe(true);
    await c.advance(25_000, 500);
    expect(c.view()[ID]!['1']).toBe('AttachedStale@4');
    // The hook recovers: the next reconcile's notification succeeds, then node 1 becomes Secondary.
    c.hook.answerWith(() => ({ status: 200 }));
    await c.until(() => c.view()[ID]?.['1'] === 'Secondary@-', { what: 'node 1 Secondary', maxMs: 25_000 });
    const okAt = c.hook.notifications.find((n) => n.status === 200)!.at;
    const secondaryAt = c.log.find({ source: 'node 1', method: 'PUT' }).find((e) => (e.body as { mode: string }).mode === 'Secondary')!.at;
    expect(secondaryAt).toBeGreaterThanOrEqual(okAt);
    expect((await backend.getShard(ID))?.pendingComputeNotification).toBe(false);
    expect(c.log.find({ method: 'PUT', path: LOCATION }).filter((e) => (e.body as { mode: string }).mode === 'AttachedStale')).toHaveLength(1);
  });
});

describe('neon:scenario-4 — the origin lost during neon:C7', () => {
  it('423, then node 1 marked offline: neon:C7 stops waiting; the shard ends attached to 2 with the notification pending; a background pass clears it once the hook recovers', async () => {
    const { c, backend } = await setUp();
    c.hook.answerWith(() => ({ status: 423 }));
    const moving = backend.cutOverShard(ID, { fromNodeId: '1', toNodeId: '2' });
    await c.until(() => c.hook.notifications.length >= 2, { what: 'compute busy' });
    await backend.failover.setNodeAvailability('1', 'OFFLINE');
    await c.drive(moving);
    expect(c.view()[ID]!['2']).toMatch(/^AttachedSingle@/);
    expect((await backend.getShard(ID))?.pendingComputeNotification).toBe(true);
    const tenant = ID.slice(0, 32);
    const before = c.hook.bodiesFor(tenant).length;
    c.hook.answerWith(() => ({ status: 200 }));
    await c.until(async () => (await backend.getShard(ID))?.pendingComputeNotification === false, { what: 'the flag cleared', maxMs: 20_000 });
    // One notification, by a background pass within 20 s.
    expect(c.hook.notifications.slice(before).map((n) => n.status)).toEqual([200]);
  });
});

describe('neon:scenario-5 and neon:C10 — failures roll forward, never back', () => {
  it('node 2 answers 500 to neon:C5: no rollback; the retry sends AttachedSingle (new generation) to 2 and Secondary to 1, and no further AttachedStale', async () => {
    const { c, backend, mark } = await setUp();
    c.sim(2).inject({ method: 'PUT', path: LOCATION, kind: { status: 500 }, times: 1 });
    const result = await c.drive(backend.cutOverShard(ID, { fromNodeId: '1', toNodeId: '2' }));
    expect(result?.note).toMatch(/^rolled forward: reconcile of shard \S+ failed in DESTINATION_MULTI/);
    const log = calls(c, mark);
    expect(log.filter((l) => l.includes('AttachedStale'))).toEqual(['node 1 PUT /v1/tenant/:id/location_config flush_ms=10000 AttachedStale@4']);
    // Never back to node 1: after the failed neon:C5 (generation 5), a direct attach (6) on node 2 and node 1 Secondary.
    expect(log.filter((l) => l.includes('PUT') && !l.includes('AttachedStale'))).toEqual([
      'node 2 PUT /v1/tenant/:id/location_config AttachedMulti@5',
      'node 2 PUT /v1/tenant/:id/location_config lazy=true AttachedSingle@6',
      'hook PUT /notify-attach nodes=2',
      'node 1 PUT /v1/tenant/:id/location_config Secondary@-',
    ]);
    expect(c.view()[ID]).toEqual({ '1': 'Secondary@-', '2': 'AttachedSingle@6' });
  });

  it('a failure before the generation puts the intent back on the origin: neon:C1 uses no generation, neon:C2 leaves the origin AttachedStale until it is re-attached', async () => {
    const { c, backend } = await setUp();
    c.sim(1).inject({ method: 'PUT', path: LOCATION, kind: { status: 409 }, times: 1 });
    await expect(c.drive(backend.cutOverShard(ID, { fromNodeId: '1', toNodeId: '2' }))).rejects.toThrow(/failed in ORIGIN_STALE/);
    expect(backend.generationOf(ID)).toBe(4);
    expect(await backend.getShard(ID)).toMatchObject({ attachedNodeId: '1', secondaryNodeIds: ['2'] });
    c.sim(1).inject({ method: 'GET', path: /\/timeline$/, kind: { status: 500 }, times: 1 });
    await expect(c.drive(backend.cutOverShard(ID, { fromNodeId: '1', toNodeId: '2' }))).rejects.toThrow(/failed in BASELINE/);
    await c.until(() => c.view()[ID]?.['1'] === 'AttachedSingle@5', { what: 'origin re-attached' });
    expect(c.view()[ID]).toEqual({ '1': 'AttachedSingle@5', '2': 'Secondary@-' });
    expect(await backend.getShard(ID)).toMatchObject({ attachedNodeId: '1', secondaryNodeIds: ['2'] });
  });

  it('neon:C4: a generation that cannot be committed stops the cut-over before anything reaches the destination', async () => {
    const c: SimCluster = clusters.use(await startSimCluster({ nodes: [{ id: 1 }, { id: 2 }, { id: 3 }], shards: [SHARD] }));
    let failNext = false;
    const backend = await c.startController(
      {},
      {
        wrapStore: (store) => ({
          ...store,
          forStartUp: () => store.forStartUp(),
          nodes: () => store.nodes(),
          shards: () => store.shards(),
          createShards: (s) => store.createShards(s),
          putIntents: (i) => store.putIntents(i),
          putNode: (n) => store.putNode(n),
          removeNode: (id) => store.removeNode(id),
          removeShards: (ids) => store.removeShards(ids),
          raiseGeneration: (id, n) => store.raiseGeneration(id, n),
          reAttach: (id) => store.reAttach(id),
          getMeta: (k) => store.getMeta(k),
          setMeta: (k, v) => store.setMeta(k, v),
          incrementGeneration: async (id, node) => {
            if (failNext) {
              failNext = false;
              throw new Error('database is locked');
            }
            return store.incrementGeneration(id, node);
          },
        }),
      },
    );
    failNext = true;
    const mark = c.log.entries.length;
    await expect(c.drive(backend.cutOverShard(ID, { fromNodeId: '1', toNodeId: '2' }))).rejects.toThrow(/failed in GENERATION: database is locked/);
    expect(calls(c, mark).filter((l) => l.startsWith('node 2 PUT'))).toEqual([]);
  });
});

describe('neon:C11 — cancellation', () => {
  it("an operation's cancel stops the wait for WAL catch-up; what was issued is completed at once by a direct attach", async () => {
    const { c, backend } = await setUp();
    c.sim(2).holdCatchUp(ID, 600_000);
    const cancel = new AbortController();
    const moving = backend.cutOverShard(ID, { fromNodeId: '1', toNodeId: '2', signal: cancel.signal });
    await c.until(() => c.log.find({ path: /wait_lsn$/ }).length === 1, { what: 'waiting for catch-up' });
    const at = c.clock.now();
    cancel.abort(new Error('the drain was cancelled'));
    const result = await c.drive(moving);
    expect(result?.note).toMatch(/^rolled forward: reconcile of shard \S+ cancelled in WAL_CATCH_UP/);
    expect(c.clock.now() - at).toBeLessThan(1000);
    expect(c.view()[ID]).toEqual({ '1': 'Secondary@-', '2': 'AttachedSingle@6' });
  });

  it('cancelReconcile (neon:W6) and a newer reconcile stop the one in flight; a restart of the destination re-attaches it AttachedSingle and the cut-over completes', async () => {
    const { c, backend } = await setUp();
    c.sim(2).holdCatchUp(ID, 600_000);
    const moving = backend.cutOverShard(ID, { fromNodeId: '1', toNodeId: '2' });
    await c.until(() => c.log.find({ path: /wait_lsn$/ }).length === 1, { what: 'waiting for catch-up' });
    expect((await backend.placement.describeShard(ID))?.reconciling).toBe(true);
    expect(await c.drive(backend.placement.cancelReconcile(ID))).toBe(true);
    expect((await backend.placement.describeShard(ID))?.reconciling).toBe(false);
    expect(await backend.placement.cancelReconcile(ID)).toBe(false);
    // The destination restarts: its re-attach gets generation 6 AttachedSingle (it holds the shard's generation).
    await c.drive(c.sim(2).restart());
    expect(c.view()[ID]!['2']).toBe('AttachedSingle@6');
    await c.drive(moving);
    await c.until(() => c.view()[ID]?.['1'] === 'Secondary@-', { what: 'origin Secondary', maxMs: 30_000 });
    expect(c.view()[ID]).toEqual({ '1': 'Secondary@-', '2': 'AttachedSingle@6' });
  });
});

/**
 * The controller dies mid-cut-over (issue 11 point 7: a generation is never issued twice,
 * not after power loss). `close()` drops the connections first, so the old controller sends
 * nothing more — as after kill -9. The crash campaign (issue 16) covers every instant; this
 * checks the two windows where a cut-over waits: after neon:C4/C5 in neon:C6, and in neon:C7.
 */
describe('neon:C4 and neon:C10 — a controller that dies mid-cut-over', () => {
  for (const window of ['WAL_CATCH_UP', 'COMPUTE_NOTIFY'] as const) {
    it(`killed in ${window}: the next controller finds generation 5 persisted, rolls forward with generation 6, never 5 again, and the shard stays attached throughout`, async () => {
      const { c } = await setUp();
      if (window === 'WAL_CATCH_UP') c.sim(2).holdCatchUp(ID, 600_000);
      else c.hook.answerWith(() => ({ status: 423 }));
      const moving = c.controller!.cutOverShard(ID, { fromNodeId: '1', toNodeId: '2' });
      moving.catch(() => {});
      await c.until(() => (window === 'WAL_CATCH_UP' ? c.log.find({ path: /wait_lsn$/ }).length === 1 : c.hook.notifications.length >= 2), {
        what: window,
      });
      expect(c.view()[ID]).toEqual({ '1': 'AttachedStale@4', '2': 'AttachedMulti@5' });
      await c.controller!.close();
      const sentAfterDeath = c.log.entries.length;
      await c.advance(1000);
      expect(c.log.entries.slice(sentAfterDeath).filter((e) => e.source !== 'hook')).toEqual([]);
      c.hook.answerWith(() => ({ status: 200 }));
      const again = await c.startController();
      // The intent (node 2) and generation 5 came from the database; the direct attach takes 6.
      await c.until(() => c.view()[ID]?.['2'] === 'AttachedSingle@6' && c.view()[ID]?.['1'] === 'Secondary@-', { what: 'rolled forward', maxMs: 120_000 });
      expect(await again.getShard(ID)).toMatchObject({ attachedNodeId: '2', secondaryNodeIds: ['1'], pendingComputeNotification: false });
      const attachGenerations = c.log
        .find({ method: 'PUT', path: LOCATION })
        .map((e) => e.body as { mode: string; generation: number | null })
        .filter((b) => b.mode === 'AttachedMulti' || b.mode === 'AttachedSingle')
        .map((b) => b.generation);
      expect(attachGenerations).toEqual([5, 6]);
      expect(c.hook.bodiesFor(ID.slice(0, 32)).at(-1)).toMatchObject({ shards: [{ node_id: 2, shard_number: 0 }] });
    });
  }

  it('found with node 2 AttachedMulti at a newer generation while node 1 is still AttachedSingle: the direct attach makes node 1 AttachedStale first (neon:C1), never two AttachedSingle at once', async () => {
    // What a cut-over left that never staled its origin (the campaign met it after kills): adopted
    // at start-up, node 2 holds the newest generation and wins.
    const c: SimCluster = clusters.use(await startSimCluster({ nodes: [{ id: 1 }, { id: 2 }, { id: 3 }], shards: [SHARD] }));
    c.sim(2).seed(ID, { mode: 'AttachedMulti', generation: 5 });
    const mark = c.log.entries.length;
    await c.startController();
    await c.until(() => c.view()[ID]?.['2'] === 'AttachedSingle@6' && c.view()[ID]?.['1'] === undefined, { what: 'attached to node 2', maxMs: 120_000 });
    const puts = calls(c, mark).filter((line) => / PUT .*location_config/.test(line));
    expect(puts).toEqual([
      'node 1 PUT /v1/tenant/:id/location_config flush_ms=10000 AttachedStale@4',
      'node 2 PUT /v1/tenant/:id/location_config lazy=true AttachedSingle@6',
      'node 1 PUT /v1/tenant/:id/location_config Detached@-',
    ]);
    expect(c.safety.violations).toEqual([]);
  });

  it('neon:H4: the reconciles a heartbeat round starts wait until every node of the round is activated: node 1, activated late, is made AttachedStale, not overlooked as OFFLINE', async () => {
    const c: SimCluster = clusters.use(await startSimCluster({ nodes: [{ id: 1 }, { id: 2 }, { id: 3 }], shards: [SHARD] }));
    c.sim(2).seed(ID, { mode: 'AttachedMulti', generation: 5 });
    // Start-up discovery reads node 1; its activation's listing fails once and is retried, so node 2 is ACTIVE first.
    c.sim(1).inject({ method: 'GET', path: /^\/v1\/location_config$/, kind: { status: 503 }, skip: 1, times: 1 });
    const mark = c.log.entries.length;
    await c.startController();
    await c.until(() => c.view()[ID]?.['2'] === 'AttachedSingle@6' && c.view()[ID]?.['1'] === undefined, { what: 'attached to node 2', maxMs: 120_000 });
    const puts = calls(c, mark).filter((line) => / PUT .*location_config/.test(line));
    expect(puts[0]).toBe('node 1 PUT /v1/tenant/:id/location_config flush_ms=10000 AttachedStale@4');
    expect(c.safety.violations).toEqual([]);
  });
});
