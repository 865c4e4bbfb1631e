/* eslint-disable @typescript-eslint/no-explicit-any -- Kubernetes objects are free-form JSON here, read field by field */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubevirtSnapshotData, SnapshotObject } from '../../plugins/kubevirt/snapshot.ts';
import { kubevirtOptionsSchema } from '../../plugins/kubevirt/options.ts';
import { K8sSim, type K8sObject } from '../../simulators/kubernetes/index.ts';
import type { LoadedSimulators, RehearsalLoader } from './types.ts';
import { simulatorDefaultsWhereUndrawn } from './drawn.ts';

/** A snapshot this loader cannot read (another plugin's, or another version of the format). */
export class KubevirtSnapshotError extends Error {
  override readonly name = 'KubevirtSnapshotError';
}

const WORKLOAD_KINDS = { DaemonSet: 'daemonsets', ReplicaSet: 'replicasets', StatefulSet: 'statefulsets' } as const;
type WorkloadKind = keyof typeof WORKLOAD_KINDS;
const isWorkloadKind = (k: unknown): k is WorkloadKind => typeof k === 'string' && Object.hasOwn(WORKLOAD_KINDS, k);
const isLauncher = (p: SnapshotObject) => p.metadata.labels['kubevirt.io'] === 'virt-launcher';
const idOf = (o: K8sObject) => `${o.metadata.namespace}/${o.metadata.name}`;
const readyOf = (o: SnapshotObject) => (o.status?.conditions ?? []).find((c: any) => c.type === 'Ready');

function dataOf(snapshot: { plugin: string; data: unknown }): KubevirtSnapshotData {
  if (snapshot.plugin !== 'kubevirt') throw new KubevirtSnapshotError(`the kubevirt loader got a snapshot of plugin "${snapshot.plugin}"`);
  const data = snapshot.data as Partial<KubevirtSnapshotData> | null;
  if (!data || typeof data !== 'object' || data.version !== 1) throw new KubevirtSnapshotError('the kubevirt snapshot is not of version 1');
  for (const key of ['nodes', 'vms', 'vmis', 'pods', 'pdbs', 'pvcs', 'replicas'] as const) {
    if (!Array.isArray(data[key])) throw new KubevirtSnapshotError(`the kubevirt snapshot has no list "${key}"`);
  }
  return data as KubevirtSnapshotData;
}

/** What a snapshot leaves out of `status.nodeInfo` (machine ids), and what the API requires there. */
const NODE_INFO = {
  machineID: '',
  systemUUID: '',
  kernelVersion: '',
  osImage: '',
  containerRuntimeVersion: '',
  kubeletVersion: '',
  kubeProxyVersion: '',
  operatingSystem: 'linux',
  architecture: 'amd64',
};

/** Nodes as they were: labels, taints, cordon, conditions, allocatable, boot id. */
function loadNodes(sim: K8sSim, nodes: SnapshotObject[]): void {
  for (const n of nodes) {
    sim.store.create(sim.def('nodes'), {
      metadata: { name: n.metadata.name, labels: n.metadata.labels, annotations: n.metadata.annotations },
      spec: structuredClone(n.spec ?? {}),
      status: {
        ...structuredClone(n.status ?? {}),
        conditions: n.status?.conditions?.length ? structuredClone(n.status.conditions) : [{ type: 'Ready', status: 'True', reason: 'KubeletReady' }],
        nodeInfo: { ...NODE_INFO, ...n.status?.nodeInfo, bootID: n.status?.nodeInfo?.bootID ?? `${n.metadata.name}-boot-0` },
      },
    });
  }
}

/**
 * VMs, each with its VMI where one was Running: created as the simulator seeds running VMs
 * (its launcher pod linked), then given the snapshot's own conditions, so that
 * LiveMigratable and its reason are KubeVirt's, not recomputed by the simulator.
 */
function loadVms(sim: K8sSim, data: KubevirtSnapshotData): void {
  const vmis = new Map(data.vmis.map((v) => [`${v.metadata.namespace}/${v.metadata.name}`, v]));
  const vmisDef = sim.def('virtualmachineinstances', 'kubevirt.io');
  for (const v of data.vms) {
    const vmi = vmis.get(`${v.metadata.namespace}/${v.metadata.name}`);
    const running = vmi?.status?.phase === 'Running' && typeof vmi.status.nodeName === 'string';
    const vm = sim.store.create(sim.def('virtualmachines', 'kubevirt.io'), {
      metadata: { name: v.metadata.name, namespace: v.metadata.namespace!, labels: v.metadata.labels, annotations: v.metadata.annotations },
      spec: structuredClone(v.spec),
      status: running
        ? { printableStatus: 'Running', ready: true, created: true }
        : { printableStatus: v.status?.printableStatus ?? 'Stopped', ready: false, created: false },
    });
    if (!running) continue;
    sim.controller.createVmi(vm, vmi.status.nodeName);
    sim.store.mutate(vmisDef, v.metadata.namespace, v.metadata.name, (o) => {
      o.metadata.labels = { ...vmi.metadata.labels, 'kubevirt.io/nodeName': vmi.status.nodeName };
      if (vmi.spec?.evictionStrategy !== undefined) o.spec.evictionStrategy = vmi.spec.evictionStrategy;
      else delete o.spec.evictionStrategy;
      o.status.conditions = structuredClone(vmi.status.conditions ?? []);
    });
  }
}

/** Pods other than virt-launchers (those come with their VMIs), with their controllers as the drain finds them. */
function loadPods(sim: K8sSim, data: KubevirtSnapshotData): void {
  const missing = new Set(data.daemonSetsMissing ?? []);
  const podsDef = sim.def('pods');
  for (const p of data.pods) {
    if (isLauncher(p) || p.metadata.deletionTimestamp) continue;
    const namespace = p.metadata.namespace!;
    const ownerReferences = (p.metadata.ownerReferences ?? []).map((r) => {
      if (!r.controller || !isWorkloadKind(r.kind) || (r.kind === 'DaemonSet' && missing.has(`${namespace}/${r.name}`))) return { ...r };
      const def = sim.def(WORKLOAD_KINDS[r.kind], 'apps');
      const owner = sim.store.get(def, namespace, r.name) ?? sim.addWorkload(r.kind, namespace, r.name, p.metadata.labels);
      return { ...r, apiVersion: 'apps/v1', uid: owner.metadata.uid, controller: true, blockOwnerDeletion: true };
    });
    const ready = readyOf(p);
    sim.store.create(podsDef, {
      metadata: { name: p.metadata.name, namespace, labels: p.metadata.labels, annotations: p.metadata.annotations, ownerReferences },
      spec: {
        ...structuredClone(p.spec),
        // Container specs are not in a snapshot (they may carry secrets); the drain reads none of them.
        containers: [{ name: 'main', image: 'rehearsal.invalid/app:0' }],
      },
      status: { phase: p.status?.phase ?? 'Pending', conditions: [{ type: 'Ready', status: ready?.status ?? 'False' }] },
    });
  }
}

/** KubeVirt's and Longhorn's state, the PVCs and the budgets; Harvester's settings when it was there. */
function loadCluster(sim: K8sSim, data: KubevirtSnapshotData): void {
  if (data.kubevirt) {
    sim.setKubevirtConfig({
      ...(data.kubevirt.evictionStrategy !== null && { evictionStrategy: data.kubevirt.evictionStrategy }),
      migrations: structuredClone(data.kubevirt.migrations),
    });
  }
  for (const p of data.migrationPolicies ?? []) sim.addMigrationPolicy(p.name, p.spec);
  for (const s of data.harvester?.settings ?? []) {
    if (s.value === null && s.default === null) continue;
    sim.store.create(sim.def('settings', 'harvesterhci.io'), { metadata: { name: s.name }, value: s.value ?? '', default: s.default ?? '' });
  }
  for (const c of data.pvcs) {
    sim.store.create(sim.def('persistentvolumeclaims'), {
      metadata: { name: c.metadata.name, namespace: c.metadata.namespace!, labels: c.metadata.labels },
      spec: structuredClone(c.spec),
      status: structuredClone(c.status),
    });
  }
  if (data.longhorn.installed) {
    for (const r of data.replicas) {
      sim.store.create(sim.def('replicas', 'longhorn.io'), {
        metadata: { name: r.metadata.name, namespace: r.metadata.namespace ?? data.longhorn.namespace, labels: r.metadata.labels },
        spec: structuredClone(r.spec),
        status: structuredClone(r.status),
      });
    }
  }
}

function loadPdbs(sim: K8sSim, pdbs: SnapshotObject[]): void {
  const namespaces = new Set<string>();
  for (const b of pdbs) {
    sim.store.create(sim.def('poddisruptionbudgets', 'policy'), {
      metadata: { name: b.metadata.name, namespace: b.metadata.namespace!, labels: b.metadata.labels },
      spec: structuredClone(b.spec),
    });
    namespaces.add(b.metadata.namespace!);
  }
  // The disruption controller's status, from the pods as loaded (not the snapshot's counts).
  for (const ns of namespaces) sim.pods.syncPdbs(ns);
}

/**
 * The boot id after a restart: never the one before (rollout:O7 waits for it to change), also
 * when the snapshot was read after an earlier rehearsed or real run had restarted the node
 * (`<node>-boot-<n>` goes on from n; any other id, a real cluster's, starts at 1).
 */
function nextBootId(nodeId: string, current: unknown): string {
  const m = typeof current === 'string' ? /^(.*)-boot-(\d+)$/.exec(current) : null;
  return `${nodeId}-boot-${m && m[1] === nodeId ? Number(m[2]) + 1 : 1}`;
}

/**
 * Loads a kubevirt snapshot (plugins/kubevirt/snapshot.ts) into a Kubernetes + KubeVirt
 * simulator on the sample's clock; starts, stops, migrations and pod terminations take the
 * durations drawn for them (docs/rehearsal.md, "Kubernetes and KubeVirt").
 */
const loadKubevirt: RehearsalLoader = async (snapshot, liveOptions, context) => {
  const data = dataOf(snapshot);
  // The live options are checked as the plugin would (a ZodError names the bad key) before anything starts.
  kubevirtOptionsSchema.parse(liveOptions ?? {});
  const durations = simulatorDefaultsWhereUndrawn(context);
  const sim = await K8sSim.start({
    clock: context.clock,
    longhorn: data.longhorn.installed,
    harvester: data.harvester !== null,
    migrationLimits: true,
    durations: {
      migrate: (vmi) => durations('VM_MIGRATE', idOf(vmi), vmi.status?.nodeName ?? null),
      start: (vm, nodeName) => durations('VM_START', idOf(vm), nodeName),
      stop: (vm, nodeName) => durations('VM_STOP', idOf(vm), nodeName),
      podTermination: (pod) => durations('POD_EVICT', idOf(pod), pod.spec?.nodeName ?? null),
    },
  });
  const dir = mkdtempSync(join(tmpdir(), 'rehearsal-kubevirt-'));
  const timers = new Set<() => void>();
  try {
    loadNodes(sim, data.nodes);
    loadCluster(sim, data);
    loadVms(sim, data);
    loadPods(sim, data);
    loadPdbs(sim, data.pdbs);
  } catch (e) {
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  const kubeconfigPath = join(dir, 'kubeconfig');
  writeFileSync(kubeconfigPath, sim.kubeconfig(), { mode: 0o600 });
  // Addresses and credentials are the simulator's; timeouts, limits and policies stay the live ones.
  const { kubeconfigPath: _path, context: _context, ...kept } = (liveOptions ?? {}) as Record<string, unknown>;

  const setPodsReady = (nodeId: string, ready: boolean) => {
    for (const pod of sim.podsOn(nodeId)) {
      if (pod.metadata.labels?.['kubevirt.io'] === 'virt-launcher' || pod.status?.phase !== 'Running') continue;
      sim.store.mutate(sim.def('pods'), pod.metadata.namespace, pod.metadata.name, (p) => {
        p.status.conditions = [{ type: 'Ready', status: ready ? 'True' : 'False' }];
      });
    }
  };
  const loaded: LoadedSimulators = {
    options: { ...kept, kubeconfigPath },
    urls: [sim.url],
    async restartNode(nodeId, downMs) {
      // The runner asks every loader of the sample: a node of another plugin's is not ours.
      if (!sim.node(nodeId)) return;
      // The kubelet stops posting status; the guests on the node die with it (their launcher
      // pods are gone: KubeVirt fails the VMIs and the run strategy decides); other pods are
      // not ready until the kubelet restarts them.
      sim.setNodeReady(nodeId, false, 'Unknown');
      setPodsReady(nodeId, false);
      for (const pod of sim.podsOn(nodeId)) {
        if (pod.metadata.labels?.['kubevirt.io'] === 'virt-launcher') sim.store.delete(sim.def('pods'), pod.metadata.namespace, pod.metadata.name);
      }
      const cancel = context.clock.setTimer(downMs, () => {
        timers.delete(cancel);
        if (!sim.node(nodeId)) return;
        sim.store.mutate(sim.def('nodes'), undefined, nodeId, (n) => {
          n.status.nodeInfo = { ...(n.status.nodeInfo ?? {}), bootID: nextBootId(nodeId, n.status.nodeInfo?.bootID) };
        });
        sim.setNodeReady(nodeId, true);
        setPodsReady(nodeId, true);
      });
      timers.add(cancel);
    },
    async stop() {
      for (const cancel of timers) cancel();
      timers.clear();
      await sim.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return loaded;
};

export default loadKubevirt;
