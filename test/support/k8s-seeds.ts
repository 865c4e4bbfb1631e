import type { K8sSim } from '../../simulators/kubernetes/index.ts';

/** Worker nodes n1–n3. */
export function threeNodes(sim: K8sSim): void {
  for (const n of ['n1', 'n2', 'n3']) sim.addNode(n, { roles: ['worker'] });
}

/** k8s:scenario-1's five pods on n1: a DaemonSet's, a mirror pod, one with emptyDir, one without a controller, a ReplicaSet's. */
export function fivePodsOnN1(sim: K8sSim): void {
  sim.addPod({ name: 'agent-x', nodeName: 'n1', owner: { kind: 'DaemonSet', name: 'agent' }, labels: { app: 'agent' } });
  sim.addPod({ name: 'etcd-n1', nodeName: 'n1', annotations: { 'kubernetes.io/config.mirror': 'abc' }, labels: { component: 'etcd' } });
  sim.addPod({ name: 'cache-1', nodeName: 'n1', owner: { kind: 'ReplicaSet', name: 'cache' }, labels: { app: 'cache' }, emptyDir: true });
  sim.addPod({ name: 'lonely', nodeName: 'n1', labels: { app: 'lonely' } });
  sim.addPod({ name: 'web-1', nodeName: 'n1', owner: { kind: 'ReplicaSet', name: 'web' }, labels: { app: 'web' } });
}
