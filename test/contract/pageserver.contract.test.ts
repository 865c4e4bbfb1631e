import { afterEach } from 'vitest';
import { shardIdOf, type SimShardSpec } from '../../simulators/pageserver/index.ts';
import { startSimCluster, waitFor, type SimCluster } from '../support/pageserver-cluster.ts';
import { describeClusterBackendContract } from './cluster-backend-contract.ts';

let cluster: SimCluster | undefined;
afterEach(() => cluster?.safety.assertSafe());

describeClusterBackendContract('pageserver (three simulated pageservers over HTTP)', async () => {
  const withSecondary: SimShardSpec = { tenant: 1, shardNumber: 0, shardCount: 2, attached: 1, secondaries: [2] };
  cluster = await startSimCluster({
    nodes: [{ id: 1 }, { id: 2 }, { id: 3 }],
    shards: [withSecondary, { tenant: 1, shardNumber: 1, shardCount: 2, attached: 2, secondaries: [3] }, { tenant: 2, attached: 3, secondaries: [1] }],
  });
  const c = cluster;
  const backend = await c.startController();
  return {
    backend,
    advance: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    fixtures: {
      nodes: { source: '1', target: '2' },
      shards: { withSecondary: shardIdOf(withSecondary) },
      unknownIds: { node: '99' },
    },
    async takeNodeOffline(nodeId) {
      // A pageserver in trouble answers 503 to everything: heartbeats fail at once, with no timeout to wait for.
      c.sim(nodeId).inject({ kind: { status: 503 } });
      await waitFor(async () => (await backend.getNode(nodeId))?.availability === 'OFFLINE', { what: `node ${nodeId} OFFLINE` });
    },
    // The controller emits in the action itself (cut-over, cordon) before it resolves: only the delivery microtask is left.
    quiesce: () => new Promise((resolve) => setImmediate(resolve)),
    actionTimeoutMs: 120_000,
    cleanup: () => c.close(),
  };
});
