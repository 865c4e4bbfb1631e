import DataLoader from 'dataloader';
import type { ClusterBackend } from '../cluster/backend.ts';
import type { ClusterNode, ClusterShard, ClusterVm } from '../cluster/types.ts';
import type { RemainingWorkload } from '../domain/remaining.ts';
import type { RemainingReader } from '../operations/core/remaining-reader.ts';

/**
 * Per-request batching of backend reads: however many rows a query returns, the nodes,
 * VMs and shards they point at are fetched with one batched call per kind and tick.
 */
export function createLoaders({ backend, remaining }: { backend: ClusterBackend; remaining: RemainingReader }) {
  let allNodes: Promise<ClusterNode[]> | undefined;
  return {
    /** What would lose service if the node restarted now: one read per kind for all the nodes a query asks about. */
    remaining: new DataLoader<string, RemainingWorkload[]>((ids) => remaining.ofNodes(ids)),
    /** Every node, read once per request (for fields that judge a VM against the whole cluster). */
    allNodes: () => (allNodes ??= backend.listNodes()),
    node: new DataLoader<string, ClusterNode | null>((ids) => backend.getNodes(ids)),
    vm: new DataLoader<string, ClusterVm | null>((ids) => (backend.capabilities.vms ? backend.getVms(ids) : Promise.resolve(ids.map(() => null)))),
    shard: new DataLoader<string, ClusterShard | null>((ids) => backend.getShards(ids)),
  };
}

export type Loaders = ReturnType<typeof createLoaders>;

/** Seeds the loaders with rows a list call already returned, so their fields cost no further read. */
export function primeNodes(loaders: Loaders, nodes: ClusterNode[]): ClusterNode[] {
  for (const node of nodes) loaders.node.prime(node.id, node);
  return nodes;
}
