import { VirtualClock } from '../../support/virtual-clock.ts';
import type { ClusterEvent } from '../../../src/cluster/types.ts';
import { createSimulatedCluster, type CreateSimulatedClusterOptions, type TopologySpec } from '../../../plugins/fake/index.ts';

/**
 * Three nodes in two zones (node 3 has a GPU), VMs on node 1, and two shards attached to
 * node 1 with their secondaries on nodes 2 and 3. Small enough to reason about per test.
 */
export const smallTopology = (): TopologySpec => ({
  nodes: [
    { id: '1', zone: 'zone-a' },
    { id: '2', zone: 'zone-a' },
    { id: '3', zone: 'zone-b', labels: { gpu: 'true' } },
  ],
  vms: [
    { name: 'plain', nodeId: '1' },
    { name: 'gpu', nodeId: '1', nodeSelector: { gpu: 'true' } },
    { name: 'halted', nodeId: null, runStrategy: 'Halted' },
    { name: 'manual', nodeId: '1', runStrategy: 'Manual' },
    { name: 'pinned', nodeId: '3', liveMigratable: false, liveMigratableReason: 'HostDeviceNotLiveMigratable' },
  ],
  shards: [
    { tenantId: 't1', attachedNodeId: '1', secondaries: [{ nodeId: '2' }], preferredZone: 'zone-a', sizeBytes: 1000 },
    { tenantId: 't2', attachedNodeId: '1', secondaries: [{ nodeId: '3', lagBytes: 400 }, { nodeId: '2' }], preferredZone: 'zone-b', sizeBytes: 1000 },
  ],
});

/** A simulated cluster on a virtual clock that records every event it emits. */
export function setup(options: CreateSimulatedClusterOptions = {}) {
  const clock = new VirtualClock();
  const cluster = createSimulatedCluster({ topology: smallTopology(), clock, ...options });
  const events: ClusterEvent[] = [];
  cluster.watch((e) => events.push(e));
  return {
    clock,
    cluster,
    events,
    /** Advances the clock by `ms`, then returns the outcome of `promise` (which must have settled). */
    async after<T>(ms: number, promise: Promise<T>): Promise<T> {
      let settled = false;
      promise.then(
        () => (settled = true),
        () => (settled = true),
      );
      await clock.advance(ms);
      if (!settled) throw new Error(`still pending after ${ms} ms`);
      return promise;
    },
    /** Whether `promise` is still pending once queued work has run. */
    async pending(promise: Promise<unknown>): Promise<boolean> {
      let settled = false;
      promise.then(
        () => (settled = true),
        () => (settled = true),
      );
      await clock.advance(0);
      return !settled;
    },
  };
}

export const vmEvents = (events: ClusterEvent[], id: string) => events.flatMap((e) => (e.type === 'vmChanged' && e.vm.id === id ? [e.vm] : []));
