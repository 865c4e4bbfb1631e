/**
 * neon:H9 at the plugin: a failover step keeps the shard's attached intent on its target
 * whatever fails before the generation is issued, and the background pass (neon:C14)
 * completes it; the lost node is never named again. One test per window: the target
 * OFFLINE between plan and attach, a database error, a superseding reconcile, a controller
 * killed mid-step. Node 1 (the lost node) never answers again in any of them.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { PluginStore } from '../../../src/cluster/plugin-store.ts';
import { shardIdOf, type SimShardSpec } from '../../../simulators/pageserver/index.ts';
import { closeAfterEach, startSimCluster, type SimCluster } from '../../support/pageserver-cluster.ts';

const clusters = closeAfterEach(afterEach);
const SHARD: SimShardSpec = { tenant: 3, shardNumber: 0, shardCount: 1, attached: 1, secondaries: [2], generation: 4 };
const ID = shardIdOf(SHARD);

/** The plugin store with one method replaced (the leader's store; start-up writes go through it too). */
function storeWith(overrides: Partial<PluginStore>) {
  return (inner: PluginStore): PluginStore => {
    const wrapped: PluginStore = Object.create(inner) as PluginStore;
    Object.assign(wrapped, overrides, { forStartUp: () => inner.forStartUp() });
    for (const key of [
      'nodes',
      'putNode',
      'removeNode',
      'shards',
      'createShards',
      'putIntents',
      'removeShards',
      'incrementGeneration',
      'leaderGenerations',
      'raiseGeneration',
      'reAttach',
      'getMeta',
      'setMeta',
    ] as const) {
      if (!(key in overrides)) (wrapped as any)[key] = (inner as any)[key].bind(inner);
    }
    return wrapped;
  };
}

async function loseNode1(c: SimCluster) {
  c.sim(1).stopAnswering();
  await c.controller!.failover.setNodeAvailability('1', 'OFFLINE');
}

describe('neon:H9 — a failover never falls back onto the lost node', () => {
  it('the target goes OFFLINE between plan and attach: the intent stays on it; once it is back the background pass attaches it there', async () => {
    const c = clusters.use(await startSimCluster({ nodes: [{ id: 1 }, { id: 2 }, { id: 3 }], shards: [SHARD] }));
    const ref: { backend?: { failover: { setNodeAvailability(id: string, a: 'OFFLINE'): Promise<void> } } } = {};
    let armed = false;
    const backend = await c.startController(
      {},
      {
        wrapStore: storeWith({
          putIntents: async function (this: PluginStore, intents) {
            await (Object.getPrototypeOf(this) as PluginStore).putIntents(intents);
            // Right after the failover wrote node 2 as the attached node, node 2 is declared OFFLINE.
            if (armed && intents.some((i) => i.id === ID && i.intent.attachedNodeId === '2')) {
              armed = false;
              await ref.backend!.failover.setNodeAvailability('2', 'OFFLINE');
            }
          },
        }),
      },
    );
    ref.backend = backend;
    await loseNode1(c);
    armed = true;
    await expect(c.drive(backend.failover.failOverShard(ID, { fromNodeId: '1', toNodeId: '2' }))).rejects.toThrow(/OFFLINE/);
    expect(await backend.getShard(ID)).toMatchObject({ attachedNodeId: '2', secondaryNodeIds: ['1'] });
    // Node 2 still answers: its next heartbeat makes it ACTIVE (neon:H8), the background pass attaches it.
    await c.until(() => c.view()[ID]?.['2'] === 'AttachedSingle@5', { what: 'node 2 attached', maxMs: 60_000 });
    expect((await backend.getShard(ID))?.attachedNodeId).toBe('2');
  });

  it('a database error before the generation: the intent stays on the target, the step resolves once the background pass attached it', async () => {
    const c = clusters.use(await startSimCluster({ nodes: [{ id: 1 }, { id: 2 }, { id: 3 }], shards: [SHARD] }));
    let failures = 0;
    const backend = await c.startController(
      {},
      {
        wrapStore: storeWith({
          incrementGeneration: async function (this: PluginStore, shardId, nodeId) {
            if (failures++ === 0) throw new Error('database unavailable (injected)');
            return (Object.getPrototypeOf(this) as PluginStore).incrementGeneration(shardId, nodeId);
          },
        }),
      },
    );
    await loseNode1(c);
    const result = await c.drive(backend.failover.failOverShard(ID, { fromNodeId: '1', toNodeId: '2' }));
    expect(result?.note).toMatch(/^rolled forward: .*database unavailable \(injected\)/);
    expect(failures).toBe(2);
    expect(await backend.getShard(ID)).toMatchObject({ attachedNodeId: '2', secondaryNodeIds: ['1'] });
    expect(c.view()[ID]?.['2']).toBe('AttachedSingle@5');
  });

  it('a superseding reconcile cancels the failover before its generation: the step joins the newer reconcile, the intent never goes back to node 1', async () => {
    const c = clusters.use(await startSimCluster({ nodes: [{ id: 1 }, { id: 2 }, { id: 3 }], shards: [SHARD] }));
    const backend = await c.startController();
    await loseNode1(c);
    // Node 2's location is unknown, so the reconcile reads it first (Neon's maybe_refresh_observed); that read hangs once.
    backend.observed.set(ID, '2', 'unknown');
    c.sim(2).inject({ method: 'GET', path: /^\/v1\/location_config\//, kind: 'timeout', times: 1 });
    const failing = backend.failover.failOverShard(ID, { fromNodeId: '1', toNodeId: '2' });
    await c.until(() => c.log.find({ source: 'node 2', method: 'GET', path: /^\/v1\/location_config\// }).length === 1, { what: 'the refresh read' });
    const superseding = backend.placement.placeShard(ID, { attachedNodeId: '2', secondaryNodeIds: ['1'] });
    await c.drive(Promise.all([failing, superseding]));
    expect(await backend.getShard(ID)).toMatchObject({ attachedNodeId: '2', secondaryNodeIds: ['1'] });
    expect(c.view()[ID]?.['2']).toBe('AttachedSingle@5');
  });

  it('the controller killed mid-step (before the generation): the intent in the database names the target; the next controller attaches it there', async () => {
    const c = clusters.use(await startSimCluster({ nodes: [{ id: 1 }, { id: 2 }, { id: 3 }], shards: [SHARD] }));
    const backend = await c.startController();
    await loseNode1(c);
    backend.observed.set(ID, '2', 'unknown');
    c.sim(2).inject({ method: 'GET', path: /^\/v1\/location_config\//, kind: 'timeout', times: 1 });
    const failing = backend.failover.failOverShard(ID, { fromNodeId: '1', toNodeId: '2' }).catch((e: unknown) => e);
    await c.until(() => c.log.find({ source: 'node 2', method: 'GET', path: /^\/v1\/location_config\// }).length === 1, { what: 'the refresh read' });
    await backend.close();
    await c.drive(failing);
    const next = await c.startController();
    expect((await next.getShard(ID))?.attachedNodeId).toBe('2');
    await c.until(() => c.view()[ID]?.['2'] === 'AttachedSingle@5', { what: 'node 2 attached by the next controller', maxMs: 60_000 });
  });
});
