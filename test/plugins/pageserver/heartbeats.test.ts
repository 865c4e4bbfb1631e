import { afterEach, describe, expect, it } from 'vitest';
import type { ClusterEvent } from '../../../src/cluster/types.ts';
import { heartbeatVerdict, type HeartbeatState } from '../../../plugins/pageserver/heartbeater.ts';
import { neonBackoffMs, notifyRoundBackoffMs } from '../../../plugins/pageserver/neon-retry.ts';
import { shardIdOf, type SimShardSpec } from '../../../simulators/pageserver/index.ts';
import { closeAfterEach, startSimCluster, type SimCluster } from '../../support/pageserver-cluster.ts';

/** neon:H1–H4, neon:H6–H8 at the plugin: heartbeat rounds, offline by elapsed time, activation. */

const clusters = closeAfterEach(afterEach);
const LIMITS = { maxOfflineIntervalMs: 30_000, maxWarmingUpIntervalMs: 300_000 };
const A: SimShardSpec = { tenant: 1, attached: 1, secondaries: [2] };

async function setUp(shards: SimShardSpec[] = [A]) {
  const c: SimCluster = clusters.use(await startSimCluster({ nodes: [{ id: 1 }, { id: 2 }, { id: 3 }], shards }));
  const backend = await c.startController();
  const events: ClusterEvent[] = [];
  backend.watch((e) => events.push(e));
  const availability = async (id: string) => (await backend.getNode(id))?.availability;
  return { c, backend, events, availability };
}

describe('neon:H2–H3 — the verdict of a round, by elapsed time only', () => {
  const active = (lastOkAt: number): HeartbeatState => ({ availability: 'ACTIVE', lastOkAt, warmingSince: null });
  it('a good round makes any node available; a failing ACTIVE node is OFFLINE only once 30 s passed since its last success', () => {
    expect(heartbeatVerdict({ availability: 'OFFLINE', lastOkAt: null, warmingSince: null }, true, 0, LIMITS)).toBe('available');
    expect(heartbeatVerdict(active(0), false, 29_999, LIMITS)).toBe('unchanged');
    expect(heartbeatVerdict(active(0), false, 30_000, LIMITS)).toBe('offline');
    // Misses are not counted: many failures inside the interval change nothing.
    for (let t = 1000; t < 30_000; t += 1000) expect(heartbeatVerdict(active(0), false, t, LIMITS)).toBe('unchanged');
  });

  it('a WARMING_UP node that keeps failing is OFFLINE after 300 s since it entered WARMING_UP; an OFFLINE one stays OFFLINE', () => {
    const warming: HeartbeatState = { availability: 'WARMING_UP', lastOkAt: 0, warmingSince: 10_000 };
    expect(heartbeatVerdict(warming, false, 10_000 + 299_999, LIMITS)).toBe('unchanged');
    expect(heartbeatVerdict(warming, false, 10_000 + 300_000, LIMITS)).toBe('offline');
    expect(heartbeatVerdict({ availability: 'OFFLINE', lastOkAt: 0, warmingSince: null }, false, 1e9, LIMITS)).toBe('unchanged');
  });

  it("Neon's backoffs: the retry wrapper sleeps 0, then min(1.1^(k-1), 3) s; the notify rounds of neon:C7 0, 2, 4, 8, then 10 s", () => {
    expect([1, 2, 3, 4, 10, 20].map(neonBackoffMs)).toEqual([0, 1100, 1210, 1331, 2358, 3000]);
    expect([0, 1, 2, 3, 4, 5, 9].map(notifyRoundBackoffMs)).toEqual([0, 2000, 4000, 8000, 10_000, 10_000, 10_000]);
  });
});

describe('neon:H1 — heartbeat rounds', () => {
  it('every 5 s one round asks every node, the offline ones too; a dead node costs 4 attempts of 1 s (about 6.3 s), and the next round waits for it', async () => {
    const { c, availability } = await setUp();
    c.sim(3).stopAnswering();
    const started = c.clock.now();
    await c.advance(30_000, 100);
    const times = (node: string) =>
      c.log
        .find({ source: `node ${node}`, path: /^\/v1\/utilization$/ })
        .map((e) => e.at - started)
        .filter((t) => t >= 0);
    // Node 3: attempts at 0, 1, 3.1, 5.31 s of each round (retry wrapper: 3 retries, 1 s each).
    const all = times('3');
    // The first full round of the dead node: four attempts, then the next round's.
    const first = all.findIndex((t, i) => all[i + 1]! - t === 1000);
    const dead = all.slice(first);
    expect(dead.slice(0, 4).map((t) => t - dead[0]!)).toEqual([0, 1000, 3100, 5310]);
    // The next round starts when the slow one ended (6.31 s > 5 s); node 1 is asked then too.
    const live = times('1').filter((t) => t >= dead[0]!);
    expect(live[1]! - live[0]!).toBeGreaterThanOrEqual(6300);
    expect(live[1]! - live[0]!).toBeLessThan(6500);
    // Rounds never overlap: no attempt of a round before the previous one's last.
    expect(dead[4]! - dead[3]!).toBeGreaterThanOrEqual(1000);
    // The offline node is asked every round.
    await c.until(async () => (await availability('3')) === 'OFFLINE', { what: 'node 3 OFFLINE' });
    const before = times('3').length;
    await c.advance(10_000, 100);
    expect(times('3').length).toBeGreaterThan(before);
  });
});

describe('neon:H3 — offline by elapsed time', () => {
  it('neon:scenario-6 timing: a node that stops answering stays ACTIVE until 30 s after its last good heartbeat and is OFFLINE by 37 s', async () => {
    const { c, availability } = await setUp();
    // Right after a good round.
    await c.until(() => c.log.find({ source: 'node 1', path: /^\/v1\/utilization$/ }).length > 0);
    const lastGood = c.log.find({ source: 'node 1', path: /^\/v1\/utilization$/ }).at(-1)!.at;
    c.sim(1).stopAnswering();
    await c.until(() => c.clock.now() - lastGood >= 29_900, { stepMs: 100 });
    expect(await availability('1')).toBe('ACTIVE');
    await c.until(async () => (await availability('1')) === 'OFFLINE', { what: 'OFFLINE', maxMs: 10_000 });
    const offlineAt = c.clock.now() - lastGood;
    expect(offlineAt).toBeGreaterThanOrEqual(30_000);
    expect(offlineAt).toBeLessThanOrEqual(37_000);
  });

  it('a flap shorter than the offline interval moves nothing and emits nothing', async () => {
    const { c, events, availability } = await setUp();
    c.sim(1).stopAnswering();
    await c.advance(20_000, 200);
    c.sim(1).resume();
    await c.advance(10_000, 200);
    expect(await availability('1')).toBe('ACTIVE');
    expect(events.filter((e) => e.type === 'nodeChanged')).toEqual([]);
  });

  it('neon:scenario-8: a restart within 30 s is WARMING_UP, then ACTIVE on its first heartbeat; a WARMING_UP node that never answers is OFFLINE after 300 s', async () => {
    const { c, availability, events } = await setUp();
    await c.drive(c.sim(1).restart({ downMs: 10_000 }));
    await c.until(async () => (await availability('1')) === 'ACTIVE', { what: 'ACTIVE', maxMs: 10_000 });
    expect(events.filter((e) => e.type === 'nodeChanged').map((e) => e.type === 'nodeChanged' && e.node.availability)).toEqual(['WARMING_UP', 'ACTIVE']);
    // Restarted and silent: WARMING_UP for 300 s (not 30), then OFFLINE.
    await c.drive(c.sim(2).restart());
    c.sim(2).stopAnswering();
    const since = c.clock.now();
    await c.advance(290_000, 1000);
    expect(await availability('2')).toBe('WARMING_UP');
    await c.until(async () => (await availability('2')) === 'OFFLINE', { what: 'OFFLINE', maxMs: 20_000, stepMs: 500 });
    expect(c.clock.now() - since).toBeGreaterThanOrEqual(300_000);
  });
});

describe('neon:H4 — becoming ACTIVE', () => {
  it("the node's locations are listed first: a failed listing keeps it OFFLINE; locations of unknown shards are detached; then its unknown locations are reconciled", async () => {
    const { c, backend, availability } = await setUp();
    c.sim(3).stopAnswering();
    await c.until(async () => (await availability('3')) === 'OFFLINE', { what: 'OFFLINE' });
    // While it is away, node 3 gets a shard nobody knows and loses nothing else.
    c.sim(3).seed('f'.repeat(32), { mode: 'AttachedSingle', generation: 3 });
    c.sim(3).resume();
    c.sim(3).inject({ method: 'GET', path: /^\/v1\/location_config$/, kind: { status: 500 } });
    await c.advance(20_000, 200);
    expect(await availability('3')).toBe('OFFLINE');
    c.sim(3).clearFaults();
    await c.until(async () => (await availability('3')) === 'ACTIVE', { what: 'ACTIVE' });
    expect(c.sim(3).location('f'.repeat(32))).toBeNull();
    expect(backend.discoveryReport.adopted).not.toContain('f'.repeat(32));
    // Detaching a shard this controller does not know is the point here, not a lost shard.
    expect(c.safety.violations.splice(0)).toEqual([`shard ${'f'.repeat(32)}: no attached location left ({})`]);
  });

  it('neon:E6: an operator ACTIVE runs the same activation; one that cannot list the locations is refused', async () => {
    const { c, backend, availability } = await setUp();
    await backend.failover.setNodeAvailability('2', 'OFFLINE');
    expect(await availability('2')).toBe('OFFLINE');
    c.sim(2).inject({ method: 'GET', path: /^\/v1\/location_config$/, kind: { status: 500 } });
    await expect(c.drive(backend.failover.setNodeAvailability('2', 'ACTIVE'))).rejects.toThrow(/could not be activated/);
    c.sim(2).clearFaults();
    await c.drive(backend.failover.setNodeAvailability('2', 'ACTIVE'));
    expect(await availability('2')).toBe('ACTIVE');
    await backend.failover.setNodeAvailability('2', 'WARMING_UP');
    expect(await availability('2')).toBe('WARMING_UP');
  });

  it('neon:H7: a partition that heals brings the node back ACTIVE; its stale AttachedSingle becomes Secondary; nothing moves back', async () => {
    const { c, backend, availability } = await setUp();
    const id = shardIdOf(A);
    c.sim(1).stopAnswering();
    await c.until(async () => (await availability('1')) === 'OFFLINE', { what: 'OFFLINE' });
    await c.drive(backend.failover.failOverShard(id, { fromNodeId: '1', toNodeId: '2' }));
    expect(c.view()[id]).toEqual({ '1': 'AttachedSingle@1', '2': 'AttachedSingle@2' });
    c.sim(1).resume();
    await c.until(async () => (await availability('1')) === 'ACTIVE', { what: 'ACTIVE' });
    await c.until(() => c.view()[id]?.['1'] === 'Secondary@-', { what: 'node 1 demoted' });
    expect(c.view()[id]).toEqual({ '1': 'Secondary@-', '2': 'AttachedSingle@2' });
    expect(await backend.getShard(id)).toMatchObject({ attachedNodeId: '2', secondaryNodeIds: ['1'] });
  });

  it('neon:H4: after a controller restart every node is OFFLINE until its first good heartbeat', async () => {
    const { c } = await setUp();
    await c.controller!.close();
    c.sim(2).stopAnswering();
    const again = await c.startController();
    expect((await again.listNodes()).map((n) => [n.id, n.availability])).toEqual([
      ['1', 'ACTIVE'],
      ['2', 'OFFLINE'],
      ['3', 'ACTIVE'],
    ]);
    c.sim(2).resume();
  });
});
