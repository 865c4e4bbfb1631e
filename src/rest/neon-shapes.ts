/**
 * The Neon storage controller's REST shapes and spellings (storage-drain-fill.md §9, summarised in docs/rules.md;
 * Neon `libs/pageserver_api/src/controller_api.rs`), and their mapping from ours.
 */
import { z } from 'zod';
import type { NodeAliases } from '../cluster/backend.ts';
import type { ClusterNode } from '../cluster/types.ts';
import { LISTEN_LABELS } from '../domain/labels.ts';
import { isSafeToRestart, type RemainingWorkload } from '../domain/remaining.ts';
import { NEON_AVAILABILITY_NAMES, NEON_POLICY_NAMES, SCHEDULING_POLICIES, type Availability, type SchedulingPolicy } from '../domain/storage/policy.ts';

/** Neon's `NodeDescribeResponse`. */
export interface NeonNode {
  /** A JSON integer when our node id is a canonical integer (every Neon node), else our string id. */
  id: number | string;
  availability: string;
  scheduling: string;
  availability_zone_id: string;
  listen_http_addr: string;
  listen_http_port: number;
  listen_https_port: number | null;
  listen_pg_addr: string;
  listen_pg_port: number;
  /** neon:L8 (the Decision): the gRPC listener, null when unknown. */
  listen_grpc_addr: string | null;
  listen_grpc_port: number | null;
}

/**
 * Without a listen label (or with one that is not a valid port) the facade reports the
 * node's name as the host and Neon's pageserver defaults: HTTP 9898, libpq 6400. HTTPS and
 * gRPC listeners are reported when their labels say so, else null.
 */
const DEFAULT_PAGESERVER_HTTP_PORT = 9898;
const DEFAULT_PAGESERVER_PG_PORT = 6400;

const CANONICAL_INTEGER = /^(0|[1-9][0-9]*)$/;
const U64_MAX = 2n ** 64n - 1n;

/**
 * `id` as Neon's clients expect it: a number when it is a canonical integer that JSON numbers
 * carry exactly. On a hyperconverged host (issue 26) the node's id is its Kubernetes name and
 * Neon's is the pageserver's integer: `aliases` gives it.
 */
export function neonNodeId(id: string, aliases?: NodeAliases): number | string {
  const neon = aliases ? aliases.external(id) : id;
  return CANONICAL_INTEGER.test(neon) && Number.isSafeInteger(Number(neon)) ? Number(neon) : neon;
}

/** A Neon node id (from a path or a body) as the node's id here: the host's name on a hyperconverged host. */
export const nodeIdOfNeon = (neonId: string, aliases?: NodeAliases): string => (aliases ? aliases.internal(neonId) : neonId);

/**
 * A `:node_id` path segment as Neon parses it (a u64): our node id in canonical form
 * (`007` → `7`), or null when it is not a non-negative integer in range.
 */
export function parseNodeIdSegment(segment: string): string | null {
  if (!/^[0-9]{1,20}$/.test(segment)) return null;
  const value = BigInt(segment);
  return value <= U64_MAX ? value.toString() : null;
}

/**
 * Neon's order of node ids (u64s, compared exactly even beyond 2^53): integers in numeric
 * order before any other id, other ids in code-unit order. Not the node order of the rest
 * of Lockkeeper (domain/compare.ts): the facade answers as Neon's storage controller does.
 */
export function compareNeonNodeIds(a: string, b: string): number {
  const na = CANONICAL_INTEGER.test(a);
  const nb = CANONICAL_INTEGER.test(b);
  if (na && nb) return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
  if (na !== nb) return na ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

function optionalPort(label: string | undefined): number | null {
  if (label === undefined || !/^[0-9]{1,5}$/.test(label)) return null;
  const n = Number(label);
  return n >= 1 && n <= 65_535 ? n : null;
}

function port(label: string | undefined, fallback: number): number {
  if (label === undefined || !/^[0-9]{1,5}$/.test(label)) return fallback;
  const n = Number(label);
  return n >= 1 && n <= 65_535 ? n : fallback;
}

export function toNeonNode(node: ClusterNode, policy: SchedulingPolicy, aliases?: NodeAliases): NeonNode {
  const labels = node.labels;
  return {
    id: neonNodeId(node.id, aliases),
    availability: NEON_AVAILABILITY_NAMES[node.availability],
    scheduling: NEON_POLICY_NAMES[policy],
    // Neon's field is a plain string (every Neon node has an AZ); a node without a zone reports "".
    availability_zone_id: node.zone ?? '',
    listen_http_addr: labels[LISTEN_LABELS.httpAddr] || node.name,
    listen_http_port: port(labels[LISTEN_LABELS.httpPort], DEFAULT_PAGESERVER_HTTP_PORT),
    listen_https_port: optionalPort(labels[LISTEN_LABELS.httpsPort]),
    listen_pg_addr: labels[LISTEN_LABELS.pgAddr] || node.name,
    listen_pg_port: port(labels[LISTEN_LABELS.pgPort], DEFAULT_PAGESERVER_PG_PORT),
    listen_grpc_addr: labels[LISTEN_LABELS.grpcAddr] || null,
    listen_grpc_port: optionalPort(labels[LISTEN_LABELS.grpcPort]),
  };
}

/**
 * Lockkeeper's additions to the node object: whether the node may be restarted now and
 * what would lose service otherwise (domain/remaining.ts), in the facade's snake_case.
 */
export interface NeonNodeSafety {
  safe_to_restart: boolean;
  remaining_workloads: { kind: RemainingWorkload['kind']; id: string; reason: string; message: string }[];
}

export function toNeonSafety(remaining: readonly RemainingWorkload[]): NeonNodeSafety {
  return {
    safe_to_restart: isSafeToRestart(remaining),
    remaining_workloads: remaining.map(({ kind, id, reason, message }) => ({ kind, id, reason, message })),
  };
}

const POLICY_BY_NEON_NAME = new Map(SCHEDULING_POLICIES.map((p) => [NEON_POLICY_NAMES[p], p] as const));
const AVAILABILITY_BY_NEON_NAME = new Map((Object.keys(NEON_AVAILABILITY_NAMES) as Availability[]).map((a) => [NEON_AVAILABILITY_NAMES[a], a] as const));

const neonPolicy = z.string().transform((name, ctx) => {
  const policy = POLICY_BY_NEON_NAME.get(name);
  if (policy) return policy;
  ctx.addIssue({ code: 'custom', message: `unknown scheduling policy ${JSON.stringify(name)}; expected one of ${[...POLICY_BY_NEON_NAME.keys()].join(', ')}` });
  return z.NEVER;
});

const neonAvailability = z.string().transform((name, ctx) => {
  const availability = AVAILABILITY_BY_NEON_NAME.get(name);
  if (availability) return availability;
  ctx.addIssue({
    code: 'custom',
    message: `unknown availability ${JSON.stringify(name)}; expected one of ${[...AVAILABILITY_BY_NEON_NAME.keys()].join(', ')}`,
  });
  return z.NEVER;
});

/**
 * Neon's `NodeConfigureRequest`. `null` means absent, as with serde's `Option`. Unlike
 * Neon (serde ignores unknown fields there) unknown fields are refused, so that a
 * misspelt `scheduling` is an error rather than a silent no-op; Neon's own clients send
 * only these three fields.
 */
export const nodeConfigureRequestSchema = z
  .object({
    node_id: z.number().int().nonnegative(),
    availability: neonAvailability.nullish(),
    scheduling: neonPolicy.nullish(),
  })
  .strict();

/** Neon's `NodeShard` in a `NodeShardResponse`. */
export interface NeonNodeShard {
  tenant_shard_id: string;
  is_observed_secondary: boolean;
  is_intended_secondary: boolean;
}

const portNumber = z.number().int().min(1).max(65_535);

/**
 * Neon's `NodeRegisterRequest` (neon:L1). `node_ip_addr` (Hadron only) is accepted and
 * ignored; other unknown fields are refused, as for the config body.
 */
export const nodeRegisterRequestSchema = z
  .object({
    node_id: z.number().int().nonnegative(),
    listen_pg_addr: z.string().min(1),
    listen_pg_port: portNumber,
    listen_grpc_addr: z.string().min(1).nullish(),
    listen_grpc_port: portNumber.nullish(),
    listen_http_addr: z.string().min(1),
    listen_http_port: portNumber,
    listen_https_port: portNumber.nullish(),
    availability_zone_id: z.string().min(1),
    node_ip_addr: z.string().nullish(),
  })
  .strict();

const UNIT_MS: Record<string, number> = {
  ms: 1,
  msec: 1,
  s: 1000,
  sec: 1000,
  secs: 1000,
  m: 60_000,
  min: 60_000,
  mins: 60_000,
  h: 3_600_000,
  hr: 3_600_000,
  hours: 3_600_000,
};

/** A humantime duration as Neon's config takes it (`30s`, `5m`, `1h 30m`, `250ms`), in milliseconds; null when it is not one. */
export function parseHumantime(text: string): number | null {
  const parts = text.trim().split(/\s+/);
  let total = 0;
  for (const part of parts) {
    const m = /^([0-9]+)([a-z]+)$/.exec(part);
    const unit = m ? UNIT_MS[m[2]!] : undefined;
    if (!m || unit === undefined) return null;
    total += Number(m[1]) * unit;
  }
  return parts.length && text.trim() ? total : null;
}

const humantime = z.string().transform((text, ctx) => {
  const ms = parseHumantime(text);
  if (ms !== null) return ms;
  ctx.addIssue({ code: 'custom', message: `not a duration: ${JSON.stringify(text)} (e.g. "30s", "5m")` });
  return z.NEVER;
});

/** Neon's `TenantShardMigrateRequest` (neon:W1). */
export const migrateRequestSchema = z
  .object({
    node_id: z.number().int().nonnegative(),
    origin_node_id: z.number().int().nonnegative().nullish(),
    migration_config: z
      .object({
        override_scheduler: z.boolean().default(false),
        prewarm: z.boolean().default(true),
        secondary_warmup_timeout: humantime.nullish(),
        secondary_download_request_timeout: humantime.nullish(),
      })
      .strict()
      .nullish(),
  })
  .strict();

/** Neon's shard scheduling policies as its API spells them. */
export const NEON_SHARD_POLICY = { Active: 'ACTIVE', Essential: 'ESSENTIAL', Pause: 'PAUSE', Stop: 'STOP' } as const;

/** Neon's `TenantPolicyRequest` (neon:W7): `placement` is `"Detached"`, `"Secondary"` or `{"Attached": n}`. */
export const tenantPolicyRequestSchema = z
  .object({
    placement: z.union([z.literal('Detached'), z.literal('Secondary'), z.object({ Attached: z.number().int().nonnegative() }).strict()]).nullish(),
    scheduling: z.enum(['Active', 'Essential', 'Pause', 'Stop']).nullish(),
  })
  .strict();

/** neon:W9: `{"<tenant_shard_id>": "<az>" | null, …}`. */
export const preferredAzsRequestSchema = z.record(z.string(), z.string().nullable());
