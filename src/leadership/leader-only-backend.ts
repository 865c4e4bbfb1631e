import type { ClusterBackend } from '../cluster/backend.ts';
import { BackendError } from '../cluster/errors.ts';

/** What a stand-by may call: reads, the change stream, and closing. Everything else is an action. */
const READS = /^(name|capabilities|simulation|watch|close|then|list[A-Z]\w*|get[A-Z]\w*|podGone|delegate)$/;
/** The shard-control parts (src/cluster/shard-control.ts) have reads of their own. */
const PART_READS = /^(describe[A-Z]\w*|registration|tombstones|then)$/;
/** Optional parts of a backend whose actions are gated the same way, with what each may call freely. */
const PARTS = new Map<string, RegExp>([
  ['failover', PART_READS],
  ['placement', PART_READS],
  ['registry', PART_READS],
  ['podDrain', READS],
  ['nodeMaintenance', READS],
]);

/**
 * The backend as the operations engines see it (ha:L2): every action — whatever its name,
 * so that one a plugin adds later is gated too — is refused unless `canAct()` says this
 * replica leads with a good lease, checked at the instant of the call.
 */
export function leaderOnlyBackend(backend: ClusterBackend, canAct: () => boolean): ClusterBackend {
  return gate(backend, READS, canAct, PARTS);
}

function gate<T extends object>(target: T, reads: RegExp, canAct: () => boolean, nested: ReadonlyMap<string, RegExp> = new Map()): T {
  const parts = new Map<string, object>();
  return new Proxy(target, {
    get(t, property, receiver) {
      const value: unknown = Reflect.get(t, property, receiver);
      const partReads = typeof property === 'string' ? nested.get(property) : undefined;
      if (partReads && typeof property === 'string' && value && typeof value === 'object') {
        if (!parts.has(property)) parts.set(property, gate(value, partReads, canAct));
        return parts.get(property);
      }
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
