import { createKubevirtBackend } from '../../plugins/kubevirt/index.ts';
import { K8sSim } from '../../simulators/kubernetes/index.ts';
import { caughtUp, eventually } from '../support/kubevirt-app.ts';
import { describeClusterBackendContract } from './cluster-backend-contract.ts';

describeClusterBackendContract('kubevirt (against the Kubernetes API simulator)', async () => {
  const sim = await K8sSim.start();
  sim.addNode('node-a', { zone: 'zone-1', roles: ['control-plane', 'etcd'] });
  sim.addNode('node-b', { zone: 'zone-2', roles: ['worker'] });
  sim.addNode('node-c', { zone: 'zone-2', roles: ['worker'] });
  sim.addVm({ namespace: 'prod', name: 'web-1', labels: { app: 'web' }, nodeName: 'node-a' });
  sim.addVm({ namespace: 'prod', name: 'gpu-worker', labels: { app: 'ml' }, nodeName: 'node-a', gpu: true });
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
});
