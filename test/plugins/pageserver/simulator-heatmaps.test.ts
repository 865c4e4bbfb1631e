import { afterEach, describe, expect, it } from 'vitest';
import { shardIdOf, startPageserverFleet, type PageserverFleet, type SimShardSpec } from '../../../simulators/pageserver/index.ts';
import { VirtualClock } from '../../support/virtual-clock.ts';

/**
 * Issue 28 point 2: the simulator uploads heatmaps as a pageserver does — only while the
 * attached location's `heatmap_period` is above zero, once on a flush or an explicit
 * upload — and a secondary's freshness follows them.
 */

const KiB = 1024;
const START_MS = Date.UTC(2026, 0, 1);
const at = (seconds: number) => new Date(START_MS + seconds * 1000).toISOString();

let fleet: PageserverFleet | undefined;
afterEach(async () => {
  await fleet?.close();
  fleet = undefined;
});

async function start(shards: SimShardSpec[], downloadBytesPerSecond?: number) {
  const clock = new VirtualClock(START_MS);
  fleet = await startPageserverFleet({ nodes: [{ id: 1 }, { id: 2 }], shards, clock, ...(downloadBytesPerSecond !== undefined && { downloadBytesPerSecond }) });
  const call = async (node: number, method: string, path: string, body?: unknown) => {
    const res = await fetch(`${fleet!.sim(node).url}${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
    return { status: res.status, json: (await res.json()) as Record<string, unknown> | null };
  };
  const status = async (shardId: string) => (await call(2, 'GET', `/v1/tenant/${shardId}/secondary/status`)).json!;
  return { clock, call, status, fleet };
}

describe('heatmap uploads follow the attached location’s heatmap_period', () => {
  it('every period while it is above zero; none with 0s or unset, nor while AttachedStale; an explicit upload and a flush upload once', async () => {
    const shard: SimShardSpec = { tenant: 1, attached: 1, secondaries: [2], tenantConf: { heatmap_period: '1m' } };
    const id = shardIdOf(shard);
    const { clock, call, status } = await start([shard]);
    const put = (mode: string, tenantConf: Record<string, unknown>, query = '') =>
      call(1, 'PUT', `/v1/tenant/${id}/location_config${query}`, { mode, generation: 1, tenant_conf: tenantConf });
    expect((await status(id)).heatmap_mtime).toBe(at(0));
    await clock.advance(150_000);
    expect((await status(id)).heatmap_mtime).toBe(at(120));

    // The body's tenant_conf replaces the config: heatmap_period unset means no uploads.
    expect((await put('AttachedSingle', { pitr_interval: '7days' })).status).toBe(200);
    await clock.advance(600_000);
    expect((await status(id)).heatmap_mtime).toBe(at(120));
    expect((await put('AttachedSingle', { heatmap_period: '0s' })).status).toBe(200);
    await clock.advance(600_000);
    expect((await status(id)).heatmap_mtime).toBe(at(120));

    // An explicit upload: once.
    expect(await call(1, 'POST', `/v1/tenant/${id}/heatmap_upload`)).toEqual({ status: 200, json: null });
    await clock.advance(300_000);
    expect((await status(id)).heatmap_mtime).toBe(at(1350));
    // A secondary cannot upload.
    expect((await call(2, 'POST', `/v1/tenant/${id}/heatmap_upload`)).status).toBe(404);

    // Periodic again from the config that sets it; the first upload one period after.
    expect((await put('AttachedSingle', { heatmap_period: '30s' })).status).toBe(200);
    await clock.advance(70_000);
    expect((await status(id)).heatmap_mtime).toBe(at(1710));

    // AttachedStale never uploads periodically; the flush on entering it uploads once.
    expect((await put('AttachedStale', { heatmap_period: '30s' }, '?flush_ms=5000')).status).toBe(200);
    expect((await status(id)).heatmap_mtime).toBe(at(1720));
    await clock.advance(300_000);
    expect((await status(id)).heatmap_mtime).toBe(at(1720));
    // Neon flushes only on the move to AttachedStale: a detach with flush_ms uploads nothing.
    expect((await put('Detached', {}, '?flush_ms=5000')).status).toBe(200);
    expect((await status(id)).heatmap_mtime).toBe(at(1720));
  });
});

describe('a secondary’s freshness follows the heatmaps', () => {
  it('without uploads it falls behind the layers the tenant rewrote, and its warm-up after the flush takes longer', async () => {
    const uploading: SimShardSpec = { tenant: 1, attached: 1, secondaries: [2], tenantConf: { heatmap_period: '1m' } };
    const silent: SimShardSpec = { tenant: 2, attached: 1, secondaries: [2], tenantConf: {} };
    const { clock, call, status, fleet: f } = await start([uploading, silent], 64 * KiB);
    f.heatmaps.churnBytesPerSecond = 1 * KiB;
    await clock.advance(630_000);
    const fresh = shardIdOf(uploading);
    const stale = shardIdOf(silent);
    // Before the cut-over: one kept up with an upload a minute, the other still holds the heatmap it started with.
    expect(await status(fresh)).toMatchObject({ heatmap_mtime: at(600), bytes_downloaded: 4096 * KiB, bytes_total: 4096 * KiB });
    expect(await status(stale)).toMatchObject({ heatmap_mtime: at(0), bytes_downloaded: 4096 * KiB, bytes_total: 4096 * KiB });

    // The origin flushes (AttachedStale, as a live migration does): one upload for each.
    for (const id of [fresh, stale]) {
      const res = await call(1, 'PUT', `/v1/tenant/${id}/location_config?flush_ms=5000`, { mode: 'AttachedStale', generation: 1, tenant_conf: {} });
      expect(res.status).toBe(200);
    }
    expect(await status(fresh)).toMatchObject({ heatmap_mtime: at(630), bytes_downloaded: (4096 - 30) * KiB });
    expect(await status(stale)).toMatchObject({ heatmap_mtime: at(630), bytes_downloaded: (4096 - 630) * KiB });

    // The warm-up: how long until `secondary/download` answers 200.
    const warmUp = async (id: string) => {
      for (let ms = 0; ; ms += 100) {
        if ((await call(2, 'POST', `/v1/tenant/${id}/secondary/download?wait_ms=0`)).status === 200) return ms;
        await clock.advance(100);
      }
    };
    expect(await warmUp(fresh)).toBe(500);
    expect(await warmUp(stale)).toBe(9400);
  });
});
