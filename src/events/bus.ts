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

/**
 * The pub/sub's EventTarget, counting listeners per topic: a subscription is live (it will
 * see the next publish) exactly when its listener is added, so the count is the definite
 * signal that "the subscriber is listening" (tests wait on it instead of sleeping).
 */
class CountingEventTarget extends EventTarget {
  readonly listeners = new Map<string, number>();

  override addEventListener(type: string, callback: EventListenerOrEventListenerObject | null, options?: AddEventListenerOptions | boolean): void {
    super.addEventListener(type, callback, options);
    if (callback) this.listeners.set(type, (this.listeners.get(type) ?? 0) + 1);
  }

  override removeEventListener(type: string, callback: EventListenerOrEventListenerObject | null, options?: EventListenerOptions | boolean): void {
    super.removeEventListener(type, callback, options);
    const left = (this.listeners.get(type) ?? 0) - (callback ? 1 : 0);
    if (left > 0) this.listeners.set(type, left);
    else this.listeners.delete(type);
  }
}

export function createEventBus() {
  const target = new CountingEventTarget();
  const pubsub = createPubSub<BusTopics>({ eventTarget: target as unknown as NonNullable<Parameters<typeof createPubSub<BusTopics>>[0]>['eventTarget'] });
  return Object.assign(pubsub, {
    /** Live subscribers of a topic (`operationProgress:<id>` for one operation's progress). */
    subscribers: (topic: string): number => target.listeners.get(topic) ?? 0,
  });
}
