/**
 * Label keys the core and every backend must spell alike, and how a label selector
 * matches. Kubernetes' well-known keys,
 * and Harvester's strategy label so that Harvester and Lockkeeper read the same VMs alike.
 */

/** Carries a VM's maintenance strategy (vm:V1). */
export const MAINTENANCE_STRATEGY_LABEL = 'harvesterhci.io/maintain-mode-strategy';
export const ZONE_LABEL = 'topology.kubernetes.io/zone';
export const HOSTNAME_LABEL = 'kubernetes.io/hostname';

/**
 * Where a storage node's pageserver listens: a ClusterNode carries no addresses, so the
 * pageserver plugin (or an operator) puts them in these labels and the Neon REST facade reads them.
 */
export const LISTEN_LABELS = {
  httpAddr: 'lockkeeper.io/listen-http-addr',
  httpPort: 'lockkeeper.io/listen-http-port',
  pgAddr: 'lockkeeper.io/listen-pg-addr',
  pgPort: 'lockkeeper.io/listen-pg-port',
  /** neon:L8: absent when the node has none. */
  httpsPort: 'lockkeeper.io/listen-https-port',
  grpcAddr: 'lockkeeper.io/listen-grpc-addr',
  grpcPort: 'lockkeeper.io/listen-grpc-port',
} as const;

/**
 * An equality-based label selector (`-l k=v,…`, a nodeSelector): every pair present on the
 * object itself with an equal value, so a key such as `constructor` never matches through
 * the prototype. An empty selector matches everything.
 */
export function matchesLabels(labels: Readonly<Record<string, string>>, selector: Readonly<Record<string, string>>): boolean {
  return Object.entries(selector).every(([key, value]) => Object.hasOwn(labels, key) && labels[key] === value);
}
