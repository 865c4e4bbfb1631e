import { afterEach, describe, expect, it } from 'vitest';
import { formatShardId, tenantIdOf, type SimShardSpec } from '../../simulators/pageserver/index.ts';
import { closeAfterEach, startSimCluster, type SimCluster } from '../support/pageserver-cluster.ts';
import { constantSampler, rehearsePageservers, type RehearsedPageservers } from '../support/rehearsal-pageservers.ts';

/**
 * Issue 33: a live pageserver fleet read through the real plugin's `snapshot()`, loaded by
 * rehearsal/loaders/pageserver.ts into a fresh fleet on a virtual clock, and a fresh plugin
 * over it sees the same cluster: shards attached where they were with the same generations,
 * secondaries, policies, preferred zones and tenant configs, and nothing to correct.
 */

const { use } = closeAfterEach(afterEach);
let rehearsed: RehearsedPageservers | undefined;
afterEach(async () => {
  await rehearsed?.close();
  rehearsed = undefined;
});

const SECRETS = { authToken: 'ps-live-secret-1', upcall: 'upcall-live-secret-2', hook: 'hook-live-secret-3' };
const NODES = [
  { id: 1, zone: 'az-a' },
  { id: 2, zone: 'az-a' },
  { id: 3, zone: 'az-b' },
  { id: 4, zone: 'az-b' },
];
const shardId = (tenant: number, n: number) => formatShardId(tenantIdOf(tenant), n, 3);
const SECOND_TIMELINE = 'c'.repeat(32);

/** 10 tenants × 3 shards round-robin over 4 nodes; shards 0 and 1 of each tenant have a secondary in the other zone, shard 2 none. */
function shards(): SimShardSpec[] {
  const out: SimShardSpec[] = [];
  let k = 0;
  for (let tenant = 1; tenant <= 10; tenant++) {
    for (let n = 0; n < 3; n++, k++) {
      const attached = (k % 4) + 1;
      const other = attached <= 2 ? 3 + (k % 2) : 1 + (k % 2);
      out.push({ tenant, shardNumber: n, shardCount: 3, attached, secondaries: n === 2 ? [] : [other] });
    }
  }
  return out;
}

/** The live world: the plugin with tokens everywhere, a few changes of intent beyond what discovery gives, a cut-over and a cordon. */
async function liveWorld(): Promise<{ c: SimCluster; liveOptions: Record<string, unknown> }> {
  const c = use(await startSimCluster({ nodes: NODES, shards: shards(), hookToken: SECRETS.hook }));
  const extra = { authToken: SECRETS.authToken, upcall: { host: '127.0.0.1', port: 0, token: SECRETS.upcall }, heartbeatIntervalMs: 7000 };
  const live = await c.startController(extra);
  const placement = live.placement!;
  await placement.setShardPolicy(shardId(2, 0), { policy: 'PAUSE' });
  await placement.setPreferredZone(shardId(4, 1), 'az-b');
  // The intent keeps no heatmap_period; its locations with secondaries get Neon's 60 s (neon:W11), which discovery alone would take for the intent.
  await c.drive(placement.setTenantConfig!(tenantIdOf(3), { pitr_interval: '2days' }));
  // Shard 0 of tenant 1 is on node 1 with its secondary on node 3: cut over (generation 2).
  await c.drive(live.cutOverShard(shardId(1, 0), { fromNodeId: '1', toNodeId: '3' }));
  await live.cordonNode('4');
  c.wal.addTimeline(shardId(5, 0), SECOND_TIMELINE);
  c.wal.ingest(shardId(5, 0), 123_456);
  await c.idle();
  const liveOptions = {
    ...extra,
    pageservers: NODES.map((n) => ({ id: n.id, url: c.sim(n.id).url, availabilityZone: n.zone, ...(n.id === 2 && { kubernetesNode: 'host-b' }) })),
    controlPlane: { url: c.hook.url, token: SECRETS.hook },
  };
  return { c, liveOptions };
}

describe('issue 33: a pageserver snapshot loaded into a rehearsal fleet', { timeout: 120_000 }, () => {
  it('a plugin over the loaded fleet lists the same shards attached where they were, with the same generations, policies and configs', async () => {
    const { c, liveOptions } = await liveWorld();
    const live = c.controller!;
    const [snapshot] = await c.drive(live.snapshot());
    // Through JSON, as it crosses to the worker thread.
    const copy = JSON.parse(JSON.stringify(snapshot));
    rehearsed = await rehearsePageservers(copy, liveOptions, constantSampler(0));
    const r = rehearsed;
    await r.idle();

    expect(r.controller.discoveryReport).toMatchObject({ adopted: [], extraAttachments: [], missing: [], unattached: [], unreachable: [] });
    const liveShards = await live.listShards();
    expect(liveShards).toHaveLength(30);
    expect(await r.controller.listShards()).toEqual(liveShards);
    for (const s of liveShards) {
      expect(r.controller.generationOf(s.id), s.id).toBe(live.generationOf(s.id));
      expect((await r.controller.placement!.describeShard!(s.id))?.secondaryCount, s.id).toBe((await live.placement!.describeShard!(s.id))?.secondaryCount);
    }
    // The changes of intent the live controller made, as literals.
    const byId = new Map((await r.controller.listShards()).map((s) => [s.id, s]));
    expect(byId.get(shardId(1, 0))).toMatchObject({ attachedNodeId: '3', secondaryNodeIds: ['1'] });
    expect(r.controller.generationOf(shardId(1, 0))).toBe(2);
    expect(byId.get(shardId(2, 0))?.policy).toBe('PAUSE');
    expect(byId.get(shardId(4, 1))?.preferredZone).toBe('az-b');
    expect(await r.controller.placement!.getTenantConfig!(tenantIdOf(3))).toEqual({ pitr_interval: '2days' });
    expect(c.sim(3).tenantConf(shardId(3, 0))).toEqual({ heatmap_period: '1m', pitr_interval: '2days' });
    expect(await r.controller.placement!.getTenantConfig!(tenantIdOf(1))).toEqual({ heatmap_period: '1m' });
    const nodesOf = async (b: typeof live) =>
      (await b.listNodes()).map(({ id, zone, name, cordoned, availability }) => ({ id, zone, name, cordoned, availability }));
    expect(await nodesOf(r.controller)).toEqual(await nodesOf(live));
    expect((await r.controller.getNode('4'))?.cordoned).toBe(true);
    expect(r.controller.hosts()).toEqual({ '2': 'host-b' });

    // The pageservers hold what the live ones held: modes, generations, timelines and LSNs.
    expect(r.loaded.fleet.view()).toEqual(c.view());
    for (const s of liveShards)
      for (const n of [s.attachedNodeId, ...s.secondaryNodeIds])
        expect(r.loaded.fleet.sim(n).tenantConf(s.id), `${s.id} on ${n}`).toEqual(c.sim(n).tenantConf(s.id));
    expect(r.loaded.fleet.sim(1).lsns(shardId(5, 0))).toEqual(c.sim(1).lsns(shardId(5, 0)));
    expect(Object.keys(r.loaded.fleet.sim(1).lsns(shardId(5, 0))!)).toContain(SECOND_TIMELINE);

    // Nothing to correct: from its start and through a minute of heartbeats and background passes, the plugin changes nothing.
    for (let i = 0; i < 60; i++) {
      await r.idle();
      await r.clock.advance(1000);
    }
    await r.idle();
    expect(r.loaded.fleet.log.entries.filter((e) => e.method !== 'GET')).toEqual([]);
  });

  it('the snapshot holds no token and no address; the loaded options replace every one and keep the live timings', async () => {
    const { c, liveOptions } = await liveWorld();
    const [snapshot] = await c.drive(c.controller!.snapshot());
    const text = JSON.stringify(snapshot);
    for (const secret of Object.values(SECRETS)) expect(text).not.toContain(secret);
    expect(text).not.toContain('127.0.0.1');
    expect(snapshot).toMatchObject({ plugin: 'pageserver', takenAt: c.clock.now() });
    expect((snapshot!.data as { computeHook: unknown }).computeHook).toMatchObject({ configured: true, tokenRequired: true });

    rehearsed = await rehearsePageservers(JSON.parse(text), liveOptions, constantSampler(0));
    const options = rehearsed.loaded.options;
    const optionsText = JSON.stringify(options);
    for (const secret of Object.values(SECRETS)) expect(optionsText).not.toContain(secret);
    for (const n of NODES) expect(optionsText).not.toContain(c.sim(n.id).url);
    expect(optionsText).not.toContain(c.hook.url);
    expect(options.heartbeatIntervalMs).toBe(7000);
    expect(options.authToken).toBeUndefined();
    // Every address in the options is one the loader listens on.
    const addresses = [...optionsText.matchAll(/https?:\/\/[^"]+/g)].map((m) => m[0]);
    expect(addresses.length).toBeGreaterThan(4);
    for (const a of addresses) expect(rehearsed.loaded.urls).toContain(a);
    expect(rehearsed.loaded.urls).toContain(`http://127.0.0.1:${options.upcall!.port}`);
    // The live simulators heard nothing from the rehearsal.
    const liveRequests = c.log.entries.length;
    await rehearsed.idle();
    await rehearsed.clock.advance(10_000);
    await rehearsed.idle();
    expect(c.log.entries.length).toBe(liveRequests);
  });
});
