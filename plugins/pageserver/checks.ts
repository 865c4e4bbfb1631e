import { isObject } from './http-client.ts';
import { LOCATION_MODES } from './wire.ts';

/** Shape checks of pageserver answers: each returns what is wrong, or null. */

const num = (v: unknown) => typeof v === 'number' && Number.isFinite(v);

function checkLocationConfig(v: unknown): string | null {
  if (!isObject(v)) return 'location config is not an object';
  if (!LOCATION_MODES.includes(v.mode as never)) return `unknown mode ${JSON.stringify(v.mode)}`;
  if (v.generation !== undefined && v.generation !== null && !num(v.generation)) return 'generation is not a number';
  return null;
}

export function checkLocationConfigList(v: unknown): string | null {
  if (!isObject(v) || !Array.isArray(v.tenant_shards)) return 'expected {"tenant_shards": [[id, config], …]}';
  for (const entry of v.tenant_shards) {
    if (!Array.isArray(entry) || entry.length !== 2 || typeof entry[0] !== 'string') return 'a tenant_shards entry is not [id, config]';
    if (entry[1] !== null) {
      const problem = checkLocationConfig(entry[1]);
      if (problem) return `tenant shard ${entry[0]}: ${problem}`;
    }
  }
  return null;
}

export function checkSecondaryProgress(v: unknown): string | null {
  if (!isObject(v)) return 'expected a SecondaryProgress object';
  for (const key of ['bytes_total', 'bytes_downloaded', 'layers_total', 'layers_downloaded']) {
    if (!num(v[key])) return `${key} is not a number`;
  }
  if (v.heatmap_mtime !== null && (typeof v.heatmap_mtime !== 'string' || Number.isNaN(Date.parse(v.heatmap_mtime))))
    return 'heatmap_mtime is neither null nor a time';
  return null;
}

export function checkUtilization(v: unknown): string | null {
  if (!isObject(v)) return 'expected a PageserverUtilization object';
  if (!num(v.utilization_score)) return 'utilization_score is not a number';
  if (typeof v.captured_at !== 'string') return 'captured_at is not a time';
  return null;
}

/** `PUT /v1/tenant/:id/location_config` answers `{shards: [{shard_id, node_id}], stripe_size}`. */
export function checkLocationConfigResponse(v: unknown): string | null {
  if (!isObject(v) || !Array.isArray(v.shards)) return 'expected {"shards": [...], "stripe_size": …}';
  return null;
}
