import type { ClusterBackend } from './backend.ts';
import { BackendError } from './errors.ts';
import { aliasNodes, nodeAliases } from './hyperconverged.ts';
import type { NodeMaintenanceBackend } from './node-maintenance.ts';
import { combinedPart, OPTIONAL_PARTS, partProviders } from './parts.ts';
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
    sides: [...(a.sides ?? []), ...(b.sides ?? [])],
    zone: a.zone ?? b.zone,
    roles: [...new Set([...a.roles, ...b.roles])],
    availability: AVAILABILITY_RANK[a.availability] >= AVAILABILITY_RANK[b.availability] ? a.availability : b.availability,
    cordoned: a.cordoned || b.cordoned,
    labels: { ...b.labels, ...a.labels },
  };
}

/** The node as one backend sees it, naming that backend's side. */
const sided = (backend: ClusterBackend, node: ClusterNode): ClusterNode => ({
  ...node,
  sides: [{ backend: backend.name, availability: node.availability, ...(backend.capabilities.shards ? { servesShards: true as const } : {}) }],
});

/** `sides` says something only where several backends know the node. */
function single(node: ClusterNode): ClusterNode {
  if ((node.sides?.length ?? 0) > 1) return node;
  const { sides: _, ...rest } = node;
  return rest;
}

function mergeNodeLists(lists: ClusterNode[][]): ClusterNode[] {
  const byId = new Map<string, ClusterNode>();
  for (const node of lists.flat()) {
    const seen = byId.get(node.id);
    byId.set(node.id, seen ? mergeNodes(seen, node) : node);
  }
  return [...byId.values()].map(single).sort((x, y) => compareNodeIds(x.id, y.id));
}

/**
 * Joins the configured backends into one. With a single backend it is returned as is.
 * Otherwise at most one backend serves VMs and at most one serves shards (the plugin
 * registry refuses other configs): workload calls go to that one, node reads and cordons
 * to all, and each optional part to the backend its entry in BACKEND_PARTS names.
 */
export function combineBackends(members: ClusterBackend[]): ClusterBackend {
  if (members.length === 1) return members[0]!;
  const backends = members.map(hostedOnKubernetes);
  /** Each backend's last word on each node, to merge a change of one side with the others' (events carry one side). */
  const seen = new Map(backends.map((b) => [b, new Map<string, ClusterNode>()]));
  const remember = (b: ClusterBackend, node: ClusterNode | null) => {
    if (node) seen.get(b)!.set(node.id, node);
    return node && sided(b, node);
  };
  /** The node after a change of `b`'s side, merged in config order with what the other sides said last. */
  const mergedWithOthers = (b: ClusterBackend, node: ClusterNode): ClusterNode | null => {
    const sides = backends.flatMap((x) => {
      const n = x === b ? node : seen.get(x)!.get(node.id);
      return n ? [sided(x, n)] : [];
    });
    return single(sides.reduce(mergeNodes));
  };
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
    listNodes: async () => mergeNodeLists(await Promise.all(backends.map(async (b) => (await b.listNodes()).map((n) => remember(b, n)!)))),
    getNode: async (id) => (await composite.getNodes([id]))[0] ?? null,
    async getNodes(ids) {
      const results = await Promise.all(backends.map(async (b) => (await b.getNodes(ids)).map((n) => remember(b, n))));
      return ids.map((_, i) => {
        const found = results.map((r) => r[i]).filter((n): n is ClusterNode => Boolean(n));
        return found.length ? single(found.reduce(mergeNodes)) : null;
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
      const stops = backends.map((b) =>
        b.watch((event) => {
          if (event.type === 'nodeChanged') {
            remember(b, event.node);
            return listener({ type: 'nodeChanged', node: mergedWithOthers(b, event.node)! });
          }
          if (event.type === 'nodeRemoved') seen.get(b)!.delete(event.nodeId);
          return listener(event);
        }),
      );
      return () => stops.forEach((stop) => stop());
    },
    async close() {
      await Promise.allSettled(backends.map((b) => b.close()));
    },
  };
  // The optional parts, each from the backend the table (parts.ts) names as its owner.
  const parts = Object.fromEntries(OPTIONAL_PARTS.map((part) => [part, combinedPart(part, backends)]).filter(([, value]) => value !== undefined));
  if (parts.nodeMaintenance) parts.nodeMaintenance = clearingEverySide(parts.nodeMaintenance as NodeMaintenanceBackend, backends);
  return Object.assign(composite, parts);
}

/**
 * The maintenance marks are one backend's (Kubernetes), but a maintenance cordons the node on
 * every backend that has it (a hyperconverged host's pageserver too): clearing the marks
 * uncordons the node on the others as well, or the host would stay cordoned on its shard side
 * after its maintenance (found by the hyperconverged case of the rehearsal benchmark, issue 33).
 */
function clearingEverySide(marks: NodeMaintenanceBackend, backends: ClusterBackend[]): NodeMaintenanceBackend {
  const [owner] = partProviders('nodeMaintenance', backends);
  const others = backends.filter((b) => b !== owner);
  const clearMaintenance = async (nodeId: string) => {
    await marks.clearMaintenance(nodeId);
    await Promise.all(
      others.map(async (b) => {
        if (await b.getNode(nodeId)) await b.uncordonNode(nodeId);
      }),
    );
  };
  return new Proxy(marks, {
    get(target, key) {
      if (key === 'clearMaintenance') return clearMaintenance;
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/**
 * Issue 26: a shard backend whose nodes run on Kubernetes nodes (`hosts`) is shown under the
 * hosts' names, so that each host is one node (src/cluster/hyperconverged.ts).
 */
function hostedOnKubernetes(backend: ClusterBackend): ClusterBackend {
  const hosts = backend.hosts?.() ?? {};
  return Object.keys(hosts).length ? aliasNodes(backend, nodeAliases(hosts)) : backend;
}

async function forEachOwner(backends: ClusterBackend[], nodeId: string, act: (b: ClusterBackend) => Promise<void>) {
  const owners = [];
  for (const b of backends) if (await b.getNode(nodeId)) owners.push(b);
  if (!owners.length) throw new BackendError('NotFound', `node ${nodeId} not found`, { kind: 'node', id: nodeId });
  await Promise.all(owners.map(act));
}
