import { describe, expect, it } from 'vitest';
import { createTestApp } from '../../support/graphql-app.ts';
import { setup, smallTopology } from './setup.ts';

const lagOf = (s: { bytesTotal: number; bytesDownloaded: number }) => s.bytesTotal - s.bytesDownloaded;

describe('secondary lag', () => {
  it('starts from the topology and downloads at the configured rate on the clock, up to the total', async () => {
    const t = setup({ secondaryDownloadBytesPerSecond: 100 });
    const [, t2] = await t.cluster.listShards();
    expect(await t.cluster.getSecondaryStatus(t2!.id, '3')).toEqual({ bytesTotal: 1000, bytesDownloaded: 600, heatmapMtime: t.clock.now() });
    await t.clock.advance(1500);
    expect(lagOf(await t.cluster.getSecondaryStatus(t2!.id, '3'))).toBe(250);
    await t.clock.advance(60_000);
    expect(lagOf(await t.cluster.getSecondaryStatus(t2!.id, '3'))).toBe(0);
    expect(lagOf(await t.cluster.getSecondaryStatus(t2!.id, '2'))).toBe(0);
  });

  it('setSecondaryLag sets the remaining bytes and a per-secondary rate; rate 0 never catches up', async () => {
    const t = setup();
    const [t1] = await t.cluster.listShards();
    await t.cluster.simulation.setSecondaryLag(t1!.id, '2', 5000, 0);
    await t.clock.advance(3_600_000);
    const status = await t.cluster.getSecondaryStatus(t1!.id, '2');
    expect(status).toMatchObject({ bytesTotal: 5000, bytesDownloaded: 0 });
    await t.cluster.simulation.setSecondaryLag(t1!.id, '2', 1000, 500);
    await t.clock.advance(1000);
    expect(lagOf(await t.cluster.getSecondaryStatus(t1!.id, '2'))).toBe(500);
  });

  it('reports an unknown lag (no heatmap) until a lag is set', async () => {
    const t = setup({
      topology: {
        nodes: [{ id: '1' }, { id: '2' }],
        shards: [{ tenantId: 't', attachedNodeId: '1', secondaries: [{ nodeId: '2', heatmapKnown: false }] }],
      },
    });
    expect((await t.cluster.getSecondaryStatus('t', '2')).heatmapMtime).toBeNull();
    await t.cluster.simulation.setSecondaryLag('t', '2', 0);
    expect((await t.cluster.getSecondaryStatus('t', '2')).heatmapMtime).toBe(t.clock.now());
  });

  it('rejects Unavailable for an OFFLINE node and NotFound where the shard has no secondary', async () => {
    const t = setup();
    const [t1] = await t.cluster.listShards();
    await expect(t.cluster.getSecondaryStatus(t1!.id, '3')).rejects.toMatchObject({ code: 'NotFound' });
    await expect(t.cluster.simulation.setSecondaryLag(t1!.id, '1', 5)).rejects.toMatchObject({ code: 'NotFound' });
    await t.cluster.simulation.setNodeOnline('2', false);
    await expect(t.cluster.getSecondaryStatus(t1!.id, '2')).rejects.toMatchObject({ code: 'Unavailable' });
  });

  it("after a cut-over the old attached location is a warm secondary of the shard's full size", async () => {
    const t = setup();
    const [, t2] = await t.cluster.listShards();
    await t.after(300, t.cluster.cutOverShard(t2!.id, { fromNodeId: '1', toNodeId: '3' }));
    expect(await t.cluster.getShard(t2!.id)).toMatchObject({ attachedNodeId: '3', secondaryNodeIds: ['2', '1'] });
    expect(await t.cluster.getSecondaryStatus(t2!.id, '1')).toMatchObject({ bytesTotal: 1000, bytesDownloaded: 1000 });
    await expect(t.cluster.getSecondaryStatus(t2!.id, '3')).rejects.toMatchObject({ code: 'NotFound' });
  });
});

describe('setSecondaryHeatmapKnown', () => {
  it('unknown makes getSecondaryStatus report heatmapMtime null; known again gives a fresh heatmap, progress kept', async () => {
    const t = setup({ secondaryDownloadBytesPerSecond: 100 });
    await t.clock.advance(1000);
    await t.cluster.simulation.setSecondaryHeatmapKnown('t2', '3', false);
    expect(await t.cluster.getSecondaryStatus('t2', '3')).toEqual({ bytesTotal: 1000, bytesDownloaded: 700, heatmapMtime: null });
    // Repeating it changes nothing.
    await t.cluster.simulation.setSecondaryHeatmapKnown('t2', '3', false);
    await t.clock.advance(1000);
    expect(await t.cluster.getSecondaryStatus('t2', '3')).toEqual({ bytesTotal: 1000, bytesDownloaded: 800, heatmapMtime: null });
    await t.cluster.simulation.setSecondaryHeatmapKnown('t2', '3', true);
    const known = await t.cluster.getSecondaryStatus('t2', '3');
    expect(known.heatmapMtime).toBe(t.clock.now());
    await t.clock.advance(500);
    await t.cluster.simulation.setSecondaryHeatmapKnown('t2', '3', true);
    expect((await t.cluster.getSecondaryStatus('t2', '3')).heatmapMtime).toBe(known.heatmapMtime);
    // Other secondaries are untouched; no event (lag is not part of the shard record).
    expect((await t.cluster.getSecondaryStatus('t2', '2')).heatmapMtime).not.toBeNull();
    expect(t.events).toEqual([]);
  });

  it('rejects NotFound for an unknown shard, an unknown node, or a node without that secondary', async () => {
    const t = setup();
    await expect(t.cluster.simulation.setSecondaryHeatmapKnown('nope', '2', false)).rejects.toMatchObject({ code: 'NotFound' });
    await expect(t.cluster.simulation.setSecondaryHeatmapKnown('t1', '99', false)).rejects.toMatchObject({ code: 'NotFound' });
    await expect(t.cluster.simulation.setSecondaryHeatmapKnown('t1', '1', false)).rejects.toMatchObject({ code: 'NotFound' });
    await expect(t.cluster.simulation.setSecondaryHeatmapKnown('t1', '3', false)).rejects.toMatchObject({ code: 'NotFound' });
  });

  it('is a GraphQL simulation mutation returning the shard or a typed error', async () => {
    const t = await createTestApp({ topology: smallTopology() });
    const set = (shardId: string, nodeId: string, known: boolean) =>
      t.gql(`mutation { simulation { setSecondaryHeatmapKnown(shardId: "${shardId}", nodeId: "${nodeId}", known: ${known}) {
        __typename ... on TenantShard { id } ... on NotFoundError { kind id } } } }`);
    const res = await set('t1', '2', false);
    expect(res.data.simulation.setSecondaryHeatmapKnown).toEqual({ __typename: 'TenantShard', id: 't1' });
    expect((await t.cluster.getSecondaryStatus('t1', '2')).heatmapMtime).toBeNull();
    await set('t1', '2', true);
    expect((await t.cluster.getSecondaryStatus('t1', '2')).heatmapMtime).toBe(t.clock.now());
    expect((await set('nope', '2', true)).data.simulation.setSecondaryHeatmapKnown).toMatchObject({ __typename: 'NotFoundError' });
    await t.stop();
  });
});
