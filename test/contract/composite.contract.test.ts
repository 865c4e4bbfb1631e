import { afterEach } from 'vitest';
import { combineBackends } from '../../src/cluster/composite.ts';
import { createKubevirtBackend } from '../../plugins/kubevirt/index.ts';
import { K8sSim } from '../../simulators/kubernetes/index.ts';
import { shardIdOf, type SimShardSpec } from '../../simulators/pageserver/index.ts';
import { caughtUp } from '../support/kubevirt-app.ts';
import { startSimCluster, type SimCluster } from '../support/pageserver-cluster.ts';
import { describePartContracts } from './part-contracts.ts';

/**
 * The composite of kubevirt + pageserver (the simulator's `--tenants` config) provides the
 * parts of both: the Kubernetes ones from kubevirt, the shard controls from pageserver, and
 * each keeps its contract through the composite (issue 26).
 */
let cluster: SimCluster | undefined;
afterEach(() => cluster?.safety.assertSafe());

const withSecondary: SimShardSpec = { tenant: 1, attached: 1, secondaries: [2] };

async function world(hosts: Record<number, string>) {
  const sim = await K8sSim.start({ msPerGraceSecond: 1 });
  for (const n of ['n1', 'n2', 'n3']) sim.addNode(n, { roles: ['worker'] });
  sim.addPod({ name: 'api-1', nodeName: 'n1', owner: { kind: 'ReplicaSet', name: 'api' }, labels: { app: 'api' } });
  const kubevirt = await createKubevirtBackend({ kubeconfigPath: sim.kubeconfigFile() });
  const c = (cluster = await startSimCluster({ nodes: [{ id: 1 }, { id: 2 }, { id: 3 }], shards: [withSecondary] }));
  const pageserver = await c.startController({}, { hosts });
  const backend = combineBackends([kubevirt, pageserver]);
  return {
    backend,
    advance: async (ms: number) => {
      await c.advance(ms, Math.min(ms, 100));
      await new Promise((resolve) => setTimeout(resolve, 5));
    },
    quiesce: async () => {
      await caughtUp(sim, kubevirt);
      await c.idle();
    },
    async takeNodeOffline(nodeId: string) {
      c.sim(Number(backend.nodeAliases?.external(nodeId) ?? nodeId)).stopAnswering();
      await c.until(
        async () =>
          (await backend.getNode(nodeId))?.sides?.some((s) => s.backend === 'pageserver' && s.availability === 'OFFLINE') ??
          (await backend.getNode(nodeId))?.availability === 'OFFLINE',
        { what: `node ${nodeId} OFFLINE` },
      );
    },
    actionTimeoutMs: 120_000,
    cleanup: async () => {
      await kubevirt.close();
      await sim.close();
      await c.close();
    },
  };
}

describePartContracts(
  'kubevirt + pageserver on the same hosts (pageservers[].kubernetesNode)',
  ['podDrain', 'nodeMaintenance', 'confirmNodeDown', 'failover', 'placement', 'registry', 'beforeLeading', 'nodeAliases', 'snapshot'],
  async () => {
    const shard = { shard: shardIdOf(withSecondary), from: 'n1', to: 'n2' };
    return {
      ...(await world({ 1: 'n1', 2: 'n2', 3: 'n3' })),
      unknownNode: 'no-such-node',
      parts: {
        podDrain: { node: 'n1', pod: { namespace: 'default', name: 'api-1' } },
        nodeMaintenance: { node: 'n2' },
        failover: shard,
        placement: shard,
        registry: { node: 'n3' },
      },
    };
  },
);

describePartContracts(
  'kubevirt + pageserver on separate hosts',
  ['podDrain', 'nodeMaintenance', 'confirmNodeDown', 'failover', 'placement', 'registry', 'beforeLeading', 'hosts', 'snapshot'],
  async () => {
    const shard = { shard: shardIdOf(withSecondary), from: '1', to: '2' };
    return {
      ...(await world({})),
      unknownNode: '99',
      parts: {
        podDrain: { node: 'n1', pod: { namespace: 'default', name: 'api-1' } },
        nodeMaintenance: { node: 'n2' },
        failover: shard,
        placement: shard,
        registry: { node: '3' },
      },
    };
  },
);
