import type { ClusterBackend } from '../../cluster/backend.ts';
import type { Clock } from '../../cluster/clock.ts';
import type { ClusterShard, ClusterVm } from '../../cluster/types.ts';
import type { OperationSettings } from '../../config/schema.ts';
import { candidateSelector, type DrainPod } from '../../domain/pods/drain.ts';
import { POD_OWN_REASONS, remainingWorkloads, SHARD_FALLBACK_REASONS, type NodeWorkloads, type RemainingWorkload } from '../../domain/remaining.ts';
import type { OperationSnapshot } from '../../domain/operations.ts';
import type { Logger } from '../../logger.ts';
import type { OperationRepository } from '../../store/operation-repository.ts';

/**
 * Reads what would lose service if a node restarted now (the rule: domain/remaining.ts)
 * from the backend: for one node with that node's filters, for several with one list call
 * per kind (pods: one call per node, as the pod drain lists them, k8s:K1). Kinds the backend
 * does not serve count as none. Pods are judged with the configured pod-drain options (k8s:K4).
 */
export class RemainingReader {
  constructor(
    private readonly backend: ClusterBackend,
    private readonly operations: Pick<OperationRepository, 'latestRemaining'>,
    private readonly settings: Pick<OperationSettings, 'podDrain'>,
    private readonly clock: Pick<Clock, 'now'>,
  ) {}

  /**
   * For each node, in order. Shards an operation left get the reason it recorded, while that
   * operation is still the newest on the node (a later fill or drain tells its own story).
   */
  async ofNodes(nodeIds: readonly string[]): Promise<RemainingWorkload[][]> {
    if (!nodeIds.length) return [];
    const [workloads, recorded] = await Promise.all([this.read(nodeIds), this.operations.latestRemaining(nodeIds)]);
    return nodeIds.map((id) => remainingWorkloads(id, workloads, reasonsOf(recorded.get(id) ?? [])));
  }

  /** What remains on the node now, by the rule alone (no recorded reasons); rejects when the backend cannot be read. */
  async now(nodeId: string): Promise<RemainingWorkload[]> {
    return remainingWorkloads(nodeId, await this.read([nodeId]));
  }

  /** At the end of an operation on the node; `leftBecause`: its steps' skip and failure reasons. Null when the backend cannot be read. */
  async atEnd(nodeId: string, leftBecause: ReadonlyMap<string, string>): Promise<RemainingWorkload[] | null> {
    return (await this.readForEnd(nodeId))(leftBecause);
  }

  /**
   * `atEnd` for an end decided in a synchronous section (ha:R2): the backend read now, the
   * steps' reasons applied when the end is written. The function returns null when the
   * backend could not be read.
   */
  async readForEnd(nodeId: string): Promise<(leftBecause: ReadonlyMap<string, string>) => RemainingWorkload[] | null> {
    try {
      const workloads = await this.read([nodeId]);
      return (leftBecause) => remainingWorkloads(nodeId, workloads, leftBecause);
    } catch {
      return () => null;
    }
  }

  private async read(nodeIds: readonly string[]): Promise<NodeWorkloads> {
    const { backend } = this;
    const one = nodeIds.length === 1 ? nodeIds[0]! : undefined;
    const options = this.settings.podDrain;
    const podDrain = backend.podDrain;
    const [vms, shards, pods] = await Promise.all([
      backend.capabilities.vms ? backend.listVms(one === undefined ? {} : { nodeId: one }) : ([] as ClusterVm[]),
      backend.capabilities.shards ? backend.listShards(one === undefined ? {} : { attachedNodeId: one }) : ([] as ClusterShard[]),
      podDrain ? Promise.all(nodeIds.map((id) => podDrain.listNodePods(id, candidateSelector(options)))) : null,
    ]);
    if (!pods) return { vms, shards };
    const byNode = new Map<string, readonly DrainPod[]>(nodeIds.map((id, i) => [id, pods[i]!]));
    return { vms, shards, pods: { byNode, options, now: this.clock.now() } };
  }
}

/** The reasons an operation recorded for the shards and pods it left (not those the rule gives itself without one). */
function reasonsOf(remaining: readonly RemainingWorkload[]): Map<string, string> {
  const recorded = (w: RemainingWorkload) =>
    (w.kind === 'SHARD' && !SHARD_FALLBACK_REASONS.includes(w.reason)) || (w.kind === 'POD' && !POD_OWN_REASONS.includes(w.reason));
  return new Map(remaining.filter(recorded).map((w) => [w.id, w.reason]));
}

/** The log line of an operation that ended with workloads left on its node (the WORKLOADS_REMAIN event says the same). */
export function warnRemaining(log: Logger, op: Pick<OperationSnapshot, 'id' | 'kind' | 'nodeId' | 'state'>, remaining: readonly RemainingWorkload[]): void {
  const sample = remaining.slice(0, 10).map((w) => `${w.kind.toLowerCase()} ${w.id} (${w.reason})`);
  log.warn(
    { operation: op.id, node: op.nodeId, remaining: remaining.length },
    `${op.kind.toLowerCase()} of node ${op.nodeId} ended ${op.state} but node ${op.nodeId} is not safe to restart: ${remaining.length} workload(s) remain: ${sample.join(', ')}${remaining.length > sample.length ? ', …' : ''}`,
  );
}
