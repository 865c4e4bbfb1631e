/**
 * The JSON shapes of Neon's pageserver HTTP API and controller upcalls, as Lockkeeper
 * speaks them (field names from neon `libs/pageserver_api/src/models.rs` and
 * `upcall_api.rs`). Only the fields Lockkeeper reads or writes are typed.
 */

export const LOCATION_MODES = ['AttachedSingle', 'AttachedMulti', 'AttachedStale', 'Secondary', 'Detached'] as const;
export type LocationConfigMode = (typeof LOCATION_MODES)[number];

export const ATTACHED_MODES: readonly LocationConfigMode[] = ['AttachedSingle', 'AttachedMulti', 'AttachedStale'];

export interface LocationConfig {
  mode: LocationConfigMode;
  generation: number | null;
  secondary_conf: { warm: boolean } | null;
  shard_number: number;
  shard_count: number;
  shard_stripe_size: number;
  tenant_conf: Record<string, unknown>;
}

/** `GET /v1/location_config`. */
export interface LocationConfigListResponse {
  tenant_shards: [string, LocationConfig | null][];
}

/** `GET /v1/tenant/:id/secondary/status` and the body of `POST …/secondary/download`. */
export interface SecondaryProgress {
  /** RFC 3339 time of the heatmap last downloaded; null = none yet. */
  heatmap_mtime: string | null;
  layers_downloaded: number;
  layers_total: number;
  bytes_downloaded: number;
  bytes_total: number;
}

/** `GET /v1/utilization`. */
export interface PageserverUtilization {
  disk_usage_bytes: number;
  free_space_bytes: number;
  disk_wanted_bytes: number;
  disk_usable_pct?: number;
  shard_count?: number;
  max_shard_count?: number;
  utilization_score: number;
  captured_at: string;
}

export interface ReAttachRequest {
  node_id: number;
  register?: NodeRegisterRequest | null;
  empty_local_disk?: boolean | null;
}

export interface ReAttachResponseTenant {
  id: string;
  gen: number | null;
  mode: LocationConfigMode;
}

export interface ReAttachResponse {
  tenants: ReAttachResponseTenant[];
}

export interface ValidateRequest {
  tenants: { id: string; gen: number }[];
}

export interface ValidateResponse {
  tenants: { id: string; valid: boolean }[];
}

/** Neon's error body. */
export interface HttpErrorBody {
  msg: string;
}

/** `GET /v1/tenant/:id/timeline`: the fields Lockkeeper reads of each `TimelineInfo`. */
export interface TimelineInfo {
  timeline_id: string;
  last_record_lsn: string;
}

/** Neon's `register` in a re-attach request and the body of `POST /control/v1/node` (`NodeRegisterRequest`). */
export interface NodeRegisterRequest {
  node_id?: number;
  listen_pg_addr: string;
  listen_pg_port: number;
  listen_grpc_addr?: string | null;
  listen_grpc_port?: number | null;
  listen_http_addr: string;
  listen_http_port: number;
  listen_https_port?: number | null;
  availability_zone_id: string;
}
