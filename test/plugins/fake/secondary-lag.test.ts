import { describe, expect, it } from 'vitest';
import { setup } from './setup.ts';

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

  it('after a cut-over the old attached location is a warm secondary of the shard\'s full size', async () => {
    const t = setup();
    const [, t2] = await t.cluster.listShards();
    await t.after(300, t.cluster.cutOverShard(t2!.id, { fromNodeId: '1', toNodeId: '3' }));
    expect(await t.cluster.getShard(t2!.id)).toMatchObject({ attachedNodeId: '3', secondaryNodeIds: ['2', '1'] });
    expect(await t.cluster.getSecondaryStatus(t2!.id, '1')).toMatchObject({ bytesTotal: 1000, bytesDownloaded: 1000 });
    await expect(t.cluster.getSecondaryStatus(t2!.id, '3')).rejects.toMatchObject({ code: 'NotFound' });
  });
});
