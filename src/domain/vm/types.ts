/**
 * Shapes the VM-maintenance rules work on (vm: rules in docs/rules.md). Pure data; the
 * domain imports nothing of ours, so these mirror the cluster types structurally.
 */
import type { NodeSelectorTerm } from '../placement.ts';
import type { EvictionStrategy } from './eviction.ts';
import type { MaintenanceStrategy } from './strategy.ts';

export const MAINTENANCE_PHASES = ['VALIDATING', 'DRAINING', 'EVACUATING', 'COMPLETED', 'ERROR'] as const;
export type MaintenancePhase = (typeof MAINTENANCE_PHASES)[number];

/** KubeVirt run strategies. */
export const RUN_STRATEGIES = ['Always', 'RerunOnFailure', 'Manual', 'Halted', 'Once'] as const;
export type RunStrategy = (typeof RUN_STRATEGIES)[number];

export interface MaintNode {
  id: string;
  name: string;
  /** Ready / online: availability ACTIVE. */
  ready: boolean;
  cordoned: boolean;
  roles: string[];
  labels: Record<string, string>;
  /** Null when the node is not in maintenance. */
  maintenancePhase: MaintenancePhase | null;
  /** k8s:H5: Harvester's maintenance annotations on the node (whoever wrote them); absent/null: none. */
  externalMaintenance?: 'REQUESTED' | 'RUNNING' | 'COMPLETED' | null;
  /** False for a node no VM can run on (a pageserver only, role `storage`); absent: it can. */
  hostsVms?: boolean;
}

export interface MaintVm {
  id: string;
  namespace: string;
  name: string;
  /** Where it runs; null when it has no running instance. */
  nodeId: string | null;
  runStrategy: RunStrategy;
  status: 'Running' | 'Stopped' | 'Starting' | 'Stopping' | 'Migrating';
  maintenanceStrategyLabel: string | null;
  volumes: { name: string; replicas: { nodeId: string; healthy: boolean }[] }[];
  liveMigratable: boolean;
  liveMigratableReason: string | null;
  nodeSelector: Record<string, string>;
  requiredNodeAffinity: NodeSelectorTerm[];
  tracking: VmTracking | null;
  /**
   * k8s:E1: KubeVirt's effective eviction strategy; null when nothing sets it (VMI nor
   * cluster); absent when the backend has no such notion. Both mean live migration (k8s:E5).
   */
  evictionStrategy?: EvictionStrategy | null;
}

/** Restart tracking (vm:T1): where the VM was stopped, under which strategy, and its run strategy before. */
export interface VmTracking {
  nodeName: string;
  strategy: string;
  savedRunStrategy: RunStrategy | null;
}

/** vm:N1–N3. */
export type NonMigratableReason =
  { code: 'LastHealthyReplica'; volume: string } | { code: 'NotLiveMigratable'; backendReason: string } | { code: 'NodeSchedulingRequirementsNotMet' };

/** What enabling maintenance does to one VM on the node. */
export type VmAction =
  /** Live-migrate to `targetNodeId` (the node the plan predicts and the run asks for). */
  | { kind: 'MIGRATE'; targetNodeId: string }
  /**
   * Stop (run strategy Halted). `restart` says what happens later: never, once the node
   * is empty (on `restartNodeId`, another node), or on disable (on the recorded node).
   * `track` is false for Shutdown and under force (vm:F1): nothing is recorded.
   */
  | { kind: 'STOP'; restart: 'NEVER' | 'AFTER_ENABLE' | 'AFTER_DISABLE'; track: boolean; restartNodeId: string | null; forced: boolean }
  /** k8s:E5: eviction strategy `None`: its launcher pod is evicted; the run strategy decides whether it restarts (no tracking). */
  | { kind: 'EVICT' }
  /** k8s:E5: eviction strategy `External`: left alone for an outside controller; ERROR at the deadline if it stays. */
  | { kind: 'EXTERNAL' }
  /** Nothing to do: the VM is already halted (vm:M2), or not running. */
  | { kind: 'NONE'; why: 'ALREADY_HALTED' | 'NOT_RUNNING' };

export interface VmPlanEntry {
  vmId: string;
  strategy: MaintenanceStrategy;
  /** The VM carries a strategy label (vm:F1 treats labelled VMs differently). */
  labelled: boolean;
  /** False when the label holds an invalid value (vm:V2: treated as Migrate, with a warning). */
  labelValid: boolean;
  nonMigratable: NonMigratableReason[];
  /** k8s:E1: null when nothing sets it (or the backend has none). */
  evictionStrategy: EvictionStrategy | null;
  action: VmAction;
  /** Set when this VM alone makes the request fail (vm:N4: non-migratable Migrate VM without force). */
  blocksEnable: boolean;
}

export type PrecheckRefusal =
  | { code: 'NOT_FOUND'; message: string }
  | { code: 'UNAVAILABLE'; message: string }
  | { code: 'ALREADY_IN_MAINTENANCE'; message: string; phase: MaintenancePhase }
  | { code: 'LAST_AVAILABLE_NODE'; message: string }
  | { code: 'CONTROL_PLANE_QUORUM'; message: string }
  | { code: 'GATEWAY_ON_NODE'; message: string }
  | { code: 'NO_VMS'; message: string }
  | { code: 'NON_MIGRATABLE_VMS'; message: string; byReason: Record<string, string[]> };

export interface MaintenancePlan {
  nodeId: string;
  force: boolean;
  /** Why enable would be refused; empty when it would be accepted. vm:P1–P4 first, then vm:N4. */
  refusals: PrecheckRefusal[];
  /** Every VM on the node (running there, or tracked to it), in namespace/name order. */
  vms: VmPlanEntry[];
  /** Human-readable notes, e.g. invalid strategy labels treated as Migrate (vm:V2). */
  warnings: string[];
}
