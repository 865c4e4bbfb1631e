import { describe, expect, it } from 'vitest';
import { isBackendError } from '../../../src/cluster/errors.ts';
import { setup } from './setup.ts';

describe('latencies on the injected clock', () => {
  it('an action completes exactly when its latency has passed on the clock', async () => {
    const t = setup({ latenciesMs: { cordon: 250 } });
    const cordon = t.cluster.cordonNode('2');
    await t.clock.advance(249);
    expect(await t.pending(cordon)).toBe(true);
    await t.after(1, cordon);
    expect((await t.cluster.getNode('2'))?.cordoned).toBe(true);
  });

  it('latency spikes (option latencySpike): a spiked move takes factor × its latency, from a seeded stream of its own', async () => {
    const t = setup({ latenciesMs: { cordon: 100 }, latencySpike: { rate: 1, factor: 10 } });
    const cordon = t.cluster.cordonNode('2');
    await t.clock.advance(999);
    expect(await t.pending(cordon)).toBe(true);
    await t.after(1, cordon);
    // Rate 0 (the default): as given.
    const plain = setup({ latenciesMs: { cordon: 100 } });
    await plain.after(100, plain.cluster.cordonNode('2'));
  });

  it('setLatencies applies to the next actions and returns the merged settings', async () => {
    const t = setup();
    const merged = t.cluster.simulation.setLatencies({ stop: 10 });
    expect(merged.stop).toBe(10);
    expect(t.cluster.simulation.getLatencies()).toEqual(merged);
    await t.after(10, t.cluster.stopVm('default/plain'));
    expect(() => t.cluster.simulation.setLatencies({ stop: -1 })).toThrow(expect.objectContaining({ code: 'Rejected' }));
  });

  it('a zero latency still completes asynchronously, on the next clock turn', async () => {
    const t = setup({ latenciesMs: { cutOver: 0 } });
    const [shard] = await t.cluster.listShards({ tenantId: 't1' });
    await t.after(0, t.cluster.cutOverShard(shard!.id, { fromNodeId: '1', toNodeId: '2' }));
    expect((await t.cluster.getShard(shard!.id))?.attachedNodeId).toBe('2');
  });
});

describe('injected failures', () => {
  it('a failure rate of 1 rejects Transient (retryable) before anything changes', async () => {
    const t = setup();
    t.cluster.simulation.injectFaults({ failureRate: { migrate: 1 } });
    const error = await t.cluster.migrateVm('default/plain', { fromNodeId: '1' }).catch((e: unknown) => e);
    expect(isBackendError(error, 'Transient') && error.retryable).toBe(true);
    await t.clock.advance(0);
    expect(t.events).toEqual([]);
    // Other kinds are unaffected.
    await t.after(1000, t.cluster.stopVm('default/plain'));
  });

  it('decisions replay identically for a seed', async () => {
    const outcomes = async (seed: number) => {
      const t = setup({ seed, latenciesMs: { cordon: 0 } });
      t.cluster.simulation.injectFaults({ failureRate: { cordon: 0.5 } });
      const results: boolean[] = [];
      for (let i = 0; i < 24; i++) {
        const action = i % 2 === 0 ? t.cluster.cordonNode('2') : t.cluster.uncordonNode('2');
        results.push(
          await t.after(0, action).then(
            () => true,
            () => false,
          ),
        );
      }
      return results;
    };
    const first = await outcomes(42);
    expect(await outcomes(42)).toEqual(first);
    expect(first).toContain(true);
    expect(first).toContain(false);
    expect(await outcomes(43)).not.toEqual(first);
  });

  it('rejects a failure rate outside [0, 1]; clearFaults resets everything', () => {
    const t = setup();
    expect(() => t.cluster.simulation.injectFaults({ failureRate: { stop: 2 } })).toThrow(expect.objectContaining({ code: 'Rejected' }));
    t.cluster.simulation.injectFaults({ failureRate: { stop: 0.3 }, stuck: ['default/plain'] });
    expect(t.cluster.simulation.getFaults()).toEqual({ failureRate: { stop: 0.3 }, stuck: ['default/plain'] });
    expect(t.cluster.simulation.clearFaults()).toEqual({ failureRate: {}, stuck: [] });
  });
});

describe('stuck moves', () => {
  it('a stuck VM stays Migrating until the fault is lifted, then the migration completes', async () => {
    const t = setup();
    t.cluster.simulation.injectFaults({ stuck: ['default/plain'] });
    const move = t.cluster.migrateVm('default/plain', { fromNodeId: '1', toNodeId: '2' });
    await t.clock.advance(3_600_000);
    expect(await t.pending(move)).toBe(true);
    expect((await t.cluster.getVm('default/plain'))?.status).toBe('Migrating');
    // Other VMs are not held up.
    await t.after(1000, t.cluster.stopVm('default/manual'));
    t.cluster.simulation.clearFaults();
    await t.after(0, move);
    expect(await t.cluster.getVm('default/plain')).toMatchObject({ status: 'Running', nodeId: '2' });
  });

  it('a stuck shard cut-over completes once injectFaults replaces the stuck list without it', async () => {
    const t = setup();
    const [shard] = await t.cluster.listShards({ tenantId: 't1' });
    t.cluster.simulation.injectFaults({ stuck: [shard!.id, 'other'] });
    const cut = t.cluster.cutOverShard(shard!.id, { fromNodeId: '1', toNodeId: '2' });
    await t.clock.advance(60_000);
    expect(await t.pending(cut)).toBe(true);
    expect((await t.cluster.getShard(shard!.id))?.attachedNodeId).toBe('1');
    t.cluster.simulation.injectFaults({ stuck: ['other'] });
    await t.after(0, cut);
    expect((await t.cluster.getShard(shard!.id))?.attachedNodeId).toBe('2');
  });

  it('a stuck move is aborted with Unavailable when the backend closes', async () => {
    const t = setup();
    t.cluster.simulation.injectFaults({ stuck: ['default/plain'] });
    const stop = t.cluster.stopVm('default/plain');
    await t.clock.advance(10_000);
    await t.cluster.close();
    await expect(stop).rejects.toMatchObject({ code: 'Unavailable' });
    expect(t.clock.pendingTimers).toBe(0);
    await expect(t.cluster.getNode('1')).rejects.toMatchObject({ code: 'Unavailable' });
  });
});
