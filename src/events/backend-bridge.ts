import type { ClusterBackend } from '../cluster/backend.ts';
import type { EventBus } from './bus.ts';

/** Feeds backend change events into the bus behind subscriptions. Returns the unsubscribe function. */
export function bridgeBackendEvents(backend: ClusterBackend, bus: EventBus): () => void {
  return backend.watch((event) => {
    switch (event.type) {
      case 'nodeChanged':
        bus.publish('nodeChanged', event.node);
        break;
      case 'vmChanged':
        bus.publish('workloadChanged', { kind: 'VM', id: event.vm.id, removed: false, vm: event.vm });
        break;
      case 'vmRemoved':
        bus.publish('workloadChanged', { kind: 'VM', id: event.vmId, removed: true, vm: null });
        break;
      case 'shardChanged':
        bus.publish('workloadChanged', { kind: 'SHARD', id: event.shard.id, removed: false, shard: event.shard });
        break;
      case 'nodeRemoved':
      case 'nodeReattached':
      case 'nodeLost':
        // Backends report the availability change itself as nodeChanged; these
        // lifecycle signals are for the operations engine, not for node subscribers.
        break;
    }
  });
}
