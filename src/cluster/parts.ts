/**
 * The optional parts of the plugin contract, declared once (issue 26, docs/architecture.md §2):
 * which backend of a combined config owns each, what a stand-by may call on it (ha:L2), and
 * what its contract checks. `combineBackends` (composite.ts), the leader gate
 * (src/leadership/leader-only-backend.ts) and the contract runner (test/contract/) read this
 * table; a new optional member of ClusterBackend that is not entered here fails the typecheck.
 */
import type { ClusterBackend } from './backend.ts';

/** Every optional member of ClusterBackend. */
export type OptionalPart = {
  [K in keyof ClusterBackend]-?: object extends Pick<ClusterBackend, K> ? K : never;
}[keyof ClusterBackend];

/**
 * Which backend of a combined config provides the part:
 * - `vms` / `shards`: the one that serves that workload (the registry allows one of each);
 * - `sole`: the one backend that has it, whatever it serves; two that have it are a config
 *   error, since each would believe it alone drives it;
 * - `every`: each backend that has it, all called (a method resolving when all have).
 */
type PartOwner = 'vms' | 'shards' | 'sole' | 'every';

export type PartShape =
  /** A member object: `reads` names the members a stand-by may call; every other function is an action. */
  | { kind: 'object'; reads: RegExp }
  /** A method of the backend itself: a read, or an action gated by the lease. */
  | { kind: 'method'; read: boolean };

export interface PartSpec {
  owner: PartOwner;
  shape: PartShape;
  /** What test/contract/part-contracts.ts checks for every backend that provides it. */
  contract: string;
}

/** The shard-control parts (shard-control.ts) read through these; the rest are actions. */
const SHARD_CONTROL_READS = /^(describe[A-Z]\w*|registration|tombstones|then)$/;
/** The Kubernetes parts read through lists, gets and these. */
const KUBERNETES_READS = /^(then|list[A-Z]\w*|get[A-Z]\w*|podGone|delegate|observe|controller|reason)$/;

export const BACKEND_PARTS = {
  pageVms: {
    owner: 'vms',
    shape: { kind: 'method', read: true },
    contract: 'one page of listVms in its order, and the count of all',
  },
  pageShards: {
    owner: 'shards',
    shape: { kind: 'method', read: true },
    contract: 'one page of listShards in its order, and the count of all',
  },
  beforeLeading: {
    owner: 'every',
    shape: { kind: 'method', read: true },
    contract: 'resolves, changes nothing in the cluster (no event)',
  },
  simulation: {
    owner: 'sole',
    // Driving a simulated world is the test's or the demo's, not an action of Lockkeeper's.
    shape: { kind: 'object', reads: /^\w+$/ },
    contract: 'a node set offline reads OFFLINE and back ACTIVE; latencies and faults read back what was set',
  },
  failover: {
    owner: 'shards',
    shape: { kind: 'object', reads: SHARD_CONTROL_READS },
    contract: 'unknown node NotFound; a lost node’s shard fails over to the node given (neon:H5d)',
  },
  placement: {
    owner: 'shards',
    shape: { kind: 'object', reads: SHARD_CONTROL_READS },
    contract: 'describeShard null for unknown, details for a shard; zone and policy persist; placeShard moves the attachment',
  },
  registry: {
    owner: 'shards',
    shape: { kind: 'object', reads: SHARD_CONTROL_READS },
    contract: 'registration null for unknown; removeTombstone NotFound without a tombstone',
  },
  podDrain: {
    owner: 'sole',
    shape: { kind: 'object', reads: KUBERNETES_READS },
    contract: 'lists the node’s pods, evicts one (it goes), an unknown pod is gone (k8s:K1, k8s:K5, k8s:K8)',
  },
  nodeMaintenance: {
    owner: 'sole',
    shape: { kind: 'object', reads: KUBERNETES_READS },
    contract: 'marks REQUESTED→RUNNING→COMPLETED read back on the node, clear removes them, unknown node NotFound (k8s:H3, k8s:H4)',
  },
  confirmNodeDown: {
    owner: 'sole',
    shape: { kind: 'method', read: false },
    contract: 'an unknown node or a node-down handling that is off rejects with a BackendError (k8s:U7)',
  },
  hosts: {
    owner: 'shards',
    shape: { kind: 'method', read: true },
    contract: 'names only nodes the backend has, each on a distinct host',
  },
  snapshot: {
    owner: 'every',
    shape: { kind: 'method', read: true },
    contract: 'JSON-serialisable snapshots, each naming the plugin; changes nothing (no event)',
  },
  nodeAliases: {
    owner: 'sole',
    shape: { kind: 'object', reads: /^\w+$/ },
    contract: 'external and internal are inverse; an id that is not aliased maps to itself',
  },
} as const satisfies { [K in OptionalPart]: PartSpec };

export const OPTIONAL_PARTS = Object.keys(BACKEND_PARTS) as OptionalPart[];

/** Two backends of one config both provide a `sole` part. */
export class PartConflictError extends Error {
  override readonly name = 'PartConflictError';
}

/**
 * The backends of a combined config that provide `part`, by its owner rule. Empty when none
 * does; throws PartConflictError when a `sole` part is provided twice.
 */
export function partProviders(part: OptionalPart, backends: readonly ClusterBackend[]): ClusterBackend[] {
  const has = backends.filter((b) => b[part] !== undefined);
  switch (BACKEND_PARTS[part].owner) {
    case 'vms':
      return has.filter((b) => b.capabilities.vms).slice(0, 1);
    case 'shards':
      return has.filter((b) => b.capabilities.shards).slice(0, 1);
    case 'sole':
      if (has.length > 1) {
        throw new PartConflictError(`plugins: more than one plugin provides ${part} (${has.map((b) => b.name).join(', ')}); it has one owner`);
      }
      return has;
    case 'every':
      return has;
  }
}

/**
 * The value of `part` on a backend combined of `backends` (undefined when none provides it):
 * an object part is its owner's own object; a method is bound to its owner, or — owner
 * `every` — calls every provider at once and resolves when all have (`snapshot`: with the
 * providers' arrays concatenated).
 */
export function combinedPart<K extends OptionalPart>(part: K, backends: readonly ClusterBackend[]): ClusterBackend[K] {
  const providers = partProviders(part, backends);
  if (!providers.length) return undefined as ClusterBackend[K];
  const spec: PartSpec = BACKEND_PARTS[part];
  if (spec.shape.kind === 'object') return providers[0]![part];
  const bound = providers.map((b) => (b[part] as (...args: unknown[]) => unknown).bind(b));
  if (bound.length === 1) return bound[0] as ClusterBackend[K];
  // Issue 33: each member's snapshots, in config order (one rehearsal loader per plugin).
  if (part === 'snapshot') return (async () => (await Promise.all(bound.map((f) => f() as Promise<unknown[]>))).flat()) as ClusterBackend[K];
  const all = async (...args: unknown[]) => {
    await Promise.all(bound.map((f) => f(...args)));
  };
  return all as ClusterBackend[K];
}
