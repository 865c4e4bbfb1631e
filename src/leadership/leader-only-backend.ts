import type { ClusterBackend } from '../cluster/backend.ts';
import { BackendError } from '../cluster/errors.ts';
import { BACKEND_PARTS, type PartShape } from '../cluster/parts.ts';

/** What a stand-by may call on the required members: reads, the change stream, and closing. Everything else is an action. */
const READS = /^(name|capabilities|watch|close|then|list[A-Z]\w*|get[A-Z]\w*)$/;
/** An object member that the parts table does not know: every function on it is an action. */
const NO_READS = /^then$/;

const partShape = (property: string): PartShape | undefined =>
  Object.hasOwn(BACKEND_PARTS, property) ? BACKEND_PARTS[property as keyof typeof BACKEND_PARTS].shape : undefined;

/**
 * The backend as the operations engines see it (ha:L2): every action — whatever its name,
 * so that one a plugin adds later is gated too — is refused unless `canAct()` says this
 * replica leads with a good lease, checked at the instant of the call. The optional parts
 * are gated as the parts table (src/cluster/parts.ts) says; an object member it does not
 * list is gated whole rather than handed back as it is.
 */
export function leaderOnlyBackend(backend: ClusterBackend, canAct: () => boolean): ClusterBackend {
  return gated(backend, canAct, (property) => {
    const shape = partShape(property);
    if (!shape) return { reads: READS, nested: NO_READS };
    return shape.kind === 'object' ? { reads: READS, nested: shape.reads } : { reads: shape.read ? /^/ : /$^/, nested: NO_READS };
  });
}

/** For a member's name: which of its functions are reads, and which functions of an object it holds are. */
type Rule = (property: string) => { reads: RegExp; nested: RegExp };

function gated<T extends object>(target: T, canAct: () => boolean, rule: Rule): T {
  // By the object itself: a getter (nodeMaintenance.delegate) may hand out another one later.
  const parts = new WeakMap<object, object>();
  return new Proxy(target, {
    get(t, property, receiver) {
      const value: unknown = Reflect.get(t, property, receiver);
      if (typeof property !== 'string') return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(t) : value;
      const { reads, nested } = rule(property);
      if (value && typeof value === 'object') {
        // An object inside a part (nodeMaintenance.delegate) is read through the part's own reads.
        if (!parts.has(value))
          parts.set(
            value,
            gated(value, canAct, () => ({ reads: nested, nested })),
          );
        return parts.get(value);
      }
      if (typeof value !== 'function') return value;
      // Called on the target itself, not the proxy: a plugin's private fields (#x) are not on the proxy.
      if (reads.test(property)) return (value as (...a: unknown[]) => unknown).bind(t);
      return (...args: unknown[]) => {
        if (!canAct()) return Promise.reject(new BackendError('Unavailable', `${property} refused: this replica is not the leader (ha:L2)`));
        return (value as (...a: unknown[]) => unknown).apply(t, args);
      };
    },
  });
}
