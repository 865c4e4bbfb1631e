import { describe, expect, it } from 'vitest';
import type { ClusterEvent } from '../../../src/cluster/types.ts';
import { setup, vmEvents } from './setup.ts';

const nodeStory = (events: ClusterEvent[], id: string) =>
  events.flatMap((e) =>
    e.type === 'nodeChanged' && e.node.id === id ? [e.node.availability] : e.type === 'nodeReattached' && e.nodeId === id ? ['reattached'] : [],
  );

describe('restartNode', () => {
  it('goes OFFLINE, re-attaches after the restart delay (WARMING_UP), then is ACTIVE after one heartbeat', async () => {
    const t = setup({ restartDelayMs: 5000, heartbeatIntervalMs: 1000 });
    await t.cluster.simulation.restartNode('1');
    expect((await t.cluster.getNode('1'))?.availability).toBe('OFFLINE');
    await t.clock.advance(4999);
    expect(nodeStory(t.events, '1')).toEqual(['OFFLINE']);
    await t.clock.advance(1);
    expect(nodeStory(t.events, '1')).toEqual(['OFFLINE', 'WARMING_UP', 'reattached']);
    await t.clock.advance(1000);
    expect(nodeStory(t.events, '1')).toEqual(['OFFLINE', 'WARMING_UP', 'reattached', 'ACTIVE']);
  });

  it('stops the VMs on the node; on return, those with Always/RerunOnFailure run there again, Manual ones stay off', async () => {
    const t = setup({ restartDelayMs: 5000 });
    await t.cluster.simulation.restartNode('1');
    await t.clock.advance(0);
    for (const id of ['default/plain', 'default/gpu', 'default/manual']) {
      expect(await t.cluster.getVm(id)).toMatchObject({ status: 'Stopped', nodeId: null });
    }
    await t.clock.advance(5000);
    expect(await t.cluster.getVm('default/plain')).toMatchObject({ status: 'Running', nodeId: '1', runStrategy: 'Always' });
    expect(await t.cluster.getVm('default/manual')).toMatchObject({ status: 'Stopped', nodeId: null, runStrategy: 'Manual' });
    expect(vmEvents(t.events, 'default/plain').map((v) => v.status)).toEqual(['Stopped', 'Running']);
  });

  it('does not restart a VM that was halted while its node was down', async () => {
    const t = setup({ restartDelayMs: 5000 });
    await t.cluster.simulation.restartNode('1');
    await t.cluster.stopVm('default/plain');
    await t.clock.advance(5000);
    expect(await t.cluster.getVm('default/plain')).toMatchObject({ status: 'Stopped', runStrategy: 'Halted' });
  });

  it('aborts moves touching the node with Unavailable: migrations towards it keep the VM at its source', async () => {
    const t = setup();
    const [shard] = await t.cluster.listShards({ tenantId: 't1' });
    const toTwo = t.cluster.migrateVm('default/plain', { fromNodeId: '1', toNodeId: '2' });
    const cut = t.cluster.cutOverShard(shard!.id, { fromNodeId: '1', toNodeId: '2' });
    await t.clock.advance(10);
    await t.cluster.simulation.restartNode('2');
    await expect(toTwo).rejects.toMatchObject({ code: 'Unavailable' });
    await expect(cut).rejects.toMatchObject({ code: 'Unavailable' });
    expect(await t.cluster.getVm('default/plain')).toMatchObject({ status: 'Running', nodeId: '1' });
    expect((await t.cluster.getShard(shard!.id))?.attachedNodeId).toBe('1');
  });

  it('is idempotent while the restart is under way', async () => {
    const t = setup({ restartDelayMs: 5000 });
    await t.cluster.simulation.restartNode('2');
    await t.clock.advance(4000);
    await t.cluster.simulation.restartNode('2');
    await t.clock.advance(1000);
    expect(nodeStory(t.events, '2')).toEqual(['OFFLINE', 'WARMING_UP', 'reattached']);
  });
});

describe('setNodeOnline', () => {
  it('an outage makes actions on the node reject Unavailable while reads work; coming back is ACTIVE at once, no re-attach', async () => {
    const t = setup();
    await t.cluster.simulation.setNodeOnline('1', false);
    await expect(t.cluster.stopVm('default/plain')).rejects.toMatchObject({ code: 'Unavailable' });
    expect(await t.cluster.getVm('default/plain')).toMatchObject({ status: 'Running', nodeId: '1' });
    await t.cluster.simulation.setNodeOnline('1', true);
    await t.clock.advance(0);
    expect(nodeStory(t.events, '1')).toEqual(['OFFLINE', 'ACTIVE']);
    await t.after(1000, t.cluster.stopVm('default/plain'));
  });

  it('holds a restarting node offline until it is set online, which re-attaches it', async () => {
    const t = setup({ restartDelayMs: 5000, heartbeatIntervalMs: 1000 });
    await t.cluster.simulation.restartNode('1');
    await t.cluster.simulation.setNodeOnline('1', false);
    await t.clock.advance(60_000);
    expect((await t.cluster.getNode('1'))?.availability).toBe('OFFLINE');
    await t.cluster.simulation.setNodeOnline('1', true);
    await t.clock.advance(1000);
    expect(nodeStory(t.events, '1')).toEqual(['OFFLINE', 'WARMING_UP', 'reattached', 'ACTIVE']);
  });
});

describe('removeNode', () => {
  it('stops its VMs, loses its replicas, promotes its shards (preferred zone first) and emits nodeRemoved last', async () => {
    const t = setup();
    const shards = await t.cluster.listShards();
    await t.cluster.simulation.removeNode('1');
    await t.clock.advance(0);
    expect(await t.cluster.getNode('1')).toBeNull();
    expect(t.events.at(-1)).toEqual({ type: 'nodeRemoved', nodeId: '1' });
    expect(await t.cluster.getVm('default/plain')).toMatchObject({ status: 'Stopped', nodeId: null });
    expect(await t.cluster.listVms({ nodeId: '1' })).toEqual([]);
    const [t1, t2] = await t.cluster.getShards(shards.map((s) => s.id));
    expect(t1).toMatchObject({ attachedNodeId: '2', secondaryNodeIds: [] });
    // t2 prefers zone-b: node 3 takes over though node 2 has the lower id.
    expect(t2).toMatchObject({ attachedNodeId: '3', secondaryNodeIds: ['2'] });
    await expect(t.cluster.cordonNode('1')).rejects.toMatchObject({ code: 'NotFound' });
  });

  it('marks replicas on the removed node unhealthy and forgets secondaries there', async () => {
    const t = setup({
      topology: {
        nodes: [{ id: 'a' }, { id: 'b' }],
        vms: [{ name: 'v', nodeId: 'a', volumes: [{ name: 'disk', replicas: [{ nodeId: 'a' }, { nodeId: 'b' }] }] }],
        shards: [{ tenantId: 't', attachedNodeId: 'a', secondaries: [{ nodeId: 'b' }] }],
      },
    });
    await t.cluster.simulation.removeNode('b');
    expect((await t.cluster.getVm('default/v'))?.volumes[0]?.replicas).toEqual([
      { nodeId: 'a', healthy: true },
      { nodeId: 'b', healthy: false },
    ]);
    expect((await t.cluster.getShard('t'))?.secondaryNodeIds).toEqual([]);
    // Node a now holds a shard without a secondary: removing it would lose the shard.
    await expect(t.cluster.simulation.removeNode('a')).rejects.toMatchObject({ code: 'Conflict' });
    expect(await t.cluster.getNode('a')).not.toBeNull();
  });
});
