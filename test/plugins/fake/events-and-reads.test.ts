import { describe, expect, it } from 'vitest';
import type { ClusterEvent } from '../../../src/cluster/types.ts';
import { setup } from './setup.ts';

describe('event delivery', () => {
  it('delivers asynchronously, after the call returned, in the order of the changes', async () => {
    const t = setup();
    const seen: string[] = [];
    t.cluster.watch((e) => seen.push(e.type === 'vmChanged' ? `${e.vm.id}:${e.vm.maintenanceStrategyLabel}` : e.type));
    const done = t.cluster.setVmMaintenanceStrategyLabel('default/plain', 'Shutdown');
    expect(seen).toEqual([]);
    await done;
    await t.cluster.setVmMaintenanceStrategyLabel('default/plain', 'Migrate');
    await t.cluster.setVmMaintenanceStrategyLabel('default/gpu', 'Shutdown');
    await t.clock.advance(0);
    expect(seen).toEqual(['default/plain:Shutdown', 'default/plain:Migrate', 'default/gpu:Shutdown']);
  });

  it('a listener that throws does not keep events from the others, and is reported', async () => {
    const errors: unknown[] = [];
    const t = setup({ onListenerError: (e) => errors.push(e) });
    t.cluster.watch(() => {
      throw new Error('listener bug');
    });
    const after: ClusterEvent[] = [];
    t.cluster.watch((e) => after.push(e));
    await t.cluster.setVmTracking('default/plain', { nodeName: 'node-1', strategy: 'Shutdown', savedRunStrategy: null });
    await t.clock.advance(0);
    expect(after).toHaveLength(1);
    expect(errors).toEqual([new Error('listener bug')]);
  });

  it('each listener gets its own copy of an event', async () => {
    const t = setup();
    let second: ClusterEvent | undefined;
    t.cluster.watch((e) => {
      if (e.type === 'vmChanged') e.vm.labels.tampered = 'yes';
    });
    t.cluster.watch((e) => (second = e));
    await t.cluster.setVmMaintenanceStrategyLabel('default/plain', 'Shutdown');
    await t.clock.advance(0);
    expect(second?.type === 'vmChanged' && second.vm.labels).not.toHaveProperty('tampered');
    expect((await t.cluster.getVm('default/plain'))?.labels).not.toHaveProperty('tampered');
  });
});

describe('batched reads and call counts', () => {
  it('counts one call per batch, whatever the number of ids', async () => {
    const t = setup();
    await t.cluster.getNodes(['1', '2', '3', 'x']);
    await t.cluster.getVms(['default/plain', 'default/gpu']);
    await t.cluster.getShards([]);
    await t.cluster.getNode('1');
    expect(Object.fromEntries(t.cluster.callCounts)).toEqual({ watch: 1, getNodes: 1, getVms: 1, getShards: 1, getNode: 1 });
  });

  it('lists in a stable id order, numeric ids numerically', async () => {
    const t = setup({ topology: { nodes: [{ id: '10' }, { id: '9' }, { id: '1' }] } });
    expect((await t.cluster.listNodes()).map((n) => n.id)).toEqual(['1', '9', '10']);
  });
});
