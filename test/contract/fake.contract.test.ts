import { VirtualClock } from '../support/virtual-clock.ts';
import { createSimulatedCluster } from '../../plugins/fake/index.ts';
import { describeClusterBackendContract, type ContractHarness } from './cluster-backend-contract.ts';
import { describePartContracts } from './part-contracts.ts';

async function harness(): Promise<ContractHarness & { shardId: string }> {
  const clock = new VirtualClock();
  const backend = createSimulatedCluster({ topology: 'demo', clock });
  const [shard] = await backend.listShards({ attachedNodeId: '1', secondaryNodeId: '2' });
  return {
    backend,
    shardId: shard!.id,
    advance: (ms) => clock.advance(ms),
    fixtures: {
      nodes: { source: '1', target: '2' },
      vms: { migratable: 'prod/web-1', nonMigratable: 'prod/gpu-worker' },
      shards: { withSecondary: shard!.id },
    },
    cleanup: () => backend.close(),
  };
}

describeClusterBackendContract('fake (demo topology)', harness);

describePartContracts('fake (demo topology)', ['simulation', 'failover', 'pageVms', 'pageShards', 'snapshot'], async () => {
  const h = await harness();
  return {
    ...h,
    unknownNode: 'no-such-node',
    parts: { simulation: { node: '3' }, failover: { shard: h.shardId, from: '1', to: '2' } },
  };
});
