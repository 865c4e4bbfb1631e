import type { ClusterBackend } from '../cluster/backend.ts';
import { BackendError } from '../cluster/errors.ts';

/** What a stand-by may call: reads, the change stream, and closing. Everything else is an action. */
const READS = /^(name|capabilities|simulation|watch|close|then|list[A-Z]\w*|get[A-Z]\w*)$/;
/** The optional contract parts (src/cluster/shard-control.ts): gated the same way, their reads excepted. */
const PARTS = new Set(['failover', 'placement', 'registry']);
const PART_READS = /^(describe[A-Z]\w*|registration|tombstones|then)$/;

function gate<T extends object>(target: T, reads: RegExp, canAct: () => boolean): T {
  return new Proxy(target, {
    get(t, property, receiver) {
      const value: unknown = Reflect.get(t, property, receiver);
      if (typeof value !== 'function') return value;
      // Called on the target itself, not the proxy: a plugin's private fields (#x) are not on the proxy.
      if (typeof property !== 'string' || reads.test(property)) return (value as (...a: unknown[]) => unknown).bind(t);
      return (...args: unknown[]) => {
        if (!canAct()) return Promise.reject(new BackendError('Unavailable', `${property} refused: this replica is not the leader (ha:L2)`));
        return (value as (...a: unknown[]) => unknown).apply(t, args);
      };
    },
  });
}

/**
 * The backend as the operations engines see it (ha:L2): every action — whatever its name,
 * so that one a plugin adds later is gated too — is refused unless `canAct()` says this
 * replica leads with a good lease, checked at the instant of the call.
 */
export function leaderOnlyBackend(backend: ClusterBackend, canAct: () => boolean): ClusterBackend {
  const parts = new Map<string, object>();
  const gated = gate(backend, READS, canAct);
  return new Proxy(gated, {
    get(target, property, receiver) {
      if (typeof property === 'string' && PARTS.has(property)) {
        const part: unknown = Reflect.get(backend, property);
        if (typeof part !== 'object' || part === null) return part;
        if (!parts.has(property)) parts.set(property, gate(part, PART_READS, canAct));
        return parts.get(property);
      }
      return Reflect.get(target, property, receiver);
    },
  });
}
