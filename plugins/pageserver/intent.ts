import { z } from 'zod';
import { SHARD_POLICIES } from '../../src/cluster/types.ts';
import type { ShardPolicy } from '../../src/domain/storage/shards.ts';
import type { TenantConfig } from '../../src/domain/storage/tenant-config.ts';
import type { LocationConfigMode } from './wire.ts';

/**
 * What the controller wants for one shard (Neon's `IntentState` plus the persisted
 * columns of `tenant_shards`). Kept in the gateway's database through the plugin store;
 * this is its in-memory copy, written through before anything depends on it.
 */
export interface ShardIntent {
  id: string;
  tenantId: string;
  shardNumber: number;
  shardCount: number;
  stripeSize: number;
  attachedNodeId: string;
  secondaryNodeIds: string[];
  /** The highest generation issued (the store's column). */
  generation: number;
  /** The node it was issued to (Neon's `generation_pageserver`). */
  generationNodeId: string | null;
  preferredZone: string | null;
  policy: ShardPolicy;
  /** Secondaries wanted: Neon's placement policy `Attached(n)`. */
  secondaryCount: number;
  /** neon:C14. */
  pendingComputeNotification: boolean;
  /**
   * neon:W10: the tenant's config (the same on every shard of the tenant, as Neon's
   * `tenant_shards.config`); null while unknown (its pageservers were unreachable when it was
   * adopted, or it was stored by a version that kept none): nothing is sent for it then.
   */
  tenantConfig: TenantConfig | null;
}

/** The JSON part of a stored shard (generation and its node are columns of their own). */
export const storedIntentSchema = z.object({
  tenantId: z.string(),
  shardNumber: z.number().int().nonnegative(),
  shardCount: z.number().int().nonnegative(),
  stripeSize: z.number().int().nonnegative(),
  attachedNodeId: z.string(),
  secondaryNodeIds: z.array(z.string()),
  preferredZone: z.string().nullable(),
  policy: z.enum(SHARD_POLICIES),
  secondaryCount: z.number().int().nonnegative(),
  pendingComputeNotification: z.boolean(),
  // Absent in rows of earlier versions: unknown until discovery reads it from a pageserver.
  tenantConfig: z.record(z.string(), z.unknown()).nullable().optional(),
});

export function intentJson(s: ShardIntent): Record<string, unknown> {
  const { id: _id, generation: _g, generationNodeId: _n, ...rest } = s;
  return rest;
}

/** A registered pageserver (neon:L1): where it listens and its zone. */
export interface NodeRecord {
  id: string;
  /** Base URL of its HTTP API. */
  url: string;
  name: string;
  zone: string;
  listenHttpAddr: string;
  listenHttpPort: number;
  listenHttpsPort: number | null;
  listenPgAddr: string;
  listenPgPort: number;
  listenGrpcAddr: string | null;
  listenGrpcPort: number | null;
  /** Lockkeeper's own flag; pageservers know nothing of it. */
  cordoned: boolean;
}

export const storedNodeSchema = z.object({
  url: z.string(),
  name: z.string(),
  zone: z.string(),
  listenHttpAddr: z.string(),
  listenHttpPort: z.number().int(),
  listenHttpsPort: z.number().int().nullable(),
  listenPgAddr: z.string(),
  listenPgPort: z.number().int(),
  listenGrpcAddr: z.string().nullable(),
  listenGrpcPort: z.number().int().nullable(),
  cordoned: z.boolean(),
});

export function nodeJson(n: NodeRecord): Record<string, unknown> {
  const { id: _id, ...rest } = n;
  return rest;
}

/**
 * What the controller believes a node holds for a shard; `unknown` after a call that may have
 * changed it, after a failure, while the node is offline. `conf`: the tenant config the
 * location holds (canonical JSON), when known (neon:W10: a differing one is sent again).
 */
export type Observed = { mode: LocationConfigMode; generation: number | null; conf?: string } | 'unknown';

export const describeObserved = (o: Observed) => (o === 'unknown' ? 'unknown' : o.generation === null ? o.mode : `${o.mode}@${o.generation}`);

/** A shard first seen with secondaries wants as many as it has; one without wants none (`Attached(0)`). */
export const defaultSecondaryCount = (secondaries: number): number => secondaries;

export function policyOf(value: string | undefined): ShardPolicy {
  return (SHARD_POLICIES as readonly string[]).includes(value ?? '') ? (value as ShardPolicy) : 'ACTIVE';
}
