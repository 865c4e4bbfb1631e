import { createPubSub } from 'graphql-yoga';
import type { ClusterNode, ClusterShard, ClusterVm } from '../cluster/types.ts';
import type { OperationSnapshot, StepRecord } from '../domain/operations.ts';

/** A VM or shard changed (or disappeared). */
export type WorkloadChange =
  { kind: 'VM'; id: string; removed: boolean; vm: ClusterVm | null } | { kind: 'SHARD'; id: string; removed: boolean; shard: ClusterShard | null };

export interface OperationProgress {
  operation: OperationSnapshot;
  steps: StepRecord[];
}

/** Topics and payloads of the in-process event bus behind subscriptions. */
export type BusTopics = {
  nodeChanged: [ClusterNode];
  workloadChanged: [WorkloadChange];
  /** Keyed by operation id: the operation and the steps that changed since the last event. */
  operationProgress: [string, OperationProgress];
};

export type EventBus = ReturnType<typeof createEventBus>;

export function createEventBus() {
  return createPubSub<BusTopics>();
}
