/**
 * ha:L8 at the pageserver plugin: its background work — heartbeats, background reconciles,
 * compute notifications, upcalls that issue generations — runs only while the gateway says
 * this replica leads; a stand-by answers upcalls 503. Heartbeat state is persisted, so a
 * node that died together with the old leader still goes OFFLINE (and fails over) under the
 * new one. All on the virtual clock: waits are for states, never for real time.
 */
import { afterEach, expect, it } from 'vitest';
import type { ClusterEvent } from '../../../src/cluster/types.ts';
import type { SimShardSpec } from '../../../simulators/pageserver/index.ts';
import { calls, closeAfterEach, startSimCluster } from '../../support/pageserver-cluster.ts';

const clusters = closeAfterEach(afterEach);
const SHARDS: SimShardSpec[] = [
  { tenant: 1, attached: 1, secondaries: [2] },
  { tenant: 2, attached: 2, secondaries: [1] },
];

async function upcall(url: string, path: 're-attach' | 'validate', body: unknown) {
  const res = await fetch(`${url}/upcall/v1/${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as { msg?: string } };
}

it('ha:L8: a stand-by sends no heartbeat, reconcile or notification and answers upcalls 503; once it leads, it heartbeats and answers them', async () => {
  const c = clusters.use(await startSimCluster({ nodes: [{ id: 1 }, { id: 2 }], shards: SHARDS }));
  let leads = false;
  const backend = await c.startController({}, { mayAct: () => leads });
  const from = c.log.entries.length;
  const generationsAtStart = (await backend.listShards()).map((s) => backend.generationOf(s.id));
  await c.advance(30_000, 500);
  backend.reconcileInBackground();
  await c.advance(5_000, 500);
  // Nothing at all after start-up's discovery: no heartbeat, no location call, no notification.
  expect(c.log.entries.slice(from).map((e) => `${e.source} ${e.method} ${e.path}`)).toEqual([]);
  expect((await backend.listNodes()).map((n) => n.availability)).toEqual(['OFFLINE', 'OFFLINE']);
  const reAttach = await upcall(backend.upcallUrl, 're-attach', { node_id: 1 });
  expect(reAttach.status).toBe(503);
  expect(reAttach.body.msg).toMatch(/stand-by/);
  expect((await upcall(backend.upcallUrl, 'validate', { tenants: [] })).status).toBe(503);
  // The upcall issued no generation.
  expect((await backend.listShards()).map((s) => backend.generationOf(s.id))).toEqual(generationsAtStart);

  leads = true;
  await c.until(async () => (await backend.listNodes()).every((n) => n.availability === 'ACTIVE'), { what: 'both nodes ACTIVE under the leader' });
  expect(c.log.find({ path: /^\/v1\/utilization$/ }).length).toBeGreaterThan(0);
  expect((await upcall(backend.upcallUrl, 'validate', { tenants: [] })).status).toBe(200);
  // Losing the lead stops the heartbeats again.
  leads = false;
  await c.advance(6_000, 500);
  const after = c.log.entries.length;
  await c.advance(30_000, 500);
  expect(calls(c, after)).toEqual([]);
  expect(c.log.entries.slice(after).filter((e) => e.path === '/v1/utilization')).toEqual([]);
});

it('ha:L8: a node that died together with the old leader goes OFFLINE under the new one, from the persisted last heartbeat, and is declared lost', async () => {
  const c = clusters.use(await startSimCluster({ nodes: [{ id: 1 }, { id: 2 }], shards: SHARDS }));
  const old = await c.startController({}, { mayAct: () => true });
  await c.until(async () => (await old.listNodes()).every((n) => n.availability === 'ACTIVE'), { what: 'both nodes ACTIVE under the old leader' });
  // The old leader and pageserver 1 die together.
  await old.close();
  c.sim(1).stopAnswering();
  let leads = false;
  const next = await c.startController({}, { mayAct: () => leads });
  const events: ClusterEvent[] = [];
  next.watch((e) => events.push(e));
  leads = true;
  await c.until(async () => events.some((e) => e.type === 'nodeLost' && e.nodeId === '1'), { what: 'node 1 lost under the new leader', maxMs: 120_000 });
  expect((await next.getNode('1'))?.availability).toBe('OFFLINE');
  expect((await next.getNode('2'))?.availability).toBe('ACTIVE');
  expect(events.filter((e) => e.type === 'nodeLost').map((e) => (e as { nodeId: string }).nodeId)).toEqual(['1']);
});

it('ha:L8, neon:H4: a replica that begins to lead heartbeats at once, not at its next tick: its nodes are ACTIVE before any virtual time passes', async () => {
  const c = clusters.use(await startSimCluster({ nodes: [{ id: 1 }, { id: 2 }], shards: SHARDS }));
  let leads = false;
  const backend = await c.startController({ heartbeatIntervalMs: 60_000 }, { mayAct: () => leads });
  await c.advance(1_000, 500);
  expect((await backend.listNodes()).map((n) => n.availability)).toEqual(['OFFLINE', 'OFFLINE']);
  const from = c.log.entries.length;
  leads = true;
  await backend.beforeLeading();
  await c.idle();
  expect(c.log.entries.slice(from).filter((e) => e.path === '/v1/utilization')).toHaveLength(2);
  expect((await backend.listNodes()).map((n) => n.availability)).toEqual(['ACTIVE', 'ACTIVE']);
});

it('ha:L8, neon:H5: a node already OFFLINE when a replica begins to lead, silent in its first round and holding attached shards, is lost again; one holding none is not; a listener that watches later still hears it', async () => {
  const c = clusters.use(await startSimCluster({ nodes: [{ id: 1 }, { id: 2 }, { id: 3 }], shards: SHARDS }));
  const old = await c.startController({}, { mayAct: () => true });
  await c.until(async () => (await old.listNodes()).every((n) => n.availability === 'ACTIVE'), { what: 'every node ACTIVE under the old leader' });
  // Pageservers 1 and 3 die; the old leader declares them OFFLINE (persisted), then dies before any failover was admitted.
  c.sim(1).stopAnswering();
  c.sim(3).stopAnswering();
  await c.until(async () => (await old.listNodes()).filter((n) => n.availability === 'OFFLINE').length === 2, {
    what: 'nodes 1 and 3 OFFLINE under the old leader',
    maxMs: 120_000,
  });
  await old.close();
  let leads = false;
  const next = await c.startController({}, { mayAct: () => leads });
  // As a stand-by it follows what the old leader persisted (ha:R1).
  expect((await next.listNodes()).map((n) => n.availability)).toEqual(['OFFLINE', 'ACTIVE', 'OFFLINE']);
  // A listener that does not act on what it hears (it returns no promise), as the gateway's while it does not lead.
  const early: ClusterEvent[] = [];
  next.watch((e) => void early.push(e));
  leads = true;
  await next.beforeLeading();
  await c.until(async () => early.some((e) => e.type === 'nodeLost'), { what: 'a node lost under the new leader', maxMs: 120_000 });
  const lost = (events: ClusterEvent[]) => events.filter((e) => e.type === 'nodeLost').map((e) => (e as { nodeId: string }).nodeId);
  expect(lost(early)).toEqual(['1']);
  expect((await next.getNode('3'))?.availability).toBe('OFFLINE');
  // The gateway's operations watch only after beforeLeading(): nobody acted on the loss yet, so they hear it too.
  const late: ClusterEvent[] = [];
  next.watch((e) => void late.push(e));
  await c.until(async () => late.length > 0, { what: 'the loss told to a later listener' });
  expect(lost(late)).toEqual(['1']);
});
