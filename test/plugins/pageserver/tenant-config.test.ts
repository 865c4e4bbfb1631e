/**
 * neon:W10 at the plugin: the config adopted at discovery (the attached location's wins, a
 * secondary's where no attached one answers), and a tenant whose config is unknown gets no
 * location_config: its move waits, named as phase TENANT_CONFIG, until a pageserver holding
 * it answers.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { CutOverProgress } from '../../../src/cluster/shard-control.ts';
import { shardIdOf, type SimShardSpec } from '../../../simulators/pageserver/index.ts';
import { closeAfterEach, startSimCluster, type SimCluster } from '../../support/pageserver-cluster.ts';

const clusters = closeAfterEach(afterEach);
const SHARD: SimShardSpec = { tenant: 9, attached: 1, secondaries: [2], generation: 3 };
const ID = shardIdOf(SHARD);

/** Starts a controller once, then removes the shard's stored config, as a row written by an earlier version. */
async function forgetStoredConfig(c: SimCluster) {
  const first = await c.startController();
  await first.close();
  const row = await c.db.prisma.pluginShard.findFirstOrThrow({ where: { id: ID } });
  const intent = JSON.parse(row.intent) as Record<string, unknown>;
  delete intent.tenantConfig;
  await c.db.prisma.pluginShard.update({ where: { plugin_id: { plugin: row.plugin, id: ID } }, data: { intent: JSON.stringify(intent) } });
}

describe('neon:W10 — discovery and unknown configs', () => {
  it('adopted shards take the attached location’s config; a secondary’s only where no attached location answers', async () => {
    const c = clusters.use(await startSimCluster({ nodes: [{ id: 1 }, { id: 2 }, { id: 3 }], shards: [SHARD] }));
    c.sim(1).seed(ID, { mode: 'AttachedSingle', generation: 3, tenantConf: { pitr_interval: '1day', heatmap_period: '1m' } });
    c.sim(2).seed(ID, { mode: 'Secondary', tenantConf: { pitr_interval: '2days' } });
    const backend = await c.startController();
    expect(await backend.placement.getTenantConfig!(ID.slice(0, 32))).toEqual({ heatmap_period: '1m', pitr_interval: '1day' });
    await backend.close();
    await forgetStoredConfig(c);
    c.sim(2).seed(ID, { mode: 'Secondary', tenantConf: { pitr_interval: '2days' } });
    c.sim(1).stopAnswering();
    const again = await c.startController();
    expect(await again.placement.getTenantConfig!(ID.slice(0, 32))).toEqual({ pitr_interval: '2days' });
  });

  it('unknown (its pageservers unreachable since start-up): no location_config for it; a move waits as TENANT_CONFIG, then goes on once one answers', async () => {
    const c = clusters.use(await startSimCluster({ nodes: [{ id: 1 }, { id: 2 }, { id: 3 }], shards: [SHARD] }));
    c.sim(1).seed(ID, { mode: 'AttachedSingle', generation: 3, tenantConf: { pitr_interval: '1day', heatmap_period: '1m' } });
    c.sim(2).seed(ID, { mode: 'Secondary', tenantConf: { pitr_interval: '1day', heatmap_period: '1m' } });
    await forgetStoredConfig(c);
    c.sim(1).stopAnswering();
    c.sim(2).stopAnswering();
    const backend = await c.startController();
    expect(await backend.placement.getTenantConfig!(ID.slice(0, 32))).toBeNull();
    const mark = c.log.entries.length;
    const phases: CutOverProgress[] = [];
    const moving = backend.placement.placeShard(ID, { attachedNodeId: '3', secondaryNodeIds: ['2'] }, { onProgress: (p) => phases.push(p) });
    await c.advance(20_000);
    expect(phases).toEqual([{ phase: 'TENANT_CONFIG', description: expect.stringMatching(/^waiting for tenant 0{31}9's config/), nodeId: null }]);
    expect(c.log.entries.slice(mark).filter((e) => e.method === 'PUT')).toEqual([]);
    c.sim(2).resume();
    await c.drive(moving);
    expect(await backend.placement.getTenantConfig!(ID.slice(0, 32))).toEqual({ heatmap_period: '1m', pitr_interval: '1day' });
    expect(c.view()[ID]?.['3']).toBe('AttachedSingle@4');
    expect(c.sim(3).tenantConf(ID)).toEqual({ heatmap_period: '1m', pitr_interval: '1day' });
  });
});
