import { createKubevirtBackend } from '../../plugins/kubevirt/index.ts';
import { K8sSim } from '../../simulators/kubernetes/index.ts';
import { caughtUp, eventually } from '../support/kubevirt-app.ts';
import { describeClusterBackendContract, type ContractHarness } from './cluster-backend-contract.ts';
import { describePartContracts } from './part-contracts.ts';

async function harness(): Promise<ContractHarness> {
  const sim = await K8sSim.start({ msPerGraceSecond: 1 });
  sim.addNode('node-a', { zone: 'zone-1', roles: ['control-plane', 'etcd'] });
  sim.addNode('node-b', { zone: 'zone-2', roles: ['worker'] });
  sim.addNode('node-c', { zone: 'zone-2', roles: ['worker'] });
  sim.addVm({ namespace: 'prod', name: 'web-1', labels: { app: 'web' }, nodeName: 'node-a' });
  sim.addVm({ namespace: 'prod', name: 'gpu-worker', labels: { app: 'ml' }, nodeName: 'node-a', gpu: true });
  sim.addPod({ name: 'api-1', nodeName: 'node-b', owner: { kind: 'ReplicaSet', name: 'api' }, labels: { app: 'api' } });
  const backend = await createKubevirtBackend({ kubeconfigPath: sim.kubeconfigFile() });
  return {
    backend,
    advance: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    fixtures: {
      nodes: { source: 'node-a', target: 'node-b' },
      vms: { migratable: 'prod/web-1', nonMigratable: 'prod/gpu-worker' },
    },
    takeNodeOffline: async (nodeId) => {
      sim.setNodeReady(nodeId, false);
      await eventually(async () => (await backend.getNode(nodeId))?.availability === 'OFFLINE');
    },
    quiesce: () => caughtUp(sim, backend),
    actionTimeoutMs: 120_000,
    cleanup: async () => {
      await backend.close();
      await sim.close();
    },
  };
}

describeClusterBackendContract('kubevirt (against the Kubernetes API simulator)', harness);

describePartContracts('kubevirt (against the Kubernetes API simulator)', ['podDrain', 'nodeMaintenance', 'confirmNodeDown', 'snapshot'], async () => ({
  ...(await harness()),
  unknownNode: 'no-such-node',
  parts: { podDrain: { node: 'node-b', pod: { namespace: 'default', name: 'api-1' } }, nodeMaintenance: { node: 'node-c' } },
}));
