/** Whether a drain or fill may start, checked in the order of storage:S3 and storage:S4. Pure. */
import { maySchedule, type Availability, type SchedulingPolicy } from './policy.ts';

export type StorageOperationKind = 'DRAIN' | 'FILL';

export interface AdmissionNode {
  id: string;
  availability: Availability;
  policy: SchedulingPolicy;
}

export interface AdmissionSnapshot {
  /** Every node of the cluster, the target among them. */
  nodes: AdmissionNode[];
  /** Node ids that have a running (RUNNING or CANCELLING) operation, one entry per operation. */
  runningOperationNodeIds: string[];
  /** Cluster-wide limit of concurrent node operations. */
  operationLimit: number;
}

export type AdmissionRefusal =
  | { error: 'NotFound'; message: string }
  | { error: 'Conflict'; message: string }
  | { error: 'OperationLimitReached'; limit: number; message: string }
  | { error: 'Unavailable'; message: string }
  | { error: 'PreconditionFailed'; reason: string; message: string };

/** Null when the operation may start; else the first refusal in the spec's order. */
export function checkAdmission(kind: StorageOperationKind, nodeId: string, snap: AdmissionSnapshot): AdmissionRefusal | null {
  const node = snap.nodes.find((n) => n.id === nodeId);
  if (!node) return { error: 'NotFound', message: `node ${nodeId} not found` };
  if (snap.runningOperationNodeIds.includes(nodeId)) {
    return { error: 'Conflict', message: `an operation already runs on node ${nodeId}` };
  }
  if (snap.runningOperationNodeIds.length >= snap.operationLimit) {
    return {
      error: 'OperationLimitReached',
      limit: snap.operationLimit,
      message: `the cluster already runs ${snap.runningOperationNodeIds.length} node operation(s); the limit is ${snap.operationLimit}`,
    };
  }
  if (node.availability !== 'ACTIVE') {
    return { error: 'Unavailable', message: `node ${nodeId} is ${node.availability}, not ACTIVE` };
  }
  const others = snap.nodes.filter((n) => n.id !== nodeId);
  if (kind === 'DRAIN') {
    // Neon counts the node itself and so never refuses a single-node drain: we refuse.
    if (!others.some(maySchedule)) {
      return { error: 'PreconditionFailed', reason: 'NO_OTHER_SCHEDULABLE_NODES', message: 'no other schedulable nodes' };
    }
    if (node.policy === 'DRAINING') return { error: 'Conflict', message: `node ${nodeId} is already draining` };
  } else {
    if (others.length === 0) {
      return { error: 'PreconditionFailed', reason: 'NO_OTHER_NODES', message: 'no other nodes to fill from' };
    }
    if (node.policy === 'FILLING') return { error: 'Conflict', message: `node ${nodeId} is already filling` };
  }
  if (node.policy !== 'ACTIVE') {
    return {
      error: 'PreconditionFailed',
      reason: `POLICY_${node.policy}`,
      message: `node ${nodeId} has scheduling policy ${node.policy}; a ${kind.toLowerCase()} needs ACTIVE`,
    };
  }
  return null;
}
