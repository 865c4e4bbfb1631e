/**
 * Hyperconverged hosts (issue 26): a pageserver that runs on a Kubernetes node is that node.
 * The shard backend keeps its own ids (Neon's integers); this wrapper shows it to the rest of
 * Lockkeeper under the host's name, translating every node id that goes in or comes out —
 * reads, actions, events and the shard-control parts — so that one node carries VMs, pods
 * and shards. A node of its own (no host) keeps its id.
 */
import type { ClusterBackend, NodeAliases, ShardFilter } from './backend.ts';
import { OPTIONAL_PARTS, type OptionalPart } from './parts.ts';
import type { ShardDetails, ShardPlacement } from './shard-control.ts';
import type { ClusterEvent, ClusterNode, ClusterShard } from './types.ts';

/** Two of a backend's nodes are said to run on one host. */
export class HostConflictError extends Error {
  override readonly name = 'HostConflictError';
}

/** Names the host for each aliased id; refuses a host named twice (two pageservers cannot be one node). */
export function nodeAliases(hosts: Record<string, string>): NodeAliases {
  const toName = new Map(Object.entries(hosts));
  const toId = new Map<string, string>();
  for (const [id, name] of toName) {
    const other = toId.get(name);
    if (other !== undefined) throw new HostConflictError(`pageservers ${other} and ${id} are both on Kubernetes node ${name}: one host runs one pageserver`);
    toId.set(name, id);
  }
  return {
    external: (nodeId) => toId.get(nodeId) ?? nodeId,
    internal: (externalId) => toName.get(externalId) ?? externalId,
  };
}

/** `backend` with its node ids shown as `aliases.internal` says. */
export function aliasNodes(backend: ClusterBackend, aliases: NodeAliases): ClusterBackend {
  const out = (id: string) => aliases.internal(id);
  const into = (id: string) => aliases.external(id);
  const node = (n: ClusterNode): ClusterNode => ({ ...n, id: out(n.id), name: out(n.id) === n.id ? n.name : out(n.id) });
  const shard = (s: ClusterShard): ClusterShard => ({ ...s, attachedNodeId: out(s.attachedNodeId), secondaryNodeIds: s.secondaryNodeIds.map(out) });
  const filter = (f?: ShardFilter): ShardFilter | undefined =>
    f && {
      ...f,
      ...(f.attachedNodeId !== undefined && { attachedNodeId: into(f.attachedNodeId) }),
      ...(f.secondaryNodeId !== undefined && { secondaryNodeId: into(f.secondaryNodeId) }),
    };
  const event = (e: ClusterEvent): ClusterEvent => {
    switch (e.type) {
      case 'nodeChanged':
        return { type: 'nodeChanged', node: node(e.node) };
      case 'nodeRemoved':
      case 'nodeReattached':
      case 'nodeLost':
        return { ...e, nodeId: out(e.nodeId) };
      case 'shardChanged':
        return { type: 'shardChanged', shard: shard(e.shard) };
      default:
        return e;
    }
  };
  const placement = (p: ShardPlacement): ShardPlacement => ({ attachedNodeId: into(p.attachedNodeId), secondaryNodeIds: p.secondaryNodeIds.map(into) });
  const details = (d: ShardDetails | null): ShardDetails | null =>
    d && {
      ...d,
      generationNodeId: d.generationNodeId === null ? null : out(d.generationNodeId),
      observed: Object.fromEntries(Object.entries(d.observed).map(([id, v]) => [out(id), v])),
    };
  const moves = (o: { fromNodeId: string; toNodeId: string }) => ({ ...o, fromNodeId: into(o.fromNodeId), toNodeId: into(o.toNodeId) });

  const placementOf = (p: ShardPlacement): ShardPlacement => placement(p);
  // Every optional part says how its node ids are translated: a part added to the table without a line here does not compile.
  const parts: { [K in OptionalPart]: () => ClusterBackend[K] } = {
    pageVms: () => backend.pageVms && ((f, page) => backend.pageVms!({ ...f, ...(f.nodeId !== undefined && { nodeId: into(f.nodeId) }) }, page)),
    pageShards: () =>
      backend.pageShards &&
      (async (f, page) => {
        const p = await backend.pageShards!(filter(f)!, page);
        return { ...p, rows: p.rows.map(shard) };
      }),
    beforeLeading: () => backend.beforeLeading && (() => backend.beforeLeading!()),
    simulation: () => {
      const sim = backend.simulation;
      return (
        sim && {
          ...sim,
          restartNode: (id) => sim.restartNode(into(id)),
          setNodeOnline: (id, online) => sim.setNodeOnline(into(id), online),
          setSecondaryLag: (shardId, id, lag, rate) => sim.setSecondaryLag(shardId, into(id), lag, rate),
          setSecondaryHeatmapKnown: (shardId, id, known) => sim.setSecondaryHeatmapKnown(shardId, into(id), known),
          removeNode: (id) => sim.removeNode(into(id)),
        }
      );
    },
    failover: () =>
      backend.failover && {
        failOverShard: (id, o) => backend.failover!.failOverShard(id, moves(o)),
        setNodeAvailability: (id, a) => backend.failover!.setNodeAvailability(into(id), a),
      },
    placement: () =>
      backend.placement && {
        placeShard: (id, p, o) => backend.placement!.placeShard(id, placementOf(p), o),
        cancelReconcile: (id) => backend.placement!.cancelReconcile(id),
        setShardPolicy: (id, c) => backend.placement!.setShardPolicy(id, c),
        setPreferredZone: (id, z) => backend.placement!.setPreferredZone(id, z),
        describeShard: async (id) => details(await backend.placement!.describeShard(id)),
      },
    // Neon's registrations keep Neon's integer ids (the REST facade speaks them); only the calls are translated.
    registry: () =>
      backend.registry && {
        register: (r) => backend.registry!.register(r),
        registration: (id) => backend.registry!.registration(into(id)),
        tombstone: (id) => backend.registry!.tombstone(into(id)),
        forgetLocations: (id) => backend.registry!.forgetLocations(into(id)),
        tombstones: () => backend.registry!.tombstones(),
        removeTombstone: (id) => backend.registry!.removeTombstone(into(id)),
      },
    podDrain: () =>
      backend.podDrain && {
        listNodePods: (id, selector) => backend.podDrain!.listNodePods(into(id), selector),
        evictPod: (pod, grace) => backend.podDrain!.evictPod(pod, grace),
        podGone: (pod) => backend.podDrain!.podGone(pod),
        evictVmPod: (vmId, grace) => backend.podDrain!.evictVmPod(vmId, grace),
      },
    nodeMaintenance: () => {
      const m = backend.nodeMaintenance;
      return (
        m && {
          markMaintenance: (id, mark, o) => m.markMaintenance(into(id), mark, o),
          clearMaintenance: (id) => m.clearMaintenance(into(id)),
          cancelMigrations: async (id) => (await m.cancelMigrations(into(id))).map((c) => ({ ...c, nodeId: c.nodeId && out(c.nodeId) })),
          get delegate() {
            const d = m.delegate;
            return d && { controller: d.controller, reason: d.reason, observe: (id: string) => d.observe(into(id)) };
          },
        }
      );
    },
    confirmNodeDown: () => backend.confirmNodeDown && ((id) => backend.confirmNodeDown!(into(id))),
    // Applied here: the aliased backend names hosts itself.
    hosts: () => undefined,
    nodeAliases: () => aliases,
    // The member's own ids: its rehearsal loader loads them into that member's simulator, which speaks them.
    snapshot: () => backend.snapshot && (() => backend.snapshot!()),
  };

  const aliased: ClusterBackend = {
    name: backend.name,
    capabilities: backend.capabilities,
    listNodes: async () => (await backend.listNodes()).map(node),
    getNode: async (id) => {
      const n = await backend.getNode(into(id));
      return n && node(n);
    },
    getNodes: async (ids) => (await backend.getNodes(ids.map(into))).map((n) => n && node(n)),
    cordonNode: (id) => backend.cordonNode(into(id)),
    uncordonNode: (id) => backend.uncordonNode(into(id)),
    listVms: (f) => backend.listVms(f && { ...f, ...(f.nodeId !== undefined && { nodeId: into(f.nodeId) }) }),
    getVm: (id) => backend.getVm(id),
    getVms: (ids) => backend.getVms(ids),
    migrateVm: (id, o) => backend.migrateVm(id, { fromNodeId: into(o.fromNodeId), ...(o.toNodeId !== undefined && { toNodeId: into(o.toNodeId) }) }),
    stopVm: (id) => backend.stopVm(id),
    startVm: (id, o) => backend.startVm(id, { ...o, ...(o.nodeId !== undefined && { nodeId: into(o.nodeId) }) }),
    setVmMaintenanceStrategyLabel: (id, v) => backend.setVmMaintenanceStrategyLabel(id, v),
    setVmTracking: (id, t) => backend.setVmTracking(id, t),
    listShards: async (f) => (await backend.listShards(filter(f))).map(shard),
    getShard: async (id) => {
      const s = await backend.getShard(id);
      return s && shard(s);
    },
    getShards: async (ids) => (await backend.getShards(ids)).map((s) => s && shard(s)),
    getSecondaryStatus: (id, nodeId) => backend.getSecondaryStatus(id, into(nodeId)),
    cutOverShard: (id, o) =>
      backend.cutOverShard(id, { ...o, ...moves(o), ...(o.onProgress && { onProgress: (p) => o.onProgress!({ ...p, nodeId: p.nodeId && out(p.nodeId) }) }) }),
    watch: (listener) => backend.watch((e) => listener(event(e))),
    close: () => backend.close(),
  };
  for (const part of OPTIONAL_PARTS) {
    const value = parts[part]();
    if (value !== undefined) Object.assign(aliased, { [part]: value });
  }
  return aliased;
}
