import type { CutOverOptions, CutOverResult, FailoverControl, NodeRegistry, PlacementControl } from './shard-control.ts';
import type { NodeMaintenanceBackend } from './node-maintenance.ts';
import type { PodDrainBackend } from './pod-drain.ts';
import type { BackendSnapshot } from './rehearsal.ts';
import type { ClusterEventListener, ClusterNode, ClusterShard, ClusterVm, RunStrategy, SecondaryStatus, VmMaintenanceTracking } from './types.ts';

/** A merged node's id in a member backend's own terms, and back (hyperconverged hosts). */
export interface NodeAliases {
  /** The member's id for a node id (the integer for a pageserver on a Kubernetes node); the id itself when not aliased. */
  external(nodeId: string): string;
  /** The node id for a member's id; the id itself when not aliased. */
  internal(externalId: string): string;
}

/** Which workload kinds a backend serves. Optional behaviour is found here, never by plugin name. */
export interface BackendCapabilities {
  vms: boolean;
  shards: boolean;
  /**
   * False when the backend cannot see volume replicas (e.g. Longhorn is not installed):
   * VMs then report no replicas and the LastHealthyReplica rule (vm:N1) cannot be checked,
   * which plans say. Absent means the backend reports replicas.
   */
  replicaHealth?: boolean;
}

export interface VmFilter {
  nodeId?: string;
  namespace?: string;
  /** Every pair must match the VM's labels. */
  labels?: Record<string, string>;
}

export interface ShardFilter {
  /** Shards attached to this node. */
  attachedNodeId?: string;
  /** Shards with a secondary on this node. */
  secondaryNodeId?: string;
  tenantId?: string;
}

/** Which rows of a listing to return, chosen from how many match (GraphQL `first`/`after`/`last`/`before`). */
export type PagePicker = (totalCount: number) => { offset: number; limit: number };

/** One page of a listing, and how many rows the whole listing has. */
export interface Page<T> {
  rows: T[];
  totalCount: number;
}

/**
 * The contract every cluster backend implements (docs/architecture.md §2).
 *
 * Contracts that `test/contract/` checks for every plugin:
 * - Reads of an unknown id resolve to null (`getX`) or are left out (`getXs` gives null
 *   in that slot); they never throw NotFound.
 * - Every action on an unknown id rejects with `BackendError('NotFound')`.
 * - Every action is idempotent: asking for a state that already holds resolves at once
 *   and changes nothing (no event).
 * - Actions resolve when the change is complete as the backend sees it (the VM has
 *   migrated, stopped or started; the shard's roles are swapped), and reject with a
 *   BackendError otherwise. A node that is OFFLINE rejects actions touching it with
 *   `Unavailable`.
 * - Every change, whoever made it, is delivered to `watch` listeners after it happened.
 * - VM methods are present when `capabilities.vms`; shard methods when `capabilities.shards`.
 *   They reject with `Rejected` otherwise.
 */
export interface ClusterBackend {
  readonly name: string;
  readonly capabilities: BackendCapabilities;

  // --- nodes
  listNodes(): Promise<ClusterNode[]>;
  getNode(id: string): Promise<ClusterNode | null>;
  /** Batched read for DataLoader: one result slot per id, in order. */
  getNodes(ids: readonly string[]): Promise<(ClusterNode | null)[]>;
  cordonNode(id: string): Promise<void>;
  uncordonNode(id: string): Promise<void>;

  // --- virtual machines
  listVms(filter?: VmFilter): Promise<ClusterVm[]>;
  getVm(id: string): Promise<ClusterVm | null>;
  getVms(ids: readonly string[]): Promise<(ClusterVm | null)[]>;
  /**
   * Live-migrates a running VM away from `fromNodeId` (to `toNodeId` when given, else
   * where the backend schedules it). Resolves at once when the VM is no longer there.
   */
  migrateVm(id: string, options: { fromNodeId: string; toNodeId?: string }): Promise<void>;
  /** Sets run strategy Halted and waits until the VM is stopped. */
  stopVm(id: string): Promise<void>;
  /** Sets `runStrategy` (not Halted) and waits until the VM runs, on `nodeId` when given and possible. */
  startVm(id: string, options: { runStrategy: RunStrategy; nodeId?: string }): Promise<void>;
  /** Sets (or with null removes) the maintenance-strategy label, unvalidated. */
  setVmMaintenanceStrategyLabel(id: string, value: string | null): Promise<void>;
  /** Records (or with null removes) restart tracking on the VM. */
  setVmTracking(id: string, tracking: VmMaintenanceTracking | null): Promise<void>;

  /**
   * Optional: one page of `listVms(filter)` in the listing order (`compareNatural` of ids)
   * and how many VMs match, without copying the others (issue 15: a read of 50 of 10 000
   * VMs costs the page, not the whole list). `page` picks the rows from the count.
   * Backends without it are listed whole (`listVms`) and paged in memory.
   */
  pageVms?(filter: VmFilter, page: PagePicker): Promise<Page<ClusterVm>>;

  // --- tenant shards
  listShards(filter?: ShardFilter): Promise<ClusterShard[]>;
  /** Optional, as `pageVms`: in the listing order `compareShards` (tenant id, then shard number). */
  pageShards?(filter: ShardFilter, page: PagePicker): Promise<Page<ClusterShard>>;
  getShard(id: string): Promise<ClusterShard | null>;
  getShards(ids: readonly string[]): Promise<(ClusterShard | null)[]>;
  /** How far the shard's secondary on `nodeId` lags. */
  getSecondaryStatus(shardId: string, nodeId: string): Promise<SecondaryStatus>;
  /**
   * Swaps roles: the secondary on `toNodeId` becomes attached, `fromNodeId` keeps a
   * secondary. Resolves at once when `toNodeId` is already attached. Rejects with
   * Conflict when `toNodeId` holds no secondary or `fromNodeId` is not attached.
   * Backends that cut over in phases report them through `onProgress` and honour `signal`
   * (src/cluster/shard-control.ts); others may ignore both.
   */
  cutOverShard(id: string, options: { fromNodeId: string; toNodeId: string } & CutOverOptions): Promise<CutOverResult | void>;

  // --- changes
  /** Subscribes to backend events; returns the unsubscribe function. */
  watch(listener: ClusterEventListener): () => void;

  /**
   * ha:L4, ha:L8: this replica now leads; called before its operations resume. A backend that
   * keeps state of its own in the database (the pageserver plugin's intent) reads again what
   * the previous leader wrote here, so that no resumed step acts on what this replica read as a
   * stand-by. Absent: nothing to read again.
   */
  beforeLeading?(): Promise<void>;

  /** Optional controls of a simulated backend; real backends leave this undefined. */
  readonly simulation?: SimulationControls;

  /** Present when the backend fails shards over from a lost node (neon:H5) and takes commanded availability (neon:E6). */
  readonly failover?: FailoverControl;
  /** Present when the backend takes per-shard placements and policies (neon:W1–W9). */
  readonly placement?: PlacementControl;
  /** Present when nodes register and are deleted at run time (neon:L1–L7). */
  readonly registry?: NodeRegistry;
  // --- optional, by what the backend can do (Kubernetes: k8s: rules in docs/rules.md)
  /** Draining a node of its other pods (k8s:K1–K10); absent when the backend runs no pods. */
  readonly podDrain?: PodDrainBackend;
  /** Harvester's node maintenance state, migration cancel and delegation (k8s:H1–H9, k8s:C9). */
  readonly nodeMaintenance?: NodeMaintenanceBackend;
  /** k8s:U7: confirms that a node which stopped reporting is really down (stage 2 of node-down handling). */
  confirmNodeDown?(nodeId: string): Promise<void>;
  /**
   * Hyperconverged hosts (issue 26): for each of this backend's nodes that runs on a node of
   * another backend (a Kubernetes node), that node's name. Combined, the two are one node
   * under that name (src/cluster/hyperconverged.ts).
   */
  hosts?(): Record<string, string>;
  /**
   * Set by the composite on hyperconverged hosts: a node's id in its own backend's terms
   * (`external`: the pageserver's integer id, for the Neon REST facade) and back.
   */
  readonly nodeAliases?: NodeAliases;
  /**
   * Issue 33: the cluster's state as this backend reads it, as JSON that
   * rehearsal/loaders/<plugin>.ts loads into the plugin's simulator; one snapshot per plugin
   * (a combined backend concatenates its members'). A read: changes nothing, emits nothing.
   * Absent: the backend cannot be rehearsed.
   */
  snapshot?(): Promise<BackendSnapshot[]>;

  close(): Promise<void>;
}

export type { CutOverResult } from './shard-control.ts';

export const ACTION_KINDS = ['cordon', 'migrate', 'stop', 'start', 'cutOver'] as const;
export type ActionKind = (typeof ACTION_KINDS)[number];

export interface LatencySettings {
  /** Milliseconds for each action kind. */
  migrate: number;
  stop: number;
  start: number;
  cutOver: number;
  cordon: number;
}

export interface FaultSettings {
  /** Probability in [0, 1] that an action of this kind fails with a Transient error. */
  failureRate: Partial<Record<ActionKind, number>>;
  /** VMs or shards whose next moves never finish. */
  stuck: string[];
}

/** Driving a simulated cluster: exposed as the `simulation` mutation field in GraphQL. */
export interface SimulationControls {
  /** The node restarts: goes OFFLINE, comes back, re-attaches (WARMING_UP), then heartbeats (ACTIVE). */
  restartNode(nodeId: string): Promise<void>;
  setNodeOnline(nodeId: string, online: boolean): Promise<void>;
  setLatencies(latencies: Partial<LatencySettings>): LatencySettings;
  getLatencies(): LatencySettings;
  injectFaults(faults: Partial<FaultSettings>): FaultSettings;
  clearFaults(): FaultSettings;
  getFaults(): FaultSettings;
  /** Sets how many bytes a secondary still has to download and how fast it does (bytes per second). */
  setSecondaryLag(shardId: string, nodeId: string, lagBytes: number, downloadBytesPerSecond?: number): Promise<void>;
  /** Whether the secondary has a heatmap; without one `getSecondaryStatus` reports `heatmapMtime: null` (lag unknown). */
  setSecondaryHeatmapKnown(shardId: string, nodeId: string, known: boolean): Promise<void>;
  removeNode(nodeId: string): Promise<void>;
}
