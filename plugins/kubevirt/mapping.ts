/* eslint-disable @typescript-eslint/no-explicit-any -- Kubernetes objects are free-form JSON here, read field by field */
/** Kubernetes / KubeVirt / Longhorn objects → the backend's value types. Pure functions. */
import {
  RUN_STRATEGIES,
  type ClusterNode,
  type ClusterVm,
  type NodeSelectorOperator,
  type NodeSelectorTerm,
  type RunStrategy,
  type VmMaintenanceTracking,
  type VmStatus,
  type VmVolume,
} from '../../src/cluster/types.ts';
import { compareNodeIds } from '../../src/domain/compare.ts';
import { migrationBoundMs } from './migration-bound.ts';
import type { DrainPod } from '../../src/domain/pods/drain.ts';
import { effectiveEvictionStrategy } from '../../src/domain/vm/eviction.ts';
import { MAINTENANCE_STRATEGY_LABEL, ZONE_LABEL } from '../../src/domain/labels.ts';

/** A Kubernetes object as the API returns it (plain JSON). */
export interface KObject {
  apiVersion?: string;
  kind?: string;
  metadata?: {
    name?: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    [key: string]: unknown;
  };
  spec?: any;
  status?: any;
}

export const TRACKING_NODE_ANNOTATION = 'harvesterhci.io/maintain-mode-strategy-node-name';
export const TRACKING_RUN_STRATEGY_ANNOTATION = 'harvesterhci.io/vmRunStrategy';
/** Ours: the strategy in force when the VM was stopped (vm:T3); Harvester keeps no such record. */
export const TRACKING_STRATEGY_ANNOTATION = 'lockkeeper.io/maintain-mode-recorded-strategy';
/** Ours, on VirtualMachineInstanceMigrations this plugin creates. */
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const MANAGED_BY = 'lockkeeper';
/** Marks the preferred-affinity term that `startVm(…, { nodeId })` adds for the start and removes after it. */
export const START_PREFERENCE_KEY = 'lockkeeper.io/start-on';

/** Harvester's node annotations (k8s:H1). */
export const DRAIN_REQUESTED = 'harvesterhci.io/drain-requested';
export const DRAIN_FORCED = 'harvesterhci.io/drain-forced';
export const MAINTAIN_STATUS = 'harvesterhci.io/maintain-status';
export const CONDITION_ANNOTATION = 'harvesterhci.io/condition';
export const CONDITION_MESSAGE_ANNOTATION = 'harvesterhci.io/condition-message';
/** KubeVirt's default `nodeDrainTaintKey` (k8s:E3, k8s:H4, k8s:U3). */
export const DRAIN_TAINT = 'kubevirt.io/drain';

const nameOf = (o: KObject) => o.metadata?.name ?? '';

/** k8s:H1: the node's maintenance state as its annotations say it. */
export function maintenanceMarkOf(node: KObject): ClusterNode['maintenanceMark'] {
  const a = node.metadata?.annotations ?? {};
  if (a[MAINTAIN_STATUS] === 'completed') return 'COMPLETED';
  if (a[MAINTAIN_STATUS] === 'running') return 'RUNNING';
  if (a[DRAIN_REQUESTED]) return 'REQUESTED';
  return null;
}

/** A pod as the drain rules read it (k8s:K2); `controllerFound` answers for a DaemonSet controller. */
export function toDrainPod(pod: KObject, controllerFound: (namespace: string, name: string) => boolean | null): DrainPod {
  const namespace = pod.metadata?.namespace ?? '';
  const owner = ((pod.metadata?.['ownerReferences'] as any[] | undefined) ?? []).find((r) => r.controller === true);
  const deleting = pod.metadata?.['deletionTimestamp'];
  return {
    namespace,
    name: nameOf(pod),
    uid: pod.metadata?.uid ?? '',
    phase: pod.status?.phase ?? 'Unknown',
    labels: { ...(pod.metadata?.labels ?? {}) },
    annotations: { ...(pod.metadata?.annotations ?? {}) },
    controller: owner ? { apiVersion: String(owner.apiVersion), kind: String(owner.kind), name: String(owner.name) } : null,
    controllerFound: owner?.kind === 'DaemonSet' ? controllerFound(namespace, String(owner.name)) : null,
    hasEmptyDir: ((pod.spec?.volumes as any[] | undefined) ?? []).some((v) => v.emptyDir !== undefined && v.emptyDir !== null),
    deletionTimestamp: deleting ? Date.parse(String(deleting)) : null,
    terminationGracePeriodSeconds: typeof pod.spec?.terminationGracePeriodSeconds === 'number' ? pod.spec.terminationGracePeriodSeconds : null,
  };
}

/** The `Ready` condition is `True`; `False` (kubelet not ready), `Unknown` (kubelet silent) or none is not Ready. */
export function nodeIsReady(node: KObject): boolean {
  return (node.status?.conditions ?? []).some((c: { type?: string; status?: string }) => c.type === 'Ready' && c.status === 'True');
}

/** Roles from `node-role.kubernetes.io/<role>` labels; `master` counts as `control-plane`. */
export function rolesOf(labels: Record<string, string>): string[] {
  const roles = new Set<string>();
  for (const key of Object.keys(labels)) {
    if (!key.startsWith('node-role.kubernetes.io/')) continue;
    const role = key.slice('node-role.kubernetes.io/'.length);
    if (role) roles.add(role === 'master' ? 'control-plane' : role);
  }
  return [...roles].sort();
}

export function toClusterNode(node: KObject): ClusterNode {
  const labels = { ...(node.metadata?.labels ?? {}) };
  return {
    id: nameOf(node),
    name: nameOf(node),
    zone: labels[ZONE_LABEL] ?? null,
    roles: rolesOf(labels),
    // Never WARMING_UP: Kubernetes has no re-attach step (see README.md, "No re-attach").
    availability: nodeIsReady(node) ? 'ACTIVE' : 'OFFLINE',
    cordoned: node.spec?.unschedulable === true,
    labels,
    // Changes when the node reboots: how a rollout knows it restarted (rollout:O7).
    bootId: node.status?.nodeInfo?.bootID ?? null,
    maintenanceMark: maintenanceMarkOf(node),
  };
}

export const isRunStrategy = (v: unknown): v is RunStrategy => typeof v === 'string' && (RUN_STRATEGIES as readonly string[]).includes(v);

/** `spec.runStrategy`, or the deprecated `spec.running` (true → Always, false/absent → Halted). */
export function runStrategyOf(vm: KObject): RunStrategy {
  const rs = vm.spec?.runStrategy;
  if (isRunStrategy(rs)) return rs;
  return vm.spec?.running === true ? 'Always' : 'Halted';
}

export function trackingOf(vm: KObject): VmMaintenanceTracking | null {
  const a = vm.metadata?.annotations ?? {};
  const nodeName = a[TRACKING_NODE_ANNOTATION];
  if (!nodeName) return null;
  const saved = a[TRACKING_RUN_STRATEGY_ANNOTATION];
  return {
    nodeName,
    // Set by Harvester itself (no record of ours): the label is the best we know.
    strategy: a[TRACKING_STRATEGY_ANNOTATION] ?? vm.metadata?.labels?.[MAINTENANCE_STRATEGY_LABEL] ?? 'ShutdownAndRestartAfterDisable',
    savedRunStrategy: isRunStrategy(saved) ? saved : null,
  };
}

/** The annotations that record `tracking` (null values remove, for a merge patch). */
export function trackingAnnotations(tracking: VmMaintenanceTracking | null): Record<string, string | null> {
  return {
    [TRACKING_NODE_ANNOTATION]: tracking?.nodeName ?? null,
    [TRACKING_STRATEGY_ANNOTATION]: tracking?.strategy ?? null,
    [TRACKING_RUN_STRATEGY_ANNOTATION]: tracking?.savedRunStrategy ?? null,
  };
}

/** A VMI that exists and has not finished. */
export function vmiIsActive(vmi: KObject | undefined | null): vmi is KObject {
  return !!vmi && !['Succeeded', 'Failed'].includes(vmi.status?.phase) && !vmi.metadata?.['deletionTimestamp'];
}

function statusOf(vm: KObject, vmi: KObject | null): VmStatus {
  const printable: string | undefined = vm.status?.printableStatus;
  const migrating = vmi?.status?.migrationState && vmi.status.migrationState.completed !== true;
  switch (printable) {
    case 'Running':
    case 'Paused':
      return migrating ? 'Migrating' : vmi ? 'Running' : 'Starting';
    case 'Migrating':
      return 'Migrating';
    case 'Stopped':
      return vmi ? 'Stopping' : 'Stopped';
    case 'Stopping':
    case 'Terminating':
      return 'Stopping';
    case undefined:
      return vmi ? (vmi.status?.phase === 'Running' ? 'Running' : 'Starting') : 'Stopped';
    default:
      // Starting, Provisioning, WaitingForVolumeBinding, ErrorUnschedulable, CrashLoopBackOff, …
      return vmi?.status?.phase === 'Running' ? 'Running' : 'Starting';
  }
}

/**
 * matchFields are not read: a term that has only them reads as empty and so matches no
 * node. The plan then reports vm:N3 rather than predicting a move the scheduler may refuse.
 */
function requiredAffinityOf(podSpec: any): NodeSelectorTerm[] {
  const terms: any[] = podSpec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? [];
  return terms.map((t) => ({
    matchExpressions: (t.matchExpressions ?? []).map((e: any) => ({
      key: String(e.key),
      operator: e.operator as NodeSelectorOperator,
      values: [...(e.values ?? [])].map(String),
    })),
  }));
}

/** Claim name per VM volume backed by a PVC (directly or through a DataVolume, whose PVC has its name). */
export function claimVolumes(vm: KObject): { name: string; claim: string }[] {
  const volumes: any[] = vm.spec?.template?.spec?.volumes ?? [];
  return volumes.flatMap((v) => {
    const claim = v.persistentVolumeClaim?.claimName ?? v.dataVolume?.name;
    return claim ? [{ name: String(v.name), claim: String(claim) }] : [];
  });
}

/** Replica health by Longhorn volume: a replica is healthy when started and not failed. */
export function replicasByVolume(replicas: readonly KObject[]): Map<string, { nodeId: string; healthy: boolean }[]> {
  const out = new Map<string, { nodeId: string; healthy: boolean }[]>();
  for (const r of replicas) {
    const volume = r.spec?.volumeName;
    if (!volume) continue;
    const list = out.get(volume) ?? [];
    list.push({ nodeId: String(r.spec?.nodeID ?? ''), healthy: r.status?.started === true && !r.spec?.failedAt });
    out.set(volume, list);
  }
  for (const list of out.values()) list.sort((a, b) => compareNodeIds(a.nodeId, b.nodeId));
  return out;
}

/**
 * A VM's volumes with their replicas: VM volume → PVC (`spec.volumeName`, the Longhorn
 * volume) → replicas. Without Longhorn (`replicas` null) every volume has none.
 */
export function volumesOf(
  vm: KObject,
  pvcVolumeName: (namespace: string, claim: string) => string | undefined,
  replicas: Map<string, { nodeId: string; healthy: boolean }[]> | null,
): VmVolume[] {
  const namespace = vm.metadata?.namespace ?? '';
  return claimVolumes(vm).map(({ name, claim }) => {
    const longhornVolume = replicas ? pvcVolumeName(namespace, claim) : undefined;
    return { name, replicas: longhornVolume ? (replicas!.get(longhornVolume) ?? []).map((r) => ({ ...r })) : [] };
  });
}

/**
 * `clusterEvictionStrategy`: the KubeVirt CR's `spec.configuration.evictionStrategy` (k8s:E1),
 * null when unset or when there is no CR.
 */
/**
 * k8s:C9 (c): a migration of this VM that has not ended and that Lockkeeper did not create
 * (KubeVirt's evacuation, a person's): `namespace/name`, or null. Found as KubeVirt finds
 * a VMI's active migration (k8s:C5).
 */
export function foreignMigrationOf(vm: KObject, migrations: readonly KObject[]): string | null {
  const namespace = vm.metadata?.namespace;
  const name = nameOf(vm);
  const m = migrations.find(
    (x) =>
      x.metadata?.namespace === namespace &&
      (x.metadata?.labels?.['kubevirt.io/vmi-name'] ?? x.spec?.vmiName) === name &&
      !['Succeeded', 'Failed'].includes(x.status?.phase) &&
      x.metadata?.labels?.[MANAGED_BY_LABEL] !== MANAGED_BY,
  );
  return m ? `${namespace}/${m.metadata?.name}` : null;
}

export function toClusterVm(
  vm: KObject,
  vmiOrNull: KObject | null | undefined,
  volumes: VmVolume[],
  clusterEvictionStrategy: unknown = null,
  migrations: readonly KObject[] = [],
  clusterMigrations: Record<string, unknown> = {},
): ClusterVm {
  const vmi = vmiIsActive(vmiOrNull) ? vmiOrNull : null;
  const namespace = vm.metadata?.namespace ?? '';
  const name = nameOf(vm);
  const labels = { ...(vm.metadata?.labels ?? {}) };
  const status = statusOf(vm, vmi);
  const condition = (vmi?.status?.conditions ?? []).find((c: { type?: string }) => c.type === 'LiveMigratable');
  const liveMigratable = !condition || condition.status !== 'False';
  const podSpec = vm.spec?.template?.spec;
  const foreign = vmi ? foreignMigrationOf(vm, migrations) : null;
  return {
    id: `${namespace}/${name}`,
    namespace,
    name,
    nodeId: status === 'Stopped' ? null : (vmi?.status?.nodeName ?? null),
    runStrategy: runStrategyOf(vm),
    status,
    maintenanceStrategyLabel: labels[MAINTENANCE_STRATEGY_LABEL] ?? null,
    labels,
    volumes: volumes.map((v) => ({ name: v.name, replicas: v.replicas.map((r) => ({ ...r })) })),
    liveMigratable,
    liveMigratableReason: liveMigratable ? null : (condition?.reason ?? 'Unknown'),
    nodeSelector: { ...(podSpec?.nodeSelector ?? {}) },
    requiredNodeAffinity: requiredAffinityOf(podSpec),
    tracking: trackingOf(vm),
    // k8s:E1: the VMI's value (KubeVirt copied the cluster's into it at creation), else the cluster's now.
    evictionStrategy: effectiveEvictionStrategy(vmi?.spec?.evictionStrategy, clusterEvictionStrategy),
    ...(foreign && { foreignMigration: foreign }),
    migrationBoundMs: migrationBoundMs(vmi?.spec ?? podSpec, clusterMigrations),
  };
}

/** `namespace/name` → its parts; null when malformed. */
export function parseVmId(id: string): { namespace: string; name: string } | null {
  const parts = id.split('/');
  if (parts.length !== 2 || !parts[0] || !parts[1]) return null;
  return { namespace: parts[0], name: parts[1] };
}
