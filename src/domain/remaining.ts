/**
 * "Done" is not "safe to power off": the one home of the rule that says what on a node
 * would lose service if it restarted now, and why each of those workloads is still there.
 *
 * An operation's end state (a maintenance COMPLETED, a drain SUCCEEDED) says that every
 * step has an outcome; a skipped shard is an outcome and is still attached. What decides
 * whether the node may be powered off is this list, read from the cluster itself: it is the
 * rollout's safety gate (rollout:O6), each node's `safeToRestart` and `remainingWorkloads`,
 * and the `remaining` an ending drain or maintenance records.
 *
 * A kind of workload is one more input here and one more value of REMAINING_KINDS. Pods
 * are judged the way the pod drain judges them (k8s:K1–K2, domain/pods/drain.ts): a pod the
 * drain would evict, or refuses to evict, still serves from the node; a pod the drain leaves
 * there by design (DaemonSet-managed under `ignoreDaemonSets`, mirror pods, pods past
 * `skipWaitForDeleteTimeoutSeconds`, a shutdown-class VM's pod) and finished pods do not count.
 */
import { classifyPod, POD_BLOCK_CAUSES, type DrainPod, type PodDrainOptions } from './pods/drain.ts';

export const REMAINING_KINDS = ['VM', 'SHARD', 'POD'] as const;
type RemainingKind = (typeof REMAINING_KINDS)[number];

export interface RemainingWorkload {
  kind: RemainingKind;
  id: string;
  /**
   * Machine-readable: `VM_RUNNING` / `VM_MIGRATING` / `VM_STARTING` / `VM_STOPPING` for VMs;
   * for shards the reason the last operation on the node left it (its step's skip or
   * failure reason, e.g. `SECONDARY_LAGGING`, `SHARD_POLICY_PAUSE`, `TRANSIENT`), else
   * `NO_SECONDARY` or `NOT_CUT_OVER`; for pods (`namespace/name`) why the last pod drain
   * left it (POD_LEFT_REASONS), else `POD_<cause>` when the drain refuses it (k8s:K3),
   * `POD_TERMINATING` or `POD_EVICTABLE`.
   */
  reason: string;
  /** For a person, without the id: where it still is, why, and what a restart would do. */
  message: string;
}

/** The reasons a shard gets when no operation said why it was left. */
export const SHARD_FALLBACK_REASONS: readonly string[] = ['NOT_CUT_OVER', 'NO_SECONDARY'];

/**
 * Why a maintenance's pod drain left a pod on the node (k8s:K6, k8s:K8), by its last state
 * there: a 429 naming a PodDisruptionBudget, a 429 without one (a webhook, or the API not
 * usable), another refusal, evicted but still terminating, or never answered.
 */
const POD_LEFT_REASONS = {
  PDB_BLOCKED: 'its eviction was refused by a PodDisruptionBudget',
  EVICTION_REFUSED: 'its eviction was refused (429) without a PodDisruptionBudget named',
  EVICTION_FAILED: 'its eviction failed',
  POD_TERMINATING: 'it was evicted and is still terminating',
  NOT_EVICTED: 'its eviction was never answered',
} as const;
export type PodLeftReason = keyof typeof POD_LEFT_REASONS;

/** The reasons the rule gives pods itself, from the pod as it is now (never taken from an operation's record). */
export const POD_OWN_REASONS: readonly string[] = ['POD_EVICTABLE', 'POD_TERMINATING', ...Object.keys(POD_BLOCK_CAUSES).map((c) => `POD_${c}`)];

/** What this rule needs of a VM (ClusterVm satisfies it). */
interface VmOnNode {
  id: string;
  nodeId: string | null;
  status: string;
}

/** What this rule needs of a shard (ClusterShard satisfies it). */
interface ShardOnNode {
  id: string;
  attachedNodeId: string;
  secondaryNodeIds: readonly string[];
}

export interface NodeWorkloads {
  vms: readonly VmOnNode[];
  shards: readonly ShardOnNode[];
  /**
   * On backends that run pods: each node's pods as the pod drain lists them (its candidate
   * selector, k8s:K1), with the options and time the drain would judge them by (k8s:K2, k8s:K4).
   */
  pods?: { byNode: ReadonlyMap<string, readonly DrainPod[]>; options: PodDrainOptions; now: number };
}

/**
 * What would lose service if node `nodeId` restarted now: every VM that runs there in any
 * state but Stopped, every shard attached there (a secondary elsewhere does not serve it
 * until it is cut over). `leftBecause` maps a workload id to the reason an operation left it
 * (a step's skip or failure reason); it refines the reason, never adds or hides a workload.
 * Workloads on other nodes in the input are ignored, so callers may pass a whole cluster.
 */
export function remainingWorkloads(nodeId: string, workloads: NodeWorkloads, leftBecause: ReadonlyMap<string, string> = new Map()): RemainingWorkload[] {
  const vms = workloads.vms
    .filter((vm) => vm.nodeId === nodeId && vm.status !== 'Stopped')
    .map((vm): RemainingWorkload => ({
      kind: 'VM',
      id: vm.id,
      reason: `VM_${vm.status.toUpperCase()}`,
      message: `still ${vm.status.toLowerCase()} on node ${nodeId}: a restart of the node stops it`,
    }));
  const shards = workloads.shards
    .filter((s) => s.attachedNodeId === nodeId)
    .map((s): RemainingWorkload => {
      const left = leftBecause.get(s.id);
      const fallback = s.secondaryNodeIds.length ? 'NOT_CUT_OVER' : 'NO_SECONDARY';
      const why = s.secondaryNodeIds.length
        ? `: not cut over to its secondary on node ${s.secondaryNodeIds.join(', ')}, so a restart of the node interrupts it`
        : ' with no secondary to take over';
      return { kind: 'SHARD', id: s.id, reason: left ?? fallback, message: `still attached to node ${nodeId}${left ? ` (left: ${left})` : ''}${why}` };
    });
  return [...vms, ...shards, ...remainingPods(nodeId, workloads.pods, leftBecause)];
}

/**
 * The pods that would lose service: the pod drain's verdict on each (k8s:K2) decides. EVICT:
 * it serves from the node until evicted (the last drain's reason when it left it); ERROR: the
 * drain refuses it with the options in force (k8s:K3), so only that option or the pod's owner
 * moves it. SKIP verdicts and finished pods stay by design and are not listed.
 */
function remainingPods(nodeId: string, pods: NodeWorkloads['pods'], leftBecause: ReadonlyMap<string, string>): RemainingWorkload[] {
  const onNode = pods?.byNode.get(nodeId) ?? [];
  const out: RemainingWorkload[] = [];
  for (const pod of onNode) {
    if (pod.phase === 'Succeeded' || pod.phase === 'Failed') continue;
    const id = `${pod.namespace}/${pod.name}`;
    const verdict = classifyPod(pod, pods!.options, pods!.now);
    if (verdict.action === 'SKIP') continue;
    if (verdict.action === 'ERROR') {
      const cause = POD_BLOCK_CAUSES[verdict.cause];
      out.push({
        kind: 'POD',
        id,
        reason: `POD_${verdict.cause}`,
        message: `still on node ${nodeId}: the pod drain refuses to evict it (${cause.text}; use ${cause.override}: true), so a restart of the node kills it`,
      });
      continue;
    }
    // Only a pod drain's own reasons: a VM's step may carry the same `namespace/name`.
    const recorded = leftBecause.get(id);
    const left = recorded !== undefined && Object.hasOwn(POD_LEFT_REASONS, recorded) ? (recorded as PodLeftReason) : null;
    const reason = left ?? (pod.deletionTimestamp !== null ? 'POD_TERMINATING' : 'POD_EVICTABLE');
    const state = left
      ? `the last pod drain left it (${left}: ${POD_LEFT_REASONS[left]})`
      : reason === 'POD_TERMINATING'
        ? 'it is terminating'
        : 'not evicted yet';
    out.push({
      kind: 'POD',
      id,
      reason,
      message: `still on node ${nodeId}: ${state}; a restart of the node kills it without an eviction (no PodDisruptionBudget consulted)`,
    });
  }
  return out.sort((a, b) => a.id.localeCompare(b.id));
}

/** Nothing on the node would lose service if it restarted now. */
export function isSafeToRestart(remaining: readonly RemainingWorkload[]): boolean {
  return remaining.length === 0;
}

/** The reasons an operation's steps left workloads with (skipped or failed steps), by workload id. */
export function reasonsLeftBy(steps: Iterable<{ workloadId: string; state: string; reason: string | null }>): Map<string, string> {
  const out = new Map<string, string>();
  for (const s of steps) if ((s.state === 'SKIPPED' || s.state === 'FAILED' || s.state === 'ABANDONED') && s.reason) out.set(s.workloadId, s.reason);
  return out;
}
