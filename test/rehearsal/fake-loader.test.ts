import { describe, expect, it } from 'vitest';
import { createSimulatedCluster, type FakeOptionsInput } from '../../plugins/fake/index.ts';
import type { DurationSampler } from '../../src/domain/rehearsal/types.ts';
import loadFake from '../../rehearsal/loaders/fake.ts';
import { VirtualClock } from '../support/virtual-clock.ts';

/** Every VM migration takes 4 min, except prod/web-1's 9 min; the rest from the backend's defaults. */
const durations: DurationSampler = {
  draw: (action, workloadId) => {
    if (action === 'VM_MIGRATE') return { ms: workloadId === 'prod/web-1' ? 540_000 : 240_000, source: 'WORKLOAD' };
    return { ms: 1, source: 'DEFAULT' };
  },
};

describe('the fake plugin’s snapshot and its rehearsal loader (issue 33)', () => {
  it('the cluster the loader builds reads as the live one did: nodes, VMs, shards and secondaries’ lag', async () => {
    const liveClock = new VirtualClock();
    const live = createSimulatedCluster({ topology: 'demo', clock: liveClock });
    const cordoned = live.cordonNode('2');
    await liveClock.advance(1_000);
    await cordoned;
    await live.simulation.setNodeOnline('4', false);
    const [shard] = await live.listShards({ attachedNodeId: '1', secondaryNodeId: '2' });
    await live.simulation.setSecondaryLag(shard!.id, '2', 5_000_000, 1_000);
    const [snapshot] = await live.snapshot();
    expect(snapshot!.plugin).toBe('fake');

    const clock = new VirtualClock();
    const loaded = await loadFake(snapshot!, { latenciesMs: { migrate: 5 }, statePath: 'live-state.json' }, { clock, durations, seed: 3 });
    const options = loaded.options as FakeOptionsInput;
    // Nothing of the live entry's state file, nor a demo: the snapshot's topology, on the sample's seed.
    expect(options.statePath).toBeUndefined();
    expect(options.seed).toBe(3);
    expect(loaded.urls).toEqual([]);
    const copy = createSimulatedCluster({ ...options, clock });
    expect(await copy.listNodes()).toEqual(await live.listNodes());
    expect(await copy.listVms()).toEqual(await live.listVms());
    expect(await copy.listShards()).toEqual(await live.listShards());
    expect(await copy.getSecondaryStatus(shard!.id, '2')).toMatchObject({ bytesDownloaded: (await live.getSecondaryStatus(shard!.id, '2')).bytesDownloaded });
    await live.close();
    await copy.close();
  });

  it('each VM migrates in the time drawn for it; a restart keeps the node down for the time given', async () => {
    const live = createSimulatedCluster({ topology: 'demo', clock: new VirtualClock() });
    const [snapshot] = await live.snapshot();
    await live.close();
    const clock = new VirtualClock();
    const loaded = await loadFake(snapshot!, {}, { clock, durations, seed: 1 });
    const cluster = createSimulatedCluster({ ...(loaded.options as FakeOptionsInput), clock });
    loaded.attach!(cluster);
    const vm = (await cluster.getVm('prod/web-1'))!;
    const done = { web: false };
    void cluster.migrateVm(vm.id, { fromNodeId: vm.nodeId! }).then(() => (done.web = true));
    await clock.advance(539_000);
    expect(done.web).toBe(false);
    await clock.advance(1_000);
    expect(done.web).toBe(true);

    await loaded.restartNode('3', 120_000);
    expect((await cluster.getNode('3'))!.availability).toBe('OFFLINE');
    await clock.advance(119_000);
    expect((await cluster.getNode('3'))!.availability).toBe('OFFLINE');
    await clock.advance(1_000);
    expect((await cluster.getNode('3'))!.availability).toBe('WARMING_UP');
    // A node the cluster does not have is left alone.
    await loaded.restartNode('no-such-node', 1_000);
    await loaded.stop();
    await cluster.close();
  });
});
