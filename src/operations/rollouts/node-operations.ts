import { doneOf, totalOf, type OperationSnapshot, type RequestMeta } from '../../domain/operations.ts';
import type { RemainingWorkload } from '../../domain/remaining.ts';
import type { RolloutNodeOperation, RolloutSettings } from '../../domain/rollouts.ts';

/**
 * What a rollout does to one node, through the engines of the node's own operations, so
 * that every rule of their specs applies (rollout:O4).
 */
export interface NodeOperations {
  startDrain(nodeId: string, meta: RequestMeta): Promise<OperationSnapshot>;
  /** Back into service: a policy a drain left at PAUSE_FOR_RESTART goes to ACTIVE, then the fill starts. */
  startFill(nodeId: string, meta: RequestMeta): Promise<OperationSnapshot>;
  cancelDrain(nodeId: string, meta: RequestMeta): Promise<void>;
  enableMaintenance(nodeId: string, settings: Pick<RolloutSettings, 'force' | 'deadlineSeconds'>, meta: RequestMeta): Promise<OperationSnapshot>;
  /**
   * Ends the node's maintenance; says which fill brings its shards back (null: none).
   * Idempotent: a node already out of maintenance answers with the fill started since `since`.
   */
  leaveMaintenance(nodeId: string, since: number, meta: RequestMeta): Promise<string | null>;
  getOperation(id: string): Promise<OperationSnapshot | null>;
  /** The newest operation of `kind` on the node created at or after `at` (rollout:O9). */
  operationSince(nodeId: string, kind: RolloutNodeOperation['kind'], at: number): Promise<string | null>;
  /** rollout:O7: whether the node re-attached at or after `at`, by the event log (a re-attach no run heard, e.g. while the gateway restarted). */
  reattachedSince(nodeId: string, at: number): Promise<boolean>;
  /** What would lose service if the node restarted now: VMs, shards and pods (the rule: domain/remaining.ts). */
  remainingOn(nodeId: string): Promise<RemainingWorkload[]>;
}

/** rollout:O6: what would lose service if the node restarted now (the rule: domain/remaining.ts), as blockers. */
export async function unsafeWorkloads(ops: Pick<NodeOperations, 'remainingOn'>, nodeId: string): Promise<{ id: string; reasons: string[] }[]> {
  return (await ops.remainingOn(nodeId)).map((w) => ({ id: w.id, reasons: [w.message] }));
}

/** One line of a node operation's progress, e.g. "fill 412/1000 shards (2 in flight)" (rollout:O10). */
export function describeNode(op: OperationSnapshot): string {
  const c = op.counts;
  const total = totalOf(c);
  const what = op.kind === 'MAINTENANCE' ? 'workloads' : 'shards';
  const done = doneOf(c);
  const waiting = op.waitingOn ? `: ${op.waitingOn.description}` : '';
  return `${op.kind.toLowerCase()} ${done}/${total} ${what}${op.state === 'CANCELLING' ? ' (cancelling)' : ''}${waiting}`;
}
