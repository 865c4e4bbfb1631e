import type { ClusterNode, NodeSelectorRequirement, NodeSelectorTerm } from '../../src/cluster/types.ts';

/** What a VM asks of the node it runs on (Kubernetes nodeSelector + required node affinity). */
export interface PlacementConstraints {
  nodeSelector: Record<string, string>;
  requiredNodeAffinity: NodeSelectorTerm[];
}

/** Ids compare numerically where they are numbers, so node "10" sorts after node "9". */
// One collator for all comparisons: localeCompare with options builds a new one per call.
export const compareIds: (a: string, b: string) => number = new Intl.Collator('en', { numeric: true }).compare;

export function matchesRequirement(labels: Record<string, string>, req: NodeSelectorRequirement): boolean {
  const has = Object.hasOwn(labels, req.key);
  switch (req.operator) {
    case 'In':
      return has && req.values.includes(labels[req.key]!);
    case 'NotIn':
      // Kubernetes: NotIn also matches nodes that do not carry the key at all.
      return !has || !req.values.includes(labels[req.key]!);
    case 'Exists':
      return has;
    case 'DoesNotExist':
      return !has;
  }
}

/** Terms are ORed, requirements inside a term ANDed; no terms = no constraint (Kubernetes semantics). */
export function matchesConstraints(labels: Record<string, string>, c: PlacementConstraints): boolean {
  const selectorOk = Object.entries(c.nodeSelector).every(([k, v]) => labels[k] === v);
  if (!selectorOk) return false;
  if (c.requiredNodeAffinity.length === 0) return true;
  return c.requiredNodeAffinity.some((term) => term.matchExpressions.every((req) => matchesRequirement(labels, req)));
}

/** May new workloads be placed here? */
export const isSchedulable = (node: ClusterNode): boolean => node.availability === 'ACTIVE' && !node.cordoned;

/**
 * Picks where a VM goes: a schedulable node that satisfies its constraints and is not
 * excluded, the least loaded first, then the lowest id (deterministic for tests).
 */
export function pickNode(
  nodes: Iterable<ClusterNode>,
  constraints: PlacementConstraints,
  load: (nodeId: string) => number,
  exclude?: string,
): ClusterNode | null {
  let best: { node: ClusterNode; load: number } | null = null;
  for (const node of nodes) {
    if (node.id === exclude || !isSchedulable(node) || !matchesConstraints(node.labels, constraints)) continue;
    const l = load(node.id);
    if (!best || l < best.load || (l === best.load && compareIds(node.id, best.node.id) < 0)) best = { node, load: l };
  }
  return best?.node ?? null;
}
