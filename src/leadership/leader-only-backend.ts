import { AuthorityLostError, issuingAuthority, underAuthority, type LeaseAuthority } from '../cluster/authority.ts';
import type { ClusterBackend } from '../cluster/backend.ts';
import { BackendError } from '../cluster/errors.ts';
import { BACKEND_PARTS, type PartShape } from '../cluster/parts.ts';

/** What a stand-by may call on the required members: reads, the change stream, and closing. Everything else is an action. */
const READS = /^(name|capabilities|watch|close|then|list[A-Z]\w*|get[A-Z]\w*)$/;
/** An object member that the parts table does not know: every function on it is an action. */
const NO_READS = /^then$/;

/** The reads that may reach the cluster: refused under an authority that has ended (a deposed leader's run, ha:L9). */
const SENDS = /^((list|get)[A-Z]|snapshot$)/;

const refusal = (under: LeaseAuthority, property: string) => new AuthorityLostError(under.tag(), `${property} refused: the epoch that issued it is over`);

const partShape = (property: string): PartShape | undefined =>
  Object.hasOwn(BACKEND_PARTS, property) ? BACKEND_PARTS[property as keyof typeof BACKEND_PARTS].shape : undefined;

/**
 * The backend as the operations engines see it (ha:L2): every action — whatever its name,
 * so that one a plugin adds later is gated too — is refused unless `canAct()` says this
 * replica leads with a good lease, checked at the instant of the call. The optional parts
 * are gated as the parts table (src/cluster/parts.ts) says; an object member it does not
 * list is gated whole rather than handed back as it is.
 *
 * ha:L9: every call — reads too — runs under the authority that issued it (an operation's
 * run, else this replica's authority of the moment), so that the plugin's requests for it
 * carry that run or epoch and stop when it ends; a call under an authority that has ended
 * (a deposed leader's run) is refused before it reaches the plugin.
 */
export function leaderOnlyBackend(backend: ClusterBackend, canAct: () => boolean, authority?: () => LeaseAuthority): ClusterBackend {
  return gated(backend, canAct, authority, (property) => {
    const shape = partShape(property);
    if (!shape) return { reads: READS, nested: NO_READS };
    return shape.kind === 'object' ? { reads: READS, nested: shape.reads } : { reads: shape.read ? /^/ : /$^/, nested: NO_READS };
  });
}

/** For a member's name: which of its functions are reads, and which functions of an object it holds are. */
type Rule = (property: string) => { reads: RegExp; nested: RegExp };

function gated<T extends object>(target: T, canAct: () => boolean, authority: (() => LeaseAuthority) | undefined, rule: Rule): T {
  // By the object itself: a getter (nodeMaintenance.delegate) may hand out another one later.
  const parts = new WeakMap<object, object>();
  // The gate of each method, made once (the engines call a few methods per move): what it checks is read at each call.
  const gates = new Map<string, { method: unknown; gate: unknown }>();
  return new Proxy(target, {
    get(t, property, receiver) {
      const value: unknown = Reflect.get(t, property, receiver);
      if (typeof property !== 'string') return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(t) : value;
      if (typeof value === 'function') {
        const known = gates.get(property);
        if (known?.method === value) return known.gate;
        const gate = gateOf(t, property, value as (...a: unknown[]) => unknown, rule(property).reads, canAct, authority);
        gates.set(property, { method: value, gate });
        return gate;
      }
      if (value && typeof value === 'object') {
        // An object inside a part (nodeMaintenance.delegate) is read through the part's own reads.
        if (!parts.has(value)) {
          const { nested } = rule(property);
          parts.set(
            value,
            gated(value, canAct, authority, () => ({ reads: nested, nested })),
          );
        }
        return parts.get(value);
      }
      return value;
    },
  });
}

function gateOf(
  t: object,
  property: string,
  method: (...a: unknown[]) => unknown,
  reads: RegExp,
  canAct: () => boolean,
  authority: (() => LeaseAuthority) | undefined,
): (...args: unknown[]) => unknown {
  // Called on the target itself, not the proxy: a plugin's private fields (#x) are not on the proxy.
  const call = (args: unknown[]) => method.apply(t, args);
  if (reads.test(property)) {
    if (!authority || !SENDS.test(property)) return method.bind(t);
    return (...args: unknown[]) => {
      const under = issuingAuthority(authority);
      if (under.signal.aborted) return Promise.reject(refusal(under, property));
      return underAuthority(under, () => call(args));
    };
  }
  return (...args: unknown[]) => {
    if (!canAct()) return Promise.reject(new BackendError('Unavailable', `${property} refused: this replica is not the leader (ha:L2)`));
    if (!authority) return call(args);
    const under = issuingAuthority(authority);
    if (under.signal.aborted || !under.leads) return Promise.reject(refusal(under, property));
    return underAuthority(under, () => call(args));
  };
}
