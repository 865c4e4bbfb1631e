/** Whether a node's graceful delete may start, in the order of neon:L4. Pure. */
import { maySchedule, type Availability, type SchedulingPolicy } from './policy.ts';

export type DeleteRefusal =
  | { error: 'NotFound'; message: string }
  | { error: 'OperationRunning'; message: string }
  | { error: 'PreconditionFailed'; reason: string; message: string }
  | { error: 'Conflict'; message: string };

/**
 * neon:L4: unknown node; an operation running (on the node, or the cluster's limit
 * reached); no node may schedule (the node itself counts); policy `DELETING` (a conflict);
 * any policy but `ACTIVE` or `PAUSE`. Null when it may start.
 */
export function checkDeleteAdmission(
  nodeId: string,
  snap: {
    nodes: { id: string; availability: Availability; policy: SchedulingPolicy }[];
    /** The node operations running (drain, fill, delete), as `{kind, nodeId}`. */
    running: { kind: string; nodeId: string }[];
    operationLimit: number;
  },
): DeleteRefusal | null {
  const node = snap.nodes.find((n) => n.id === nodeId);
  if (!node) return { error: 'NotFound', message: `node ${nodeId} not found` };
  const here = snap.running.find((r) => r.nodeId === nodeId);
  if (here) return { error: 'OperationRunning', message: `a ${here.kind.toLowerCase()} already runs on node ${nodeId}` };
  if (snap.running.length >= snap.operationLimit) {
    return { error: 'OperationRunning', message: `the cluster already runs ${snap.running.length} node operation(s); the limit is ${snap.operationLimit}` };
  }
  if (!snap.nodes.some(maySchedule))
    return { error: 'PreconditionFailed', reason: 'NO_SCHEDULABLE_NODES', message: 'no node may take shards: no other schedulable nodes to move shards to' };
  if (node.policy === 'DELETING') return { error: 'Conflict', message: `node ${nodeId} has a delete in progress` };
  if (node.policy !== 'ACTIVE' && node.policy !== 'PAUSE') {
    return {
      error: 'PreconditionFailed',
      reason: `POLICY_${node.policy}`,
      message: `node ${nodeId} has scheduling policy ${node.policy}; a delete needs ACTIVE or PAUSE`,
    };
  }
  return null;
}
