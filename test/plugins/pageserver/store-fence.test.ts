/**
 * ha:L3 at the pageserver plugin (issue 13): its store is fenced by the leader's epoch. Its
 * start-up writes (seed nodes, discovery) go through the unfenced start-up store, so a
 * replica starts whether or not it leads; afterwards a stand-by's registration is refused
 * with a typed Unavailable error and stores nothing, and a deposed leader's re-attach upcall
 * issues no generation (503, the pageserver retries) and the replica stands by. The plugin's
 * intent is on a real PostgreSQL here (the lease row is there); its clock is virtual.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { isBackendError } from '../../../src/cluster/errors.ts';
import { PluginStoreFencedError } from '../../../src/cluster/plugin-store.ts';
import type { NodeRegistration } from '../../../src/cluster/shard-control.ts';
import type { SimShardSpec } from '../../../simulators/pageserver/index.ts';
import { closeAfterEach, startSimCluster } from '../../support/pageserver-cluster.ts';
import { fencedStoreWorlds } from '../../support/fenced-plugin-store.ts';
import { postgresSkipReason } from '../../support/test-database.ts';

const skip = postgresSkipReason();
const clusters = closeAfterEach(afterEach);
const worlds = fencedStoreWorlds(afterEach);

const SHARDS: SimShardSpec[] = [
  { tenant: 1, attached: 1, secondaries: [2] },
  { tenant: 2, attached: 2, secondaries: [1] },
];

const registration = (nodeId: string): NodeRegistration => ({
  nodeId,
  listenHttpAddr: '127.0.0.1',
  listenHttpPort: 9,
  listenHttpsPort: null,
  listenPgAddr: '127.0.0.1',
  listenPgPort: 6400,
  listenGrpcAddr: null,
  listenGrpcPort: null,
  availabilityZone: 'az-a',
});

describe.skipIf(skip)(skip ?? 'the pageserver plugin on a fenced store (PostgreSQL)', () => {
  it('ha:L3: a stand-by starts (seed and discovery through the start-up store), and its registration of a node is refused, typed, storing nothing', async () => {
    const c = clusters.use(await startSimCluster({ nodes: [{ id: 1 }, { id: 2 }], shards: SHARDS }));
    const { leadership, store } = (await worlds.open()).replica();
    const backend = await c.startController({}, { wrapStore: () => store, mayAct: () => leadership.canAct() });
    // Start-up wrote the seed nodes and adopted the shards found on the pageservers.
    expect((await store.nodes()).map((n) => n.id)).toEqual(['1', '2']);
    expect((await store.shards()).length).toBe(2);
    const error = await backend.registry.register(registration('7')).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(PluginStoreFencedError);
    expect(isBackendError(error, 'Unavailable')).toBe(true);
    expect(backend.registry.registration('7')).toBeNull();
    expect((await store.nodes()).map((n) => n.id)).toEqual(['1', '2']);
  });

  it('ha:L3, ha:L8: a deposed leader answers a re-attach upcall 503 without issuing a generation, and stands by', async () => {
    const c = clusters.use(await startSimCluster({ nodes: [{ id: 1 }, { id: 2 }], shards: SHARDS }));
    const world = await worlds.open();
    const { leadership, store } = world.replica();
    const backend = await c.startController({}, { wrapStore: () => store, mayAct: () => leadership.canAct() });
    await leadership.start();
    expect(leadership.status().role).toBe('leader');
    await c.until(async () => (await backend.listNodes()).every((n) => n.availability === 'ACTIVE'), { what: 'both nodes ACTIVE under the leader' });
    const generations = (await store.shards()).map((s) => [s.id, s.generation, s.generationNodeId]);
    // Another replica takes the lease over; this process still believes it leads.
    await world.takeOver();
    expect(leadership.canAct()).toBe(true);
    const res = await fetch(`${backend.upcallUrl}/upcall/v1/re-attach`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ node_id: 1 }),
    });
    expect(res.status).toBe(503);
    expect(((await res.json()) as { msg: string }).msg).toMatch(/refused by the fence/);
    expect((await store.shards()).map((s) => [s.id, s.generation, s.generationNodeId])).toEqual(generations);
    expect(leadership.status().role).toBe('standby');
  });
});
