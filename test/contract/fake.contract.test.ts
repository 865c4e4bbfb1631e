import { VirtualClock } from '../support/virtual-clock.ts';
import { createSimulatedCluster } from '../../plugins/fake/index.ts';
import { describeClusterBackendContract } from './cluster-backend-contract.ts';

describeClusterBackendContract('fake (demo topology)', async () => {
  const clock = new VirtualClock();
  const backend = createSimulatedCluster({ topology: 'demo', clock });
  const [shard] = await backend.listShards({ attachedNodeId: '1', secondaryNodeId: '2' });
  return {
    backend,
    advance: (ms) => clock.advance(ms),
    fixtures: {
      nodes: { source: '1', target: '2' },
      vms: { migratable: 'prod/web-1', nonMigratable: 'prod/gpu-worker' },
      shards: { withSecondary: shard!.id },
    },
    cleanup: () => backend.close(),
  };
});
