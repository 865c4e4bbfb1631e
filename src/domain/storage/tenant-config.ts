/**
 * A tenant's config as Neon's storage controller keeps it (neon:W10, neon:W11): the fields
 * of `TenantConfig` (libs/pageserver_api/src/models.rs), each optional, unknown ones
 * refused; PATCH as `TenantConfigPatch` (a field set to `null` is removed, one left out is
 * kept); and what is sent to a pageserver, `ha_aware_config` (storage_controller
 * reconciler.rs). Pure.
 */
import { z } from 'zod';

export type TenantConfig = Record<string, unknown>;

/** humantime strings as Neon's `humantime_serde` reads them, e.g. `7days`, `1h 30m`, `60s`. */
const duration = z.string().regex(/^\s*\d+\s*[a-zA-Z]+(\s*\d+\s*[a-zA-Z]+)*\s*$/, 'a humantime duration such as "60s" or "7days"');
const count = z.number().int().nonnegative();
const flag = z.boolean();
const object = z.record(z.string(), z.unknown());

/** Every field of Neon's `TenantConfig`, with the JSON type serde accepts for it. */
const FIELDS = {
  checkpoint_distance: count,
  checkpoint_timeout: duration,
  compaction_target_size: count,
  compaction_period: duration,
  compaction_threshold: count,
  compaction_upper_limit: count,
  compaction_algorithm: object,
  compaction_shard_ancestor: flag,
  compaction_l0_first: flag,
  compaction_l0_semaphore: flag,
  l0_flush_delay_threshold: count,
  l0_flush_stall_threshold: count,
  gc_horizon: count,
  gc_period: duration,
  image_creation_threshold: count,
  image_layer_force_creation_period: duration,
  pitr_interval: duration,
  walreceiver_connect_timeout: duration,
  lagging_wal_timeout: duration,
  max_lsn_wal_lag: z.number().int().positive(),
  eviction_policy: object,
  min_resident_size_override: count,
  evictions_low_residence_duration_metric_threshold: duration,
  heatmap_period: duration,
  lazy_slru_download: flag,
  timeline_get_throttle: object,
  image_layer_creation_check_threshold: z.number().int().min(0).max(255),
  image_creation_preempt_threshold: count,
  lsn_lease_length: duration,
  lsn_lease_length_for_ts: duration,
  timeline_offloading: flag,
  rel_size_v2_enabled: flag,
  gc_compaction_enabled: flag,
  gc_compaction_verification: flag,
  gc_compaction_initial_threshold_kb: count,
  gc_compaction_ratio_percent: count,
  sampling_ratio: object.nullable(),
  relsize_snapshot_cache_capacity: count,
  basebackup_cache_enabled: flag,
} as const;

/** `TenantConfig`: every field optional, unknown ones refused (serde's `deny_unknown_fields` on the request). */
export const tenantConfigSchema = z.object(FIELDS).partial().strict();

/** `TenantConfigPatch`: every field optional or `null` (remove). */
export const tenantConfigPatchSchema = z
  .object(Object.fromEntries(Object.entries(FIELDS).map(([k, v]) => [k, v.nullable()])) as { [K in keyof typeof FIELDS]: z.ZodNullable<(typeof FIELDS)[K]> })
  .partial()
  .strict();

/** A config without the fields left unset (serde's `skip_serializing_if = "Option::is_none"`), keys in order. */
export function normaliseTenantConfig(config: TenantConfig): TenantConfig {
  return Object.fromEntries(
    Object.entries(config)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
  );
}

/** neon:W10: Neon's `FieldPatch` rules: a value upserts, `null` removes, a field left out is kept. */
export function applyTenantConfigPatch(base: TenantConfig, patch: Record<string, unknown>): TenantConfig {
  const next: TenantConfig = { ...base };
  for (const [k, v] of Object.entries(patch)) {
    if (v === undefined) continue;
    if (v === null) delete next[k];
    else next[k] = v;
  }
  return normaliseTenantConfig(next);
}

/** Neon's `DEFAULT_HEATMAP_PERIOD` (60 s) as `humantime_serde` writes it. */
const DEFAULT_HEATMAP_PERIOD = '1m';

/**
 * neon:W11 (`ha_aware_config`): with secondaries, `heatmap_period` is the tenant's own or
 * 60 s; without, it is cleared (no heatmaps to upload for nobody).
 */
export function haAwareTenantConfig(config: TenantConfig, hasSecondaries: boolean): TenantConfig {
  const out: TenantConfig = { ...config };
  if (hasSecondaries) out.heatmap_period ??= DEFAULT_HEATMAP_PERIOD;
  else delete out.heatmap_period;
  return normaliseTenantConfig(out);
}

/**
 * Whether the location is configured with secondaries in mind (`attached_location_conf`):
 * a secondary always; an attached location when the placement wants secondaries
 * (`Attached(n > 0)`) or, under `Attached(0)`, still has one (a migration in flight).
 */
export function locationHasSecondaries(mode: string, secondaryCount: number, secondaries: number): boolean {
  if (mode === 'Secondary') return true;
  return secondaryCount > 0 || secondaries > 0;
}
