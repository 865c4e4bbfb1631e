/** KubeVirt's eviction strategies and what Lockkeeper does with them (k8s:E1, k8s:E5, k8s:E6). Pure. */

const EVICTION_STRATEGIES = ['None', 'LiveMigrate', 'LiveMigrateIfPossible', 'External'] as const;
export type EvictionStrategy = (typeof EVICTION_STRATEGIES)[number];

export const isEvictionStrategy = (v: unknown): v is EvictionStrategy => typeof v === 'string' && (EVICTION_STRATEGIES as readonly string[]).includes(v);

/**
 * k8s:E1: the VMI's own value, else the KubeVirt CR's, else null ("not set anywhere":
 * KubeVirt's built-in default `None` applies in KubeVirt, not in Lockkeeper, see below).
 * An unknown value reads as not set.
 */
export function effectiveEvictionStrategy(vmiValue: unknown, clusterValue: unknown): EvictionStrategy | null {
  if (isEvictionStrategy(vmiValue)) return vmiValue;
  if (isEvictionStrategy(clusterValue)) return clusterValue;
  return null;
}

/** How a running `Migrate`/unlabelled VM leaves the node. */
export type EvictionMethod = 'MIGRATE' | 'EVICT' | 'EXTERNAL';

/**
 * k8s:E5. `LiveMigrate` and `LiveMigrateIfPossible` → Lockkeeper's own migration (a
 * non-migratable one then blocks or, under force, stops: vm:N2/vm:N4, as before); `None`
 * → the launcher pod is evicted and the run strategy decides; `External` → an outside
 * controller must move it. **Decision**: unset anywhere (null, or a backend without
 * eviction strategies: undefined) keeps the seed's meaning, live migration.
 */
export function evictionMethod(strategy: EvictionStrategy | null | undefined): EvictionMethod {
  switch (strategy) {
    case 'None':
      return 'EVICT';
    case 'External':
      return 'EXTERNAL';
    default:
      return 'MIGRATE';
  }
}
