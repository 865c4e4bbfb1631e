import type { ClusterBackend } from './backend.ts';
import { BackendError } from './errors.ts';
import { combinedPart, OPTIONAL_PARTS } from './parts.ts';
import type { ClusterNode } from './types.ts';
import { compareNodeIds } from '../domain/compare.ts';

const AVAILABILITY_RANK = { ACTIVE: 0, WARMING_UP: 1, OFFLINE: 2 } as const;

/**
 * A node known to several backends (a hyperconverged host that is both a Kubernetes node
 * and a pageserver) is one node: roles and labels are joined and the least available
 * state wins, so nothing is scheduled on a host that one side considers down.
 */
function mergeNodes(a: ClusterNode, b: ClusterNode): ClusterNode {
  return {
    ...a,
    zone: a.zone ?? b.zone,
    roles: [...new Set([...a.roles, ...b.roles])],
    availability: AVAILABILITY_RANK[a.availability] >= AVAILABILITY_RANK[b.availability] ? a.availability : b.availability,
    cordoned: a.cordoned || b.cordoned,
    labels: { ...b.labels, ...a.labels },
  };
}

function mergeNodeLists(lists: ClusterNode[][]): ClusterNode[] {
  const byId = new Map<string, ClusterNode>();
  for (const node of lists.flat()) {
    const seen = byId.get(node.id);
    byId.set(node.id, seen ? mergeNodes(seen, node) : node);
  }
  return [...byId.values()].sort((x, y) => compareNodeIds(x.id, y.id));
}

/**
 * Joins the configured backends into one. With a single backend it is returned as is.
 * Otherwise at most one backend serves VMs and at most one serves shards (the plugin
 * registry refuses other configs): workload calls go to that one, node reads and cordons
 * to all, and each optional part to the backend its entry in BACKEND_PARTS names.
 */
export function combineBackends(backends: ClusterBackend[]): ClusterBackend {
  if (backends.length === 1) return backends[0]!;
  const vm = backends.find((b) => b.capabilities.vms);
  const shard = backends.find((b) => b.capabilities.shards);
  const needVm = (): ClusterBackend => {
    if (!vm) throw new BackendError('Rejected', 'no configured backend serves VMs');
    return vm;
  };
  const needShard = (): ClusterBackend => {
    if (!shard) throw new BackendError('Rejected', 'no configured backend serves tenant shards');
    return shard;
  };
  const composite: ClusterBackend = {
    name: backends.map((b) => b.name).join('+'),
    capabilities: { vms: Boolean(vm), shards: Boolean(shard) },
    listNodes: async () => mergeNodeLists(await Promise.all(backends.map((b) => b.listNodes()))),
    getNode: async (id) => (await composite.getNodes([id]))[0] ?? null,
    async getNodes(ids) {
      const results = await Promise.all(backends.map((b) => b.getNodes(ids)));
      return ids.map((_, i) => {
        const found = results.map((r) => r[i]).filter((n): n is ClusterNode => Boolean(n));
        return found.length ? found.reduce(mergeNodes) : null;
      });
    },
    async cordonNode(id) {
      await forEachOwner(backends, id, (b) => b.cordonNode(id));
    },
    async uncordonNode(id) {
      await forEachOwner(backends, id, (b) => b.uncordonNode(id));
    },
    listVms: async (f) => (vm ? vm.listVms(f) : []),
    getVm: async (id) => (vm ? vm.getVm(id) : null),
    getVms: async (ids) => (vm ? vm.getVms(ids) : ids.map(() => null)),
    migrateVm: async (id, o) => needVm().migrateVm(id, o),
    stopVm: async (id) => needVm().stopVm(id),
    startVm: async (id, o) => needVm().startVm(id, o),
    setVmMaintenanceStrategyLabel: async (id, v) => needVm().setVmMaintenanceStrategyLabel(id, v),
    setVmTracking: async (id, t) => needVm().setVmTracking(id, t),
    listShards: async (f) => (shard ? shard.listShards(f) : []),
    getShard: async (id) => (shard ? shard.getShard(id) : null),
    getShards: async (ids) => (shard ? shard.getShards(ids) : ids.map(() => null)),
    getSecondaryStatus: async (id, node) => needShard().getSecondaryStatus(id, node),
    cutOverShard: async (id, o) => needShard().cutOverShard(id, o),
    watch(listener) {
      const stops = backends.map((b) => b.watch(listener));
      return () => stops.forEach((stop) => stop());
    },
    async close() {
      await Promise.allSettled(backends.map((b) => b.close()));
    },
  };
  // The optional parts, each from the backend the table (parts.ts) names as its owner.
  const parts = Object.fromEntries(OPTIONAL_PARTS.map((part) => [part, combinedPart(part, backends)]).filter(([, value]) => value !== undefined));
  return Object.assign(composite, parts);
}

async function forEachOwner(backends: ClusterBackend[], nodeId: string, act: (b: ClusterBackend) => Promise<void>) {
  const owners = [];
  for (const b of backends) if (await b.getNode(nodeId)) owners.push(b);
  if (!owners.length) throw new BackendError('NotFound', `node ${nodeId} not found`, { kind: 'node', id: nodeId });
  await Promise.all(owners.map(act));
}
