/* eslint-disable @typescript-eslint/no-explicit-any -- Kubernetes objects are free-form JSON here, read field by field */
import { BackendError } from '../../src/cluster/errors.ts';
import type { BackendSnapshot } from '../../src/cluster/rehearsal.ts';
import type { KubeApi } from './api.ts';
import type { ClusterCache } from './cache.ts';
import { call, RESOURCES } from './kube.ts';
import type { KObject } from './mapping.ts';
import type { KubevirtOptions } from './options.ts';

/**
 * Harvester settings a rehearsal reads (by name only: the ClusterRole grants `get` on these
 * names and no other, since settings such as `ssl-certificates` hold private keys).
 */
const HARVESTER_SNAPSHOT_SETTINGS = ['vm-force-reset-policy', 'default-vm-termination-grace-period-seconds'] as const;

/** A trimmed Kubernetes object: only the fields a rehearsal's simulator needs (see `KubevirtSnapshotData`). */
export interface SnapshotObject {
  metadata: {
    name: string;
    namespace?: string;
    uid?: string;
    labels: Record<string, string>;
    annotations: Record<string, string>;
    ownerReferences?: { apiVersion?: string; kind: string; name: string; uid?: string; controller?: boolean }[];
    deletionTimestamp?: string;
  };
  spec: any;
  status: any;
}

/**
 * What `KubevirtBackend.snapshot()` reads (issue 33), JSON only: the objects as the API
 * server returns them, trimmed to the fields maintenance reads. Credentials are never read
 * (no Secrets, no ServiceAccounts); what could carry one inside the objects read is dropped:
 * container specs (env, args), VM volume sources other than claims (cloud-init user data),
 * `kubectl.kubernetes.io/last-applied-configuration` and other large or secret-named annotations.
 */
export interface KubevirtSnapshotData {
  version: 1;
  /** How the live backend runs maintenance: Harvester's controllers (`delegate`) or Lockkeeper itself (`act`). */
  mode: 'delegate' | 'act';
  /** Harvester's settings (allowlisted, `HARVESTER_SNAPSHOT_SETTINGS`) when in Harvester mode; null otherwise. */
  harvester: { settings: { name: string; value: string | null; default: string | null }[] } | null;
  /** Whether Longhorn's replicas are served, and where. */
  longhorn: { installed: boolean; namespace: string };
  /** The KubeVirt CR's eviction strategy and `spec.configuration.migrations`; null when there is no CR. */
  kubevirt: { evictionStrategy: string | null; migrations: Record<string, unknown> } | null;
  migrationPolicies: { name: string; spec: any }[];
  nodes: SnapshotObject[];
  vms: SnapshotObject[];
  vmis: SnapshotObject[];
  /** Migrations not finished when the snapshot was read (informational: a rehearsal starts with the VMs on their sources). */
  migrationsInFlight: { namespace: string; name: string; vmiName: string; phase: string | null }[];
  pods: SnapshotObject[];
  /** DaemonSets (`namespace/name`) that own pods but do not exist: kubectl's drain calls their pods orphans (k8s:K2). */
  daemonSetsMissing: string[];
  pdbs: SnapshotObject[];
  pvcs: SnapshotObject[];
  replicas: SnapshotObject[];
}

const DROPPED_ANNOTATIONS = new Set(['kubectl.kubernetes.io/last-applied-configuration']);
const SECRET_NAMED = /secret|token|passw|credential|private|cert|ssh/i;
/** Longer values are blobs (templates, applied configurations), never a maintenance marker. */
const MAX_ANNOTATION_CHARS = 1024;

function annotationsOf(o: KObject): Record<string, string> {
  return Object.fromEntries(
    Object.entries(o.metadata?.annotations ?? {}).filter(
      ([k, v]) => !DROPPED_ANNOTATIONS.has(k) && !SECRET_NAMED.test(k) && typeof v === 'string' && v.length <= MAX_ANNOTATION_CHARS,
    ),
  );
}

function metaOf(o: KObject): SnapshotObject['metadata'] {
  const m = o.metadata ?? {};
  const owners = (m['ownerReferences'] as any[] | undefined) ?? [];
  return {
    name: m.name ?? '',
    ...(m.namespace !== undefined && { namespace: m.namespace }),
    ...(m.uid !== undefined && { uid: m.uid }),
    labels: { ...(m.labels ?? {}) },
    annotations: annotationsOf(o),
    ...(owners.length > 0 && {
      ownerReferences: owners.map((r) => ({ apiVersion: r.apiVersion, kind: r.kind, name: r.name, uid: r.uid, controller: r.controller === true })),
    }),
    ...(typeof m['deletionTimestamp'] === 'string' && { deletionTimestamp: m['deletionTimestamp'] }),
  };
}

/** Defined fields only (JSON has no undefined). */
const defined = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

/** A volume by its source: claims and data volumes in full, an emptyDir as it is, any other source by its kind only. */
function volumeOf(v: any): any {
  if (v?.persistentVolumeClaim) return { name: v.name, persistentVolumeClaim: { claimName: v.persistentVolumeClaim.claimName } };
  if (v?.dataVolume) return { name: v.name, dataVolume: { name: v.dataVolume.name } };
  if (v?.emptyDir) return { name: v.name, emptyDir: defined({ medium: v.emptyDir.medium, sizeLimit: v.emptyDir.sizeLimit }) };
  const kind = Object.keys(v ?? {}).find((k) => k !== 'name');
  return { name: v?.name, ...(kind && { [kind]: {} }) };
}

const devicesOf = (list: any[] | undefined) => (list ?? []).map((d) => defined({ name: d?.name, deviceName: d?.deviceName }));

/** A VM's (or VMI's) pod template: placement, eviction, memory, devices and volumes. */
function vmSpecOf(spec: any): any {
  const domain = spec?.domain ?? {};
  return defined({
    evictionStrategy: spec?.evictionStrategy,
    nodeSelector: spec?.nodeSelector,
    affinity: spec?.affinity,
    tolerations: spec?.tolerations,
    domain: {
      ...(domain.memory && { memory: defined({ guest: domain.memory.guest }) }),
      ...(domain.resources?.requests?.memory !== undefined && { resources: { requests: { memory: domain.resources.requests.memory } } }),
      devices: defined({
        disks: (domain.devices?.disks ?? []).map((d: any) => ({ name: d?.name })),
        gpus: domain.devices?.gpus && devicesOf(domain.devices.gpus),
        hostDevices: domain.devices?.hostDevices && devicesOf(domain.devices.hostDevices),
      }),
    },
    volumes: (spec?.volumes ?? []).map(volumeOf),
  });
}

const conditionsOf = (list: any[] | undefined) =>
  (list ?? []).map((c) => defined({ type: c?.type, status: c?.status, reason: c?.reason, message: c?.message, lastTransitionTime: c?.lastTransitionTime }));

function nodeOf(n: KObject): SnapshotObject {
  const s = n.status ?? {};
  const pick = (q: any) => defined({ memory: q?.memory, cpu: q?.cpu, pods: q?.pods });
  return {
    metadata: metaOf(n),
    spec: defined({ unschedulable: n.spec?.unschedulable, taints: n.spec?.taints }),
    status: defined({
      conditions: conditionsOf(s.conditions),
      allocatable: s.allocatable && pick(s.allocatable),
      capacity: s.capacity && pick(s.capacity),
      // The boot id tells a restart (rollout:O7); versions say what runs. Machine ids and addresses are left out.
      nodeInfo:
        s.nodeInfo &&
        defined({
          bootID: s.nodeInfo.bootID,
          kubeletVersion: s.nodeInfo.kubeletVersion,
          kernelVersion: s.nodeInfo.kernelVersion,
          osImage: s.nodeInfo.osImage,
          containerRuntimeVersion: s.nodeInfo.containerRuntimeVersion,
          operatingSystem: s.nodeInfo.operatingSystem,
          architecture: s.nodeInfo.architecture,
        }),
    }),
  };
}

function vmOf(vm: KObject): SnapshotObject {
  return {
    metadata: metaOf(vm),
    spec: defined({
      runStrategy: vm.spec?.runStrategy,
      running: vm.spec?.running,
      template: { metadata: { labels: { ...(vm.spec?.template?.metadata?.labels ?? {}) } }, spec: vmSpecOf(vm.spec?.template?.spec) },
    }),
    status: defined({ printableStatus: vm.status?.printableStatus, ready: vm.status?.ready }),
  };
}

function vmiOf(vmi: KObject): SnapshotObject {
  const s = vmi.status ?? {};
  const m = s.migrationState;
  return {
    metadata: metaOf(vmi),
    spec: vmSpecOf(vmi.spec),
    status: defined({
      phase: s.phase,
      nodeName: s.nodeName,
      conditions: conditionsOf(s.conditions),
      evacuationNodeName: s.evacuationNodeName,
      migrationState: m && defined({ sourceNode: m.sourceNode, targetNode: m.targetNode, completed: m.completed, failed: m.failed, mode: m.mode }),
    }),
  };
}

function podOf(p: KObject): SnapshotObject {
  return {
    metadata: metaOf(p),
    spec: defined({
      nodeName: p.spec?.nodeName,
      volumes: (p.spec?.volumes ?? []).map(volumeOf),
      terminationGracePeriodSeconds: p.spec?.terminationGracePeriodSeconds,
      priorityClassName: p.spec?.priorityClassName,
    }),
    status: defined({ phase: p.status?.phase, conditions: conditionsOf(p.status?.conditions).filter((c) => c['type'] === 'Ready') }),
  };
}

function pdbOf(b: KObject): SnapshotObject {
  const s = b.status ?? {};
  return {
    metadata: metaOf(b),
    spec: defined({
      selector: b.spec?.selector,
      minAvailable: b.spec?.minAvailable,
      maxUnavailable: b.spec?.maxUnavailable,
      unhealthyPodEvictionPolicy: b.spec?.unhealthyPodEvictionPolicy,
    }),
    status: defined({
      disruptionsAllowed: s.disruptionsAllowed,
      currentHealthy: s.currentHealthy,
      desiredHealthy: s.desiredHealthy,
      expectedPods: s.expectedPods,
    }),
  };
}

const pvcOf = (p: KObject): SnapshotObject => ({
  metadata: metaOf(p),
  spec: defined({ accessModes: p.spec?.accessModes, volumeName: p.spec?.volumeName, storageClassName: p.spec?.storageClassName }),
  status: defined({ phase: p.status?.phase }),
});

const replicaOf = (r: KObject): SnapshotObject => ({
  metadata: metaOf(r),
  spec: defined({ volumeName: r.spec?.volumeName, nodeID: r.spec?.nodeID, failedAt: r.spec?.failedAt }),
  status: defined({ started: r.status?.started, currentState: r.status?.currentState }),
});

const byKey = (a: SnapshotObject, b: SnapshotObject) =>
  `${a.metadata.namespace ?? ''}/${a.metadata.name}`.localeCompare(`${b.metadata.namespace ?? ''}/${b.metadata.name}`);

/** A list that a cluster without the CRD answers with 404: empty, then. */
async function listOrNone(api: KubeApi, r: (typeof RESOURCES)[keyof typeof RESOURCES]): Promise<KObject[] | null> {
  try {
    return (await api.listRaw(r, undefined)).items;
  } catch (e) {
    if (e instanceof BackendError && e.code === 'NotFound') return null;
    throw e;
  }
}

async function harvesterSetting(api: KubeApi, name: string): Promise<{ name: string; value: string | null; default: string | null }> {
  const r = RESOURCES.harvesterSettings;
  try {
    const s = (await call('get', r, () => api.k.custom.getClusterCustomObject({ group: r.group, version: r.version, plural: r.plural, name }))) as any;
    return { name, value: typeof s?.value === 'string' ? s.value : null, default: typeof s?.default === 'string' ? s.default : null };
  } catch (e) {
    if (e instanceof BackendError && e.code === 'NotFound') return { name, value: null, default: null };
    throw e;
  }
}

/** The DaemonSets named as pods' controllers that are gone, by one GET each (as the drain checks them, k8s:K2). */
async function missingDaemonSets(api: KubeApi, pods: KObject[]): Promise<string[]> {
  const owners = new Set<string>();
  for (const p of pods) {
    const owner = ((p.metadata?.['ownerReferences'] as any[] | undefined) ?? []).find((r) => r.controller === true);
    if (owner?.kind === 'DaemonSet') owners.add(`${p.metadata?.namespace}/${owner.name}`);
  }
  const missing: string[] = [];
  for (const key of [...owners].sort()) {
    const [namespace, name] = key.split('/') as [string, string];
    try {
      await call('get', RESOURCES.daemonsets, () => api.k.apps.readNamespacedDaemonSet({ namespace, name }));
    } catch (e) {
      if (!(e instanceof BackendError && e.code === 'NotFound')) throw e;
      missing.push(key);
    }
  }
  return missing;
}

/**
 * Reads the cluster for a rehearsal (issue 33): nodes, VMs, VMIs and migrations from the
 * informer caches; pods, PDBs, PVCs, Longhorn replicas, the KubeVirt CR, MigrationPolicies
 * and (in Harvester mode) Harvester's settings by one list or get each.
 */
export async function takeSnapshot(
  api: KubeApi,
  cache: ClusterCache,
  longhornReplicas: () => Promise<KObject[] | null>,
  options: Pick<KubevirtOptions, 'longhornNamespace'>,
  harvesterMode: boolean,
  takenAt: number,
): Promise<BackendSnapshot> {
  const [pods, pdbs, kubevirts, policies, replicas, pvcs] = await Promise.all([
    api.listRaw(RESOURCES.pods, undefined).then((l) => l.items),
    api.listRaw(RESOURCES.pdbs, undefined).then((l) => l.items),
    listOrNone(api, RESOURCES.kubevirts),
    listOrNone(api, RESOURCES.migrationPolicies),
    longhornReplicas(),
    api.listScoped(RESOURCES.pvcs),
  ]);
  const settings = harvesterMode ? await Promise.all(HARVESTER_SNAPSHOT_SETTINGS.map((name) => harvesterSetting(api, name))) : null;
  const cr = kubevirts?.[0];
  const objects = (informers: ClusterCache['nodeInformers']) => [...cache.cached(informers)].map(([, o]) => o);
  const data: KubevirtSnapshotData = {
    version: 1,
    mode: harvesterMode ? 'delegate' : 'act',
    harvester: settings && { settings },
    longhorn: { installed: replicas !== null, namespace: options.longhornNamespace },
    kubevirt: cr
      ? { evictionStrategy: cr.spec?.configuration?.evictionStrategy ?? null, migrations: structuredClone(cr.spec?.configuration?.migrations ?? {}) }
      : null,
    migrationPolicies: (policies ?? []).map((p) => ({ name: p.metadata?.name ?? '', spec: structuredClone(p.spec ?? {}) })),
    nodes: objects(cache.nodeInformers).map(nodeOf).sort(byKey),
    vms: objects(cache.vmInformers).map(vmOf).sort(byKey),
    vmis: objects(cache.vmiInformers).map(vmiOf).sort(byKey),
    migrationsInFlight: objects(cache.migrationInformers)
      .filter((m) => !['Succeeded', 'Failed'].includes(m.status?.phase))
      .map((m) => ({ namespace: m.metadata?.namespace ?? '', name: m.metadata?.name ?? '', vmiName: m.spec?.vmiName ?? '', phase: m.status?.phase ?? null })),
    pods: pods.map(podOf).sort(byKey),
    daemonSetsMissing: await missingDaemonSets(api, pods),
    pdbs: pdbs.map(pdbOf).sort(byKey),
    pvcs: pvcs.map(pvcOf).sort(byKey),
    replicas: (replicas ?? []).map(replicaOf).sort(byKey),
  };
  return { plugin: 'kubevirt', takenAt, data };
}
