import { describe, expect, it } from 'vitest';
import { setup, vmEvents } from './setup.ts';

// Literals, not imported from the code under test: a changed value must fail here (issue 26).
const MAINTENANCE_STRATEGY_LABEL = 'harvesterhci.io/maintain-mode-strategy';

describe('migrateVm', () => {
  it('shows Migrating for the migrate latency, then runs on the target', async () => {
    const t = setup({ latenciesMs: { migrate: 800 } });
    const move = t.cluster.migrateVm('default/plain', { fromNodeId: '1', toNodeId: '2' });
    await t.clock.advance(799);
    expect(await t.cluster.getVm('default/plain')).toMatchObject({ status: 'Migrating', nodeId: '1' });
    await t.after(1, move);
    expect(vmEvents(t.events, 'default/plain').map((v) => [v.status, v.nodeId])).toEqual([
      ['Migrating', '1'],
      ['Running', '2'],
    ]);
  });

  it('picks the least loaded matching node, then the lowest id', async () => {
    const t = setup();
    // Node 3 already runs default/pinned, node 2 nothing.
    await t.after(1000, t.cluster.migrateVm('default/plain', { fromNodeId: '1' }));
    expect((await t.cluster.getVm('default/plain'))?.nodeId).toBe('2');
    // One VM each on 2 and 3: the lower id wins.
    await t.after(1000, t.cluster.migrateVm('default/manual', { fromNodeId: '1' }));
    expect((await t.cluster.getVm('default/manual'))?.nodeId).toBe('2');
    // Node 1 (cordoned, as in a drain) is out; node 3 holds one VM against node 2's two.
    await t.after(100, t.cluster.cordonNode('1'));
    await t.after(1000, t.cluster.startVm('default/halted', { runStrategy: 'Always' }));
    expect((await t.cluster.getVm('default/halted'))?.nodeId).toBe('3');
  });

  it('spreads concurrent migrations by counting VMs already heading to a node', async () => {
    const t = setup();
    await t.after(1000, t.cluster.stopVm('default/pinned'));
    const a = t.cluster.migrateVm('default/plain', { fromNodeId: '1' });
    const b = t.cluster.migrateVm('default/manual', { fromNodeId: '1' });
    await t.after(1000, Promise.all([a, b]));
    expect((await t.cluster.getVms(['default/plain', 'default/manual'])).map((v) => v?.nodeId)).toEqual(['2', '3']);
  });

  it('honours the node selector, and rejects Conflict with nothing changed when no node fits', async () => {
    const t = setup();
    await t.after(1000, t.cluster.migrateVm('default/gpu', { fromNodeId: '1' }));
    expect((await t.cluster.getVm('default/gpu'))?.nodeId).toBe('3');
    await t.after(1000, t.cluster.migrateVm('default/gpu', { fromNodeId: '3' })).then(
      () => expect.fail('should reject'),
      (e) => expect(e).toMatchObject({ code: 'Conflict' }),
    );
    expect(await t.cluster.getVm('default/gpu')).toMatchObject({ nodeId: '3', status: 'Running' });
  });

  it('rejects NotFound for an unknown target node and Rejected with the reason for a non-migratable VM', async () => {
    const t = setup();
    await expect(t.cluster.migrateVm('default/plain', { fromNodeId: '1', toNodeId: '9' })).rejects.toMatchObject({ code: 'NotFound' });
    await expect(t.cluster.migrateVm('default/pinned', { fromNodeId: '3' })).rejects.toMatchObject({
      code: 'Rejected',
      message: expect.stringContaining('HostDeviceNotLiveMigratable'),
    });
  });

  it('joins a repeated request in flight and refuses a different action with Conflict', async () => {
    const t = setup();
    const first = t.cluster.migrateVm('default/plain', { fromNodeId: '1' });
    const again = t.cluster.migrateVm('default/plain', { fromNodeId: '1' });
    await expect(t.cluster.stopVm('default/plain')).rejects.toMatchObject({ code: 'Conflict' });
    await t.after(800, Promise.all([first, again]));
    expect(vmEvents(t.events, 'default/plain')).toHaveLength(2);
  });

  it('fails with Unavailable, keeping the VM running at the source, when the target goes offline meanwhile', async () => {
    const t = setup();
    const move = t.cluster.migrateVm('default/plain', { fromNodeId: '1', toNodeId: '2' });
    await t.clock.advance(100);
    await t.cluster.simulation.setNodeOnline('2', false);
    await expect(t.after(800, move)).rejects.toMatchObject({ code: 'Unavailable' });
    expect(await t.cluster.getVm('default/plain')).toMatchObject({ nodeId: '1', status: 'Running' });
  });
});

describe('stopVm', () => {
  it('sets Halted at once, shows Stopping for the stop latency, then Stopped off any node', async () => {
    const t = setup({ latenciesMs: { stop: 400 } });
    const stop = t.cluster.stopVm('default/plain');
    await t.clock.advance(399);
    expect(await t.cluster.getVm('default/plain')).toMatchObject({ runStrategy: 'Halted', status: 'Stopping', nodeId: '1' });
    await t.after(1, stop);
    expect(await t.cluster.getVm('default/plain')).toMatchObject({ runStrategy: 'Halted', status: 'Stopped', nodeId: null });
  });

  it('on a VM that is already stopped only sets Halted, without waiting', async () => {
    const t = setup();
    await t.after(1000, t.cluster.stopVm('default/plain'));
    await t.after(1000, t.cluster.startVm('default/plain', { runStrategy: 'Manual' }));
    await t.cluster.simulation.restartNode((await t.cluster.getVm('default/plain'))!.nodeId!);
    // Manual VMs stay down after their node restarted: stopped but not Halted.
    expect(await t.cluster.getVm('default/plain')).toMatchObject({ status: 'Stopped', runStrategy: 'Manual' });
    t.events.length = 0;
    await t.cluster.stopVm('default/plain');
    expect(await t.cluster.getVm('default/plain')).toMatchObject({ status: 'Stopped', runStrategy: 'Halted' });
    await t.clock.advance(0);
    expect(vmEvents(t.events, 'default/plain')).toHaveLength(1);
  });
});

describe('startVm', () => {
  it('starts on the requested node with the run strategy asked, showing Starting first', async () => {
    const t = setup({ latenciesMs: { start: 500 } });
    const start = t.cluster.startVm('default/halted', { runStrategy: 'RerunOnFailure', nodeId: '3' });
    await t.clock.advance(499);
    expect(await t.cluster.getVm('default/halted')).toMatchObject({ status: 'Starting', nodeId: '3', runStrategy: 'RerunOnFailure' });
    await t.after(1, start);
    expect(await t.cluster.getVm('default/halted')).toMatchObject({ status: 'Running', nodeId: '3' });
  });

  it('falls back to another schedulable node when the requested one is cordoned', async () => {
    const t = setup();
    await t.after(100, t.cluster.cordonNode('3'));
    await t.after(1000, t.cluster.startVm('default/halted', { runStrategy: 'Always', nodeId: '3' }));
    // Node 2 is the least loaded schedulable node.
    expect((await t.cluster.getVm('default/halted'))?.nodeId).toBe('2');
  });

  it('rejects Conflict and changes nothing when no node can take the VM', async () => {
    const t = setup();
    await t.after(1000, t.cluster.stopVm('default/gpu'));
    await t.after(100, t.cluster.cordonNode('3'));
    const before = await t.cluster.getVm('default/gpu');
    t.events.length = 0;
    await expect(t.cluster.startVm('default/gpu', { runStrategy: 'Always' })).rejects.toMatchObject({ code: 'Conflict' });
    expect(await t.cluster.getVm('default/gpu')).toEqual(before);
    expect(before?.runStrategy).toBe('Halted');
    await t.clock.advance(0);
    expect(t.events).toEqual([]);
  });

  it('rejects a Halted run strategy, and only updates the run strategy of a running VM', async () => {
    const t = setup();
    await expect(t.cluster.startVm('default/halted', { runStrategy: 'Halted' })).rejects.toMatchObject({ code: 'Rejected' });
    await t.cluster.startVm('default/plain', { runStrategy: 'RerunOnFailure' });
    expect(await t.cluster.getVm('default/plain')).toMatchObject({ status: 'Running', nodeId: '1', runStrategy: 'RerunOnFailure' });
  });
});

describe('metadata', () => {
  it('mirrors the strategy label into the VM labels so label selectors find it', async () => {
    const t = setup();
    await t.cluster.setVmMaintenanceStrategyLabel('default/plain', 'Shutdown');
    const found = await t.cluster.listVms({ labels: { [MAINTENANCE_STRATEGY_LABEL]: 'Shutdown' } });
    expect(found.map((v) => v.id)).toEqual(['default/plain']);
    await t.cluster.setVmMaintenanceStrategyLabel('default/plain', null);
    expect((await t.cluster.getVm('default/plain'))?.labels).not.toHaveProperty(MAINTENANCE_STRATEGY_LABEL);
  });
});
