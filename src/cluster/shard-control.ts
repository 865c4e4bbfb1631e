/**
 * Optional parts of the plugin contract for backends that control tenant shards beyond
 * drain and fill (Neon parity, spec neon-parity.md). Each is a member of ClusterBackend
 * (`failover`, `placement`, `registry`); the core finds them by presence, never by plugin
 * name, and answers a typed refusal where a backend lacks one.
 */
import type { NodeAvailability } from './types.ts';
import type { ShardPolicy } from '../domain/storage/shards.ts';
import type { TenantConfig } from '../domain/storage/tenant-config.ts';

/** What a backend may say about a cut-over that succeeded, e.g. that requests had to be retried. */
export interface CutOverResult {
  /** Shown on the step, e.g. "location_config on node 2 answered 503 twice; retried". */
  note?: string;
}

/** The phases of a cut-over as Neon's live migration (neon:C1–C9), and the roll-forward after a failure past neon:C4 (neon:C10). */
const CUT_OVER_PHASES = [
  'ORIGIN_STALE',
  'BASELINE',
  'WARM_UP',
  'GENERATION',
  'DESTINATION_MULTI',
  'WAL_CATCH_UP',
  'COMPUTE_NOTIFY',
  'ORIGIN_SECONDARY',
  'DESTINATION_SINGLE',
  'ROLLING_FORWARD',
  'DIRECT_ATTACH',
  // neon:W10: waiting for the tenant's config, unknown while its pageservers were unreachable.
  'TENANT_CONFIG',
] as const;
export type CutOverPhase = (typeof CUT_OVER_PHASES)[number];

export interface CutOverProgress {
  phase: CutOverPhase;
  /** What it waits for now, for the operation's waiting-on, e.g. "waiting for WAL catch-up on node 2". */
  description: string;
  /** The node it is talking to. */
  nodeId: string | null;
}

/** What a caller may pass to a cut-over beyond its two nodes. */
export interface CutOverOptions {
  /** Hears each phase as it starts (the operation shows it on its step). */
  onProgress?: (progress: CutOverProgress) => void;
  /**
   * A cancel (neon:C11): stops a cut-over waiting for WAL catch-up or the compute
   * notification. One that already issued the destination's generation is completed by a
   * direct attach instead, so the promise still resolves once the destination holds it.
   */
  signal?: AbortSignal;
  /** neon:C3's warm-up bounds; a backend's own defaults apply when absent. */
  warmup?: { timeoutMs: number; requestTimeoutMs: number };
}

/** What a caller may pass to `placeShard` beyond a cut-over's options. */
export interface PlaceOptions extends CutOverOptions {
  /**
   * neon:W1, neon:W4: the per-shard controls change the intent as Neon's API does: when the
   * reconcile fails before anything was issued to the new node, the intent stays there (the
   * call still rejects) and the background pass completes it once the node can take it.
   * Without it (drains, fills, failovers) the intent is put back and the shard stays put.
   */
  keepIntent?: boolean;
}

/** Failing over the shards of a lost node (neon:H5) and commanding a node's availability (neon:E6, neon:H8). */
export interface FailoverControl {
  /**
   * neon:H5d: `fromNodeId` (unavailable) stays in the intent as a secondary and `toNodeId`
   * is attached by a direct attach (a new generation, `AttachedSingle`, one compute
   * notification). `toNodeId` may hold no secondary (a cold attach). Resolves once it holds
   * the shard; a failed notification does not fail it (neon:C14), the result's note says so.
   */
  failOverShard(id: string, options: { fromNodeId: string; toNodeId: string }): Promise<CutOverResult | void>;
  /** The operator's say on a node's availability: `OFFLINE` at once (neon:H5 follows), `ACTIVE` after the node's activation (neon:H4), `WARMING_UP` from now. */
  setNodeAvailability(nodeId: string, availability: NodeAvailability): Promise<void>;
}

export interface ShardPlacement {
  attachedNodeId: string;
  secondaryNodeIds: string[];
}

/** What a controller knows of one shard beyond ClusterShard (Neon's tenant describe). */
export interface ShardDetails {
  id: string;
  generation: number;
  generationNodeId: string | null;
  /** neon:C14. */
  pendingComputeNotification: boolean;
  /** Secondaries wanted: Neon's placement policy `Attached(n)`. */
  secondaryCount: number;
  /** Per node: what the controller believes it holds (`AttachedSingle@4`, `Secondary`), or `unknown`. */
  observed: Record<string, string>;
  /** A reconcile is in flight. */
  reconciling: boolean;
}

/** Per-shard controls (neon:W1–W9): the core decides where; the backend makes it so. */
export interface PlacementControl {
  /**
   * Sets the shard's intent and reconciles it: a live cut-over (neon:C1–C9) when the
   * attached node changes and the old one is available, else a direct attach. Resolves once
   * the attached location is in place; rejects only when nothing was issued to the new node.
   */
  placeShard(id: string, placement: ShardPlacement, options?: PlaceOptions): Promise<CutOverResult | void>;
  /** neon:W6: stops the reconcile in flight; resolves true once it stopped, false when none ran. */
  cancelReconcile(id: string): Promise<boolean>;
  /** Persists the shard's scheduling policy (neon:W7) and, when given, how many secondaries it wants. */
  setShardPolicy(id: string, change: { policy?: ShardPolicy; secondaryCount?: number }): Promise<void>;
  /** neon:W9: persists the preferred zone; moves nothing. */
  setPreferredZone(id: string, zone: string | null): Promise<void>;
  describeShard(id: string): Promise<ShardDetails | null>;
  /**
   * neon:W10: the tenant's stored config (the same for all its shards); null while unknown
   * (its pageservers were unreachable when it was adopted). NotFound for an unknown tenant.
   * Absent: the backend keeps no tenant config.
   */
  getTenantConfig?(tenantId: string): Promise<TenantConfig | null>;
  /** neon:W10: stores the tenant's whole config for every shard at once, then reconciles them (waiting at most 5 s; a failure is only logged: the config is stored). */
  setTenantConfig?(tenantId: string, config: TenantConfig): Promise<void>;
}

/** Neon's node registration fields (neon:L1, neon:L8). */
export interface NodeRegistration {
  nodeId: string;
  listenHttpAddr: string;
  listenHttpPort: number;
  listenHttpsPort: number | null;
  listenPgAddr: string;
  listenPgPort: number;
  listenGrpcAddr: string | null;
  listenGrpcPort: number | null;
  availabilityZone: string;
}

/** Registered nodes and tombstones (neon:L1–L7). */
export interface NodeRegistry {
  /**
   * neon:L1. Rejects `Conflict` naming the differing field for a known id with another
   * address or zone, or a tombstoned id; `Unavailable` when the HTTP address does not resolve.
   */
  register(registration: NodeRegistration): Promise<'created' | 'updated' | 'unchanged'>;
  registration(nodeId: string): NodeRegistration | null;
  /** Ends a delete (neon:L4) or a drop (neon:L7): tombstone, forget its locations, cancel its calls, `nodeRemoved`. */
  tombstone(nodeId: string): Promise<void>;
  /** neon:L4 `force`: forget what the node holds without telling it. */
  forgetLocations(nodeId: string): Promise<void>;
  tombstones(): Promise<NodeRegistration[]>;
  /** neon:L7: rejects `NotFound` without a tombstone, `Conflict` while the node is registered. */
  removeTombstone(nodeId: string): Promise<void>;
}
