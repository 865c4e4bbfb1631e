/**
 * Label keys the core and every backend must spell alike. Kubernetes' well-known keys,
 * and Harvester's strategy label so that Harvester and Lockkeeper read the same VMs alike.
 */

/** Carries a VM's maintenance strategy (spec vm-maintenance §1). */
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
} as const;
