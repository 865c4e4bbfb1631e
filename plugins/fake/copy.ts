import type { ClusterEvent, ClusterNode, ClusterShard, ClusterVm } from '../../src/cluster/types.ts';

// Hand-written deep copies: callers must never hold references into the simulated state,
// and these are much cheaper than structuredClone for 10 000-shard lists.

export const copyNode = (n: ClusterNode): ClusterNode => ({ ...n, roles: [...n.roles], labels: { ...n.labels } });

export const copyVm = (vm: ClusterVm): ClusterVm => ({
  ...vm,
  labels: { ...vm.labels },
  volumes: vm.volumes.map((v) => ({ name: v.name, replicas: v.replicas.map((r) => ({ ...r })) })),
  nodeSelector: { ...vm.nodeSelector },
  requiredNodeAffinity: vm.requiredNodeAffinity.map((t) => ({
    matchExpressions: t.matchExpressions.map((e) => ({ ...e, values: [...e.values] })),
  })),
  tracking: vm.tracking && { ...vm.tracking },
});

export const copyShard = (s: ClusterShard): ClusterShard => ({ ...s, secondaryNodeIds: [...s.secondaryNodeIds] });

export function copyEvent(e: ClusterEvent): ClusterEvent {
  switch (e.type) {
    case 'nodeChanged':
      return { type: e.type, node: copyNode(e.node) };
    case 'vmChanged':
      return { type: e.type, vm: copyVm(e.vm) };
    case 'shardChanged':
      return { type: e.type, shard: copyShard(e.shard) };
    default:
      return { ...e };
  }
}
