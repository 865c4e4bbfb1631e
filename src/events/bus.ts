import { setMaxListeners } from 'node:events';
import { createPubSub, Repeater } from 'graphql-yoga';
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

/** Stands for one publish of a payload (identity only): what results computed for that publish are kept under. */
export type Publication = object;

export function createEventBus() {
  const target = new CountingEventTarget();
  // A thousand watchers of one topic are the design, not a leak: no MaxListenersExceededWarning at the eleventh.
  setMaxListeners(0, target);
  const pubsub = createPubSub<BusTopics>({ eventTarget: target as unknown as NonNullable<Parameters<typeof createPubSub<BusTopics>>[0]>['eventTarget'] });
  // A backend publishes the same object again after changing it (or after changing what its
  // fields resolve from, as a node's scheduling policy): the payload object does not name an
  // event, its latest publish does. Weak: a payload no longer referenced takes its stamp along.
  const publications = new WeakMap<object, Publication>();
  const publish = pubsub.publish.bind(pubsub);
  return Object.assign(pubsub, {
    publish: ((...args: unknown[]) => {
      const payload = args[args.length - 1];
      if (typeof payload === 'object' && payload !== null) publications.set(payload, {});
      (publish as (...a: unknown[]) => void)(...args);
    }) as typeof pubsub.publish,
    /**
     * A topic's payloads that `keep` accepts, filtered in the bus's listener: one stream per
     * subscriber, where `pipe(subscribe(…), filter(…))` adds a second one that every event
     * crosses, for every subscriber (issue 29: a fan-out cost the bare server does not pay).
     */
    subscribeWhere: <K extends 'nodeChanged' | 'workloadChanged'>(topic: K, keep: (payload: BusTopics[K][0]) => boolean): Repeater<BusTopics[K][0]> =>
      new Repeater<BusTopics[K][0]>((push, stop) => {
        const listener = (event: Event) => {
          const payload = (event as CustomEvent<BusTopics[K][0]>).detail;
          if (keep(payload)) void push(payload);
        };
        void stop.then(() => target.removeEventListener(topic, listener));
        target.addEventListener(topic, listener);
      }),
    /** Live subscribers of a topic (`operationProgress:<id>` for one operation's progress). */
    subscribers: (topic: string): number => target.listeners.get(topic) ?? 0,
    /**
     * The latest publish of `payload` (undefined if it was never published): a new object at
     * every publish, even of the same payload, so that whatever is computed from an event and
     * kept under its publication is never handed out for a later publish.
     */
    publication: (payload: unknown): Publication | undefined => (typeof payload === 'object' && payload !== null ? publications.get(payload) : undefined),
  });
}
