/** Value types a backend reports. Plain data: safe to copy, compare and serialise. */
import type { NodeSelectorTerm } from '../domain/placement.ts';
import type { ShardPolicy } from '../domain/storage/shards.ts';
import type { EvictionStrategy } from '../domain/vm/eviction.ts';
import type { RunStrategy } from '../domain/vm/types.ts';

// The domain owns these rules; the plugin contract keeps their names.
export { NODE_SELECTOR_OPERATORS, type NodeSelectorOperator, type NodeSelectorTerm } from '../domain/placement.ts';
export { SHARD_POLICIES } from '../domain/storage/shards.ts';
export { RUN_STRATEGIES, type RunStrategy } from '../domain/vm/types.ts';

export type NodeAvailability = 'ACTIVE' | 'WARMING_UP' | 'OFFLINE';

export interface ClusterNode {
  /** Stable id: the Kubernetes node name, or the pageserver's numeric id as a string. */
  id: string;
  name: string;
  zone: string | null;
  /** e.g. `control-plane`, `etcd`, `worker`, `storage`. */
  roles: string[];
  availability: NodeAvailability;
  cordoned: boolean;
  labels: Record<string, string>;
  /**
   * The node's current boot: a new value after every restart, the same while it runs
   * (Kubernetes `status.nodeInfo.bootID`; the simulated cluster counts its boots). Absent
   * or null when the backend cannot tell: a pageserver's restart shows as its re-attach
   * (`nodeReattached`). A rollout's health gate (rollout:O7) takes either as "restarted".
   */
  bootId?: string | null;
  /**
   * k8s:H1/H5: Harvester's maintenance state written on the node (by Harvester or by
   * Lockkeeper, k8s:H3); absent or null when none. Such a node takes no VM.
   */
  maintenanceMark?: 'REQUESTED' | 'RUNNING' | 'COMPLETED' | null;
  /**
   * A node several backends know (a hyperconverged host: a Kubernetes node that is also a
   * pageserver, issue 26): each backend's own view of its availability. `availability` is the
   * least available of them (nothing is scheduled on a host one side considers down); each
   * side's rules act on its own (a pageserver lost fails its shards over, neon:H5; a
   * Kubernetes node NotReady follows k8s:U). Absent on a node only one backend knows.
   */
  sides?: NodeSide[];
}

export interface NodeSide {
  /** The backend's name (`kubevirt`, `pageserver`). */
  backend: string;
  availability: NodeAvailability;
  /** This side's backend serves tenant shards: its availability is the one failover acts on (neon:H5), not the host's least. */
  servesShards?: true;
}

/**
 * The availability the storage rules act on: on a hyperconverged host the side that serves
 * shards (a Kubernetes node NotReady whose pageserver still answers keeps its shards), else
 * the node's own.
 */
export function shardSideAvailability(node: ClusterNode): NodeAvailability {
  return node.sides?.find((s) => s.servesShards)?.availability ?? node.availability;
}

export const VM_STATUSES = ['Running', 'Stopped', 'Starting', 'Stopping', 'Migrating'] as const;
export type VmStatus = (typeof VM_STATUSES)[number];

export interface VolumeReplica {
  nodeId: string;
  healthy: boolean;
}

export interface VmVolume {
  name: string;
  replicas: VolumeReplica[];
}

/**
 * Restart tracking recorded on a VM before a maintenance stop (vm:T1).
 * Kept on the VM itself (Kubernetes: annotations) so that other tools see it too.
 */
export interface VmMaintenanceTracking {
  nodeName: string;
  /** The strategy in force when the VM was stopped (vm:T3: the restart decision uses this). */
  strategy: string;
  /** Run strategy before the stop, restored on restart (vm:T2). */
  savedRunStrategy: RunStrategy | null;
}

export interface ClusterVm {
  /** `namespace/name`. */
  id: string;
  namespace: string;
  name: string;
  /** Node the VM runs on; null while it has no running instance. */
  nodeId: string | null;
  runStrategy: RunStrategy;
  status: VmStatus;
  /** Raw value of the maintenance-strategy label, unvalidated (vm:V2); null when unset. */
  maintenanceStrategyLabel: string | null;
  labels: Record<string, string>;
  volumes: VmVolume[];
  /** The backend's own verdict (KubeVirt: VMI condition LiveMigratable). */
  liveMigratable: boolean;
  /** Why it is not live-migratable, e.g. `HostDeviceNotLiveMigratable`; null when it is. */
  liveMigratableReason: string | null;
  nodeSelector: Record<string, string>;
  requiredNodeAffinity: NodeSelectorTerm[];
  tracking: VmMaintenanceTracking | null;
  /** k8s:E1: KubeVirt's effective eviction strategy; null when nothing sets it; absent when the backend has none. */
  evictionStrategy?: EvictionStrategy | null;
  /** k8s:C9 (c): the migration in flight for this VM (`namespace/name`) when Lockkeeper did not create it; absent otherwise. */
  foreignMigration?: string;
  /**
   * The longest the backend's own controller lets one live migration of this VM run before
   * it ends it (KubeVirt: the target pod's pending bound plus the completion timeout, k8s:C10);
   * absent when the backend bounds none. Sizes the default maintenance deadline (vm:M7).
   */
  migrationBoundMs?: number;
}

export interface ClusterShard {
  /** Neon's tenant shard id: `<tenant>-<number:02x><count:02x>`, or the tenant id when unsharded. */
  id: string;
  tenantId: string;
  shardNumber: number;
  shardCount: number;
  attachedNodeId: string;
  secondaryNodeIds: string[];
  preferredZone: string | null;
  policy: ShardPolicy;
  /** neon:C14: the last compute notification for the shard's new location has not succeeded yet. Absent: the backend sends none. */
  pendingComputeNotification?: boolean;
}

/** A secondary location's download progress. `heatmapMtime` null means the lag is unknown. */
export interface SecondaryStatus {
  bytesTotal: number;
  bytesDownloaded: number;
  heatmapMtime: number | null;
}

export type ClusterEvent =
  | { type: 'nodeChanged'; node: ClusterNode }
  | { type: 'nodeRemoved'; nodeId: string }
  /** A node came back from a restart and re-attached (storage:X2). */
  | { type: 'nodeReattached'; nodeId: string }
  /**
   * The backend declared the node lost (neon:H3: no good heartbeat within the offline
   * interval; neon:H8: an operator's Offline): its shards should fail over (neon:H5). Follows
   * the node's `nodeChanged` to OFFLINE. A restart the backend expects back soon is not a loss.
   */
  | { type: 'nodeLost'; nodeId: string }
  | { type: 'vmChanged'; vm: ClusterVm }
  | { type: 'vmRemoved'; vmId: string }
  | { type: 'shardChanged'; shard: ClusterShard }
  /**
   * neon:L10: a call a node made to the controller (a pageserver's re-attach or validate
   * upcall), answered or refused, with the caller's address: the gateway records it as an
   * event and an audit entry.
   */
  | { type: 'nodeUpcall'; upcall: NodeUpcall };

export interface NodeUpcall {
  kind: 'RE_ATTACH' | 'VALIDATE';
  /** The node the call named (null when its body named none). */
  nodeId: string | null;
  /** The caller's address as the listener saw it (`ip:port`). */
  caller: string;
  /** `OK`, or why it was refused: `UNAUTHORIZED`, `RATE_LIMITED`, `REFUSED`, `ERROR`. */
  outcome: 'OK' | 'UNAUTHORIZED' | 'RATE_LIMITED' | 'REFUSED' | 'ERROR';
  status: number;
  /** What it did or why it was refused, e.g. `3 generation(s) bumped`. */
  detail: string;
}

/**
 * A listener may return a promise (the type is `void` so that any function fits): it says
 * when the event has been acted on, for the rare backend that must know before it answers
 * someone (the pageserver plugin answers a re-attach only once the node's policy change it
 * causes is recorded, neon:L3).
 */
export type ClusterEventListener = (event: ClusterEvent) => void;
