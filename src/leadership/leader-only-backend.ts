import type { ClusterBackend } from '../cluster/backend.ts';
import { BackendError } from '../cluster/errors.ts';

/** What a stand-by may call: reads, the change stream, and closing. Everything else is an action. */
const READS = /^(name|capabilities|simulation|watch|close|then|list[A-Z]\w*|get[A-Z]\w*|podGone|delegate)$/;
/** Optional capability objects of a backend (k8s: pod drain, node maintenance): their actions are gated the same way. */
const CAPABILITY_OBJECTS = new Set(['podDrain', 'nodeMaintenance']);

/**
 * The backend as the operations engines see it (ha:L2): every action — whatever its name,
 * so that one a plugin adds later is gated too — is refused unless `canAct()` says this
 * replica leads with a good lease, checked at the instant of the call.
 */
export function leaderOnlyBackend(backend: ClusterBackend, canAct: () => boolean): ClusterBackend {
  return gate(backend, canAct);
}

function gate<T extends object>(backend: T, canAct: () => boolean): T {
  return new Proxy(backend, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof property === 'string' && CAPABILITY_OBJECTS.has(property) && value && typeof value === 'object') return gate(value, canAct);
      if (typeof value !== 'function') return value;
      // Called on the backend itself, not the proxy: a plugin's private fields (#x) are not on the proxy.
      if (typeof property !== 'string' || READS.test(property)) return (value as (...a: unknown[]) => unknown).bind(target);
      return (...args: unknown[]) => {
        if (!canAct()) return Promise.reject(new BackendError('Unavailable', `${property} refused: this replica is not the leader (ha:L2)`));
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}
