import { afterEach } from 'vitest';
import { shardIdOf, type SimShardSpec } from '../../simulators/pageserver/index.ts';
import { startSimCluster, type SimCluster } from '../support/pageserver-cluster.ts';
import { describeClusterBackendContract, type ContractHarness } from './cluster-backend-contract.ts';
import { describePartContracts } from './part-contracts.ts';

let cluster: SimCluster | undefined;
afterEach(() => cluster?.safety.assertSafe());

const withSecondary: SimShardSpec = { tenant: 1, shardNumber: 0, shardCount: 2, attached: 1, secondaries: [2] };

async function harness(): Promise<ContractHarness> {
  cluster = await startSimCluster({
    nodes: [{ id: 1 }, { id: 2 }, { id: 3 }],
    shards: [withSecondary, { tenant: 1, shardNumber: 1, shardCount: 2, attached: 2, secondaries: [3] }, { tenant: 2, attached: 3, secondaries: [1] }],
  });
  const c = cluster;
  const backend = await c.startController();
  return {
    backend,
    advance: (ms) => c.advance(ms, Math.min(ms, 100)),
    fixtures: {
      nodes: { source: '1', target: '2' },
      shards: { withSecondary: shardIdOf(withSecondary) },
      unknownIds: { node: '99' },
    },
    async takeNodeOffline(nodeId) {
      c.sim(nodeId).stopAnswering();
      await c.until(async () => (await backend.getNode(nodeId))?.availability === 'OFFLINE', { what: `node ${nodeId} OFFLINE` });
    },
    actionTimeoutMs: 120_000,
    cleanup: () => c.close(),
  };
}

describeClusterBackendContract('pageserver (three simulated pageservers over HTTP)', harness);

describePartContracts(
  'pageserver (three simulated pageservers over HTTP)',
  ['failover', 'placement', 'registry', 'beforeLeading', 'hosts', 'snapshot'],
  async () => {
    const shard = { shard: shardIdOf(withSecondary), from: '1', to: '2' };
    return { ...(await harness()), unknownNode: '99', parts: { failover: shard, placement: shard, registry: { node: '3' } } };
  },
);
