/**
 * Which nodes a VM may run on and which of them it goes to. One implementation for the
 * maintenance plan (predicted targets, vm:N3), the simulated cluster and the KubeVirt plugin:
 * a plan predicts the node the run is then given only while all three agree.
 *
 * Kubernetes semantics, because a real cluster's scheduler is what the plan predicts:
 * - nodeSelector: every key present on the node with an equal value (an equality label
 *   selector, ./labels.ts).
 * - required node affinity: terms ORed, expressions inside a term ANDed. An empty term
 *   list is no constraint (our shape cannot tell it from "no affinity"; the API server
 *   refuses an empty list anyway). A term with no expressions matches no node, as the
 *   Kubernetes API documents for NodeSelectorTerm.
 * - NotIn and DoesNotExist hold on a node without the key. An operator we do not model
 *   (Gt, Lt) matches nothing: refusing a node is safer than predicting a move the
 *   scheduler would refuse.
 */
import { compareNodeIds } from './compare.ts';
import { matchesLabels } from './labels.ts';

export const NODE_SELECTOR_OPERATORS = ['In', 'NotIn', 'Exists', 'DoesNotExist'] as const;
export type NodeSelectorOperator = (typeof NODE_SELECTOR_OPERATORS)[number];

export interface NodeSelectorRequirement {
  key: string;
  operator: NodeSelectorOperator;
  values: string[];
}

/** One term of a required node affinity: all its requirements must hold (terms are ORed). */
export interface NodeSelectorTerm {
  matchExpressions: NodeSelectorRequirement[];
}

/** What a VM asks of the node it runs on (Kubernetes nodeSelector + required node affinity). */
export interface PlacementConstraints {
  nodeSelector: Record<string, string>;
  requiredNodeAffinity: NodeSelectorTerm[];
}

type Labels = Readonly<Record<string, string>>;

export function matchesRequirement(labels: Labels, req: NodeSelectorRequirement): boolean {
  const has = Object.hasOwn(labels, req.key);
  switch (req.operator) {
    case 'In':
      return has && req.values.includes(labels[req.key]!);
    case 'NotIn':
      return !has || !req.values.includes(labels[req.key]!);
    case 'Exists':
      return has;
    case 'DoesNotExist':
      return !has;
    default:
      return false;
  }
}

function matchesTerm(labels: Labels, term: NodeSelectorTerm): boolean {
  return term.matchExpressions.length > 0 && term.matchExpressions.every((req) => matchesRequirement(labels, req));
}

function matchesRequiredAffinity(labels: Labels, terms: readonly NodeSelectorTerm[]): boolean {
  return terms.length === 0 || terms.some((term) => matchesTerm(labels, term));
}

export function matchesPlacement(labels: Labels, constraints: PlacementConstraints): boolean {
  return matchesLabels(labels, constraints.nodeSelector) && matchesRequiredAffinity(labels, constraints.requiredNodeAffinity);
}

interface PlacementCandidate {
  id: string;
  labels: Labels;
}

interface PlacementChoice<N> {
  /** Whether the node takes new workloads at all; each caller's node shape says it differently. */
  schedulable(node: N): boolean;
  /** VMs on the node, counting those already headed there. */
  load(nodeId: string): number;
  /** The node the VM leaves. */
  exclude?: string | null;
}

/**
 * Where a VM goes: a schedulable node that satisfies its constraints and is not excluded,
 * the least loaded first, then the lowest id (node order), so that the simulated cluster
 * is deterministic and the plan can predict it. Null when no node fits.
 */
export function pickNode<N extends PlacementCandidate>(constraints: PlacementConstraints, nodes: Iterable<N>, choice: PlacementChoice<NoInfer<N>>): N | null {
  let best: { node: N; load: number } | null = null;
  for (const node of nodes) {
    if (node.id === choice.exclude || !choice.schedulable(node) || !matchesPlacement(node.labels, constraints)) continue;
    const load = choice.load(node.id);
    if (!best || load < best.load || (load === best.load && compareNodeIds(node.id, best.node.id) < 0)) best = { node, load };
  }
  return best?.node ?? null;
}
