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
 * A kind of workload is one more input here and one more value of REMAINING_KINDS (pods
 * that are still evictable come with Kubernetes pod drain).
 */

export const REMAINING_KINDS = ['VM', 'SHARD'] as const;
type RemainingKind = (typeof REMAINING_KINDS)[number];

export interface RemainingWorkload {
  kind: RemainingKind;
  id: string;
  /**
   * Machine-readable: `VM_RUNNING` / `VM_MIGRATING` / `VM_STARTING` / `VM_STOPPING` for VMs;
   * for shards the reason the last operation on the node left it (its step's skip or
   * failure reason, e.g. `SECONDARY_LAGGING`, `SHARD_POLICY_PAUSE`, `TRANSIENT`), else
   * `NO_SECONDARY` or `NOT_CUT_OVER`.
   */
  reason: string;
  /** For a person, without the id: where it still is, why, and what a restart would do. */
  message: string;
}

/** The reasons a shard gets when no operation said why it was left. */
export const SHARD_FALLBACK_REASONS: readonly string[] = ['NOT_CUT_OVER', 'NO_SECONDARY'];

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
  return [...vms, ...shards];
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
