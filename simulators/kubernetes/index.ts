import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { wallClock, type SimClock } from './clock.ts';
import { HarvesterController } from './harvester.ts';
import { KubevirtController, type ControllerDelays, type ControllerDurations, type MigrationHolds } from './kubevirt-controller.ts';
import { KubevirtEviction } from './kubevirt-eviction.ts';
import { PodController } from './pods.ts';
import { ApiServer, type PolicyRule, type RecordedCall } from './server.ts';
import { ObjectStore, type K8sObject, type ResourceDef } from './store.ts';

export { ObjectStore, type K8sObject, type ResourceDef } from './store.ts';
export type { Exchange, PolicyRule, RecordedCall, Verb } from './server.ts';
export type { SimClock } from './clock.ts';
export { DRAIN_FORCED, DRAIN_REQUESTED, MAINTAIN_STATUS } from './harvester.ts';
export { EVACUATION_ANNOTATION, MIGRATION_FINALIZER, MIGRATION_JOB_LABEL, VMI_NAME_LABEL } from './kubevirt-controller.ts';

type Extra = Partial<Pick<ResourceDef, 'subresources' | 'fieldSelectors' | 'statusSubresource'>>;
const builtIn = (group: string, version: string, plural: string, kind: string, namespaced: boolean, extra: Extra = {}): ResourceDef => ({
  group,
  version,
  plural,
  kind,
  namespaced,
  statusSubresource: false,
  strategicMerge: true,
  ...extra,
});
const core = (plural: string, kind: string, namespaced: boolean, extra: Extra = {}) => builtIn('', 'v1', plural, kind, namespaced, extra);
const crd = (group: string, version: string, plural: string, kind: string, namespaced = true): ResourceDef => ({
  group,
  version,
  plural,
  kind,
  namespaced,
  statusSubresource: true,
  strategicMerge: false,
});

const LONGHORN_REPLICAS = crd('longhorn.io', 'v1beta2', 'replicas', 'Replica');
/** Present on Harvester clusters: what Lockkeeper looks for to delegate (k8s:H9). */
const HARVESTER_SETTINGS = crd('harvesterhci.io', 'v1beta1', 'settings', 'Setting', false);
/** Harvester's upgrade objects, which pause node-down handling (k8s:U2). */
const HARVESTER_UPGRADES = crd('harvesterhci.io', 'v1beta1', 'upgrades', 'Upgrade');
/** upgrade-toolkit's cluster-scoped upgrade plans, which pause it too (k8s:U2, `isOnUpgradeV2`). */
const HARVESTER_UPGRADE_PLANS = crd('management.harvesterhci.io', 'v1beta1', 'upgradeplans', 'UpgradePlan', false);
const CRDS = builtIn('apiextensions.k8s.io', 'v1', 'customresourcedefinitions', 'CustomResourceDefinition', false);

export interface K8sSimOptions {
  /** Whether Longhorn's CRDs are installed (replicas.longhorn.io); without, its paths are 404. Default true. */
  longhorn?: boolean;
  delays?: Partial<ControllerDelays>;
  bookmarkIntervalMs?: number;
  /** Watch history kept for resumes; older versions answer 410 Gone. */
  historyLimit?: number;
  /** The simulator's time (controller delays, grace periods, recorded calls); default the wall clock. */
  clock?: SimClock;
  /** Milliseconds a pod stays Terminating per second of grace (default 1000; tests on the wall clock shorten it). */
  msPerGraceSecond?: number;
  /** Serve Harvester's CRDs and run its maintenance controllers (k8s:H2 steps 2–6, k8s:H9). */
  harvester?: boolean;
  /** How often Harvester's controller tries a drain again (default 1000 ms). */
  harvesterRetryMs?: number;
  /**
   * Bytes per second one migration's link moves: turns on the dirty-rate model (a pre-copy
   * takes memory / (bandwidth − the VM's `dirtyRate`), and stalls when the guest dirties
   * as fast); absent: every migration takes `delays.migrateMs`.
   */
  migrationBandwidth?: number;
  /**
   * Per-object durations of starts, stops and migrations (replacing `delays`) and of pod
   * terminations (replacing grace × `msPerGraceSecond`): a rehearsal's draws (issue 33).
   */
  durations?: ControllerDurations & { podTermination?: (pod: K8sObject, graceSeconds: number) => number | undefined };
  /** KubeVirt's parallel-migration limits (per cluster, outbound per node) queue migrations; default off. */
  migrationLimits?: boolean;
  /** Serve HTTPS with this key and certificate (PEM; the certificate is also the kubeconfig's CA): kubectl sends its token only over TLS. */
  tls?: { key: string; cert: string };
}

export interface VmInput {
  namespace?: string;
  name: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  runStrategy?: string;
  /** Where its VMI runs now (created at once, Running); null: not running. */
  nodeName?: string | null;
  nodeSelector?: Record<string, string>;
  affinity?: unknown;
  /** Claim names of its disks (PVC volumes named `<claim>`). */
  claims?: string[];
  /** Gives it a GPU: KubeVirt then reports LiveMigratable=False HostDeviceNotLiveMigratable. */
  gpu?: boolean;
  /** `spec.template.spec.evictionStrategy` (k8s:E1). */
  evictionStrategy?: string;
  /** false: its VMI carries no LiveMigratable condition at all (k8s:E6). */
  liveMigratableCondition?: boolean;
  /** `spec.domain.memory.guest` (a quantity, e.g. `2Gi`); sizes the completion timeout (k8s:C10). */
  memory?: string;
  /** Bytes per second its guest dirties memory (the dirty-rate model, with `migrationBandwidth`). */
  dirtyRate?: number;
}

export interface PodInput {
  namespace?: string;
  name: string;
  nodeName: string | null;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  /** The controller: a DaemonSet, ReplicaSet or StatefulSet by name (created when missing, unless `ownerMissing`). */
  owner?: { kind: 'DaemonSet' | 'ReplicaSet' | 'StatefulSet'; name: string };
  /** The owner reference points at an object that does not exist. */
  ownerMissing?: boolean;
  emptyDir?: boolean;
  phase?: 'Pending' | 'Running' | 'Succeeded' | 'Failed';
  terminationGracePeriodSeconds?: number;
}

export const SIM_USER = 'system:serviceaccount:lockkeeper:lockkeeper';

/**
 * A Kubernetes API server with KubeVirt (and optionally Longhorn) for tests: real HTTP on
 * loopback, spoken to by the real `@kubernetes/client-node` through `kubeconfig`.
 */
export class K8sSim {
  readonly store: ObjectStore;
  readonly api: ApiServer;
  readonly controller: KubevirtController;
  readonly pods: PodController;
  readonly eviction: KubevirtEviction;
  readonly harvester: HarvesterController | null;
  readonly clock: SimClock;
  url = '';
  readonly token = 'sim-token';
  private dir: string | null = null;
  private readonly tlsCert: string | null;

  private constructor(options: K8sSimOptions) {
    this.clock = options.clock ?? wallClock;
    const resources: ResourceDef[] = [
      core('nodes', 'Node', false, { statusSubresource: true, subresources: ['status'] }),
      core('persistentvolumeclaims', 'PersistentVolumeClaim', true),
      core('pods', 'Pod', true, { statusSubresource: true, subresources: ['eviction', 'status'], fieldSelectors: ['spec.nodeName', 'status.phase'] }),
      core('events', 'Event', true),
      builtIn('apps', 'v1', 'daemonsets', 'DaemonSet', true),
      builtIn('apps', 'v1', 'replicasets', 'ReplicaSet', true),
      builtIn('apps', 'v1', 'statefulsets', 'StatefulSet', true),
      builtIn('policy', 'v1', 'poddisruptionbudgets', 'PodDisruptionBudget', true, { statusSubresource: true }),
      CRDS,
      crd('kubevirt.io', 'v1', 'kubevirts', 'KubeVirt'),
      crd('kubevirt.io', 'v1', 'virtualmachines', 'VirtualMachine'),
      crd('kubevirt.io', 'v1', 'virtualmachineinstances', 'VirtualMachineInstance'),
      crd('kubevirt.io', 'v1', 'virtualmachineinstancemigrations', 'VirtualMachineInstanceMigration'),
      crd('migrations.kubevirt.io', 'v1alpha1', 'migrationpolicies', 'MigrationPolicy', false),
    ];
    this.store = new ObjectStore(resources, options.historyLimit);
    this.tlsCert = options.tls?.cert ?? null;
    this.api = new ApiServer(this.store, {
      token: this.token,
      user: SIM_USER,
      bookmarkIntervalMs: options.bookmarkIntervalMs ?? 500,
      clock: this.clock,
      ...(options.tls && { tls: options.tls }),
    });
    for (const r of resources) if (!r.strategicMerge) this.publishCrd(r);
    if (options.longhorn !== false) this.installCrd(LONGHORN_REPLICAS);
    const { podTermination, ...vmDurations } = options.durations ?? {};
    this.pods = new PodController(this.store, this.api, this.clock, {
      msPerGraceSecond: options.msPerGraceSecond ?? 1000,
      ...(podTermination && { terminationMs: podTermination }),
    });
    this.controller = new KubevirtController(this.store, { startMs: 30, stopMs: 20, migrateMs: 40, ...options.delays }, this.clock, vmDurations);
    this.controller.bandwidth = options.migrationBandwidth ?? null;
    this.controller.migrationLimits = options.migrationLimits ?? false;
    this.api.admitters.push((a) => this.controller.admit(a));
    this.eviction = new KubevirtEviction(this.store, this.controller, this.clock);
    this.pods.evictionWebhooks.push(this.eviction.webhook);
    this.harvester = null;
    if (options.harvester) {
      this.installCrd(HARVESTER_SETTINGS);
      this.harvester = new HarvesterController(this.store, this.pods, this.clock, options.harvesterRetryMs ?? 1000);
    }
  }

  /** Serves a custom resource and lists its CustomResourceDefinition (what discovery and `kubectl get crd` see). */
  installCrd(r: ResourceDef): void {
    this.store.addResource(r);
    this.publishCrd(r);
  }

  private publishCrd(r: ResourceDef): void {
    const name = `${r.plural}.${r.group}`;
    if (this.store.get(CRDS, undefined, name)) return;
    this.store.create(CRDS, {
      metadata: { name },
      spec: {
        group: r.group,
        names: { plural: r.plural, kind: r.kind, singular: r.kind.toLowerCase(), listKind: `${r.kind}List` },
        scope: r.namespaced ? 'Namespaced' : 'Cluster',
        versions: [{ name: r.version, served: true, storage: true, ...(r.statusSubresource && { subresources: { status: {} } }) }],
      },
    });
  }

  private uninstallCrd(r: ResourceDef): void {
    this.store.removeResource(r.group, r.plural);
    const name = `${r.plural}.${r.group}`;
    if (this.store.get(CRDS, undefined, name)) this.store.delete(CRDS, undefined, name);
  }

  /** Harvester's Upgrade objects are served (the CRD is installed); `running` adds one that has not finished (k8s:U2). */
  setHarvesterUpgrade(running: boolean): void {
    this.installCrd(HARVESTER_UPGRADES);
    const def = this.def('upgrades', 'harvesterhci.io');
    const existing = this.store.get(def, 'harvester-system', 'hvst-upgrade');
    if (existing) this.store.delete(def, 'harvester-system', 'hvst-upgrade');
    this.store.create(def, {
      metadata: { name: 'hvst-upgrade', namespace: 'harvester-system', labels: { 'harvesterhci.io/upgradeState': running ? 'UpgradingNodes' : 'Succeeded' } },
      spec: { version: 'v1.6.1' },
    });
  }

  /** upgrade-toolkit's UpgradePlans are served (the CRD is installed); one named `plan` with `status.currentPhase` = `phase` (k8s:U2). */
  setHarvesterUpgradePlan(phase: string): void {
    this.installCrd(HARVESTER_UPGRADE_PLANS);
    const def = this.def('upgradeplans', 'management.harvesterhci.io');
    if (this.store.get(def, undefined, 'plan')) this.store.delete(def, undefined, 'plan');
    this.store.create(def, { metadata: { name: 'plan' }, spec: { version: 'v1.7.0' }, status: { currentPhase: phase } });
  }

  /** The KubeVirt CR's `spec.configuration` (k8s:E1: `evictionStrategy`; k8s:E3: `migrations.nodeDrainTaintKey`). */
  setKubevirtConfig(configuration: Record<string, unknown>): K8sObject {
    const def = this.def('kubevirts', 'kubevirt.io');
    const current = this.store.get(def, 'kubevirt', 'kubevirt');
    if (current) return this.store.mutate(def, 'kubevirt', 'kubevirt', (k) => (k.spec = { ...(k.spec ?? {}), configuration }))!;
    return this.store.create(def, { metadata: { name: 'kubevirt', namespace: 'kubevirt' }, spec: { configuration }, status: { phase: 'Deployed' } });
  }

  /** A MigrationPolicy (cluster-scoped): its settings override the KubeVirt CR's for the VMIs its selectors match. */
  addMigrationPolicy(name: string, spec: Record<string, unknown>): K8sObject {
    return this.store.create(this.def('migrationpolicies', 'migrations.kubevirt.io'), { metadata: { name }, spec: { selectors: {}, ...spec } });
  }

  /** Where migrations wait (k8s:C2/C3 tests); `release` lets held ones go on. */
  holdMigrations(holds: Partial<MigrationHolds>): void {
    Object.assign(this.controller.holds, holds);
  }

  releaseMigrations(): void {
    this.controller.release();
  }

  /** A pod (and its owner when one is named and should exist). */
  addPod(input: PodInput): K8sObject {
    const namespace = input.namespace ?? 'default';
    let ownerReferences: unknown[] = [];
    if (input.owner) {
      const plural = { DaemonSet: 'daemonsets', ReplicaSet: 'replicasets', StatefulSet: 'statefulsets' }[input.owner.kind];
      const def = this.def(plural, 'apps');
      let owner = this.store.get(def, namespace, input.owner.name);
      if (!owner && !input.ownerMissing) owner = this.addWorkload(input.owner.kind, namespace, input.owner.name, input.labels ?? {});
      ownerReferences = [
        {
          apiVersion: 'apps/v1',
          kind: input.owner.kind,
          name: input.owner.name,
          uid: owner?.metadata.uid ?? '00000000-0000-0000-0000-000000000000',
          controller: true,
          blockOwnerDeletion: true,
        },
      ];
    }
    const running = (input.phase ?? (input.nodeName ? 'Running' : 'Pending')) === 'Running';
    return this.store.create(this.def('pods'), {
      metadata: { name: input.name, namespace, labels: input.labels ?? {}, annotations: input.annotations ?? {}, ownerReferences },
      spec: {
        ...(input.nodeName && { nodeName: input.nodeName }),
        containers: [
          { name: 'main', image: 'registry.example.org/app:1.0', ...(input.emptyDir && { volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }] }) },
        ],
        ...(input.emptyDir && { volumes: [{ name: 'scratch', emptyDir: {} }] }),
        ...(input.terminationGracePeriodSeconds !== undefined && { terminationGracePeriodSeconds: input.terminationGracePeriodSeconds }),
      },
      status: { phase: input.phase ?? (input.nodeName ? 'Running' : 'Pending'), conditions: [{ type: 'Ready', status: running ? 'True' : 'False' }] },
    });
  }

  /** A DaemonSet, ReplicaSet or StatefulSet whose pods carry `labels`. */
  addWorkload(kind: 'DaemonSet' | 'ReplicaSet' | 'StatefulSet', namespace: string, name: string, labels: Record<string, string>): K8sObject {
    const plural = { DaemonSet: 'daemonsets', ReplicaSet: 'replicasets', StatefulSet: 'statefulsets' }[kind];
    const template = { metadata: { labels }, spec: { containers: [{ name: 'main', image: 'registry.example.org/app:1.0' }] } };
    const spec =
      kind === 'DaemonSet'
        ? { selector: { matchLabels: labels }, template }
        : { replicas: 1, selector: { matchLabels: labels }, template, ...(kind === 'StatefulSet' && { serviceName: name }) };
    return this.store.create(this.def(plural, 'apps'), { metadata: { name, namespace, labels }, spec });
  }

  /** A PodDisruptionBudget over `matchLabels` (`minAvailable` or `maxUnavailable`); its status follows at once. */
  addPdb(
    namespace: string,
    name: string,
    spec: { matchLabels: Record<string, string>; minAvailable?: number | string; maxUnavailable?: number | string },
  ): K8sObject {
    const pdb = this.store.create(this.def('poddisruptionbudgets', 'policy'), {
      metadata: { name, namespace },
      spec: {
        selector: { matchLabels: spec.matchLabels },
        ...(spec.minAvailable !== undefined && { minAvailable: spec.minAvailable }),
        ...(spec.maxUnavailable !== undefined && { maxUnavailable: spec.maxUnavailable }),
      },
    });
    this.pods.syncPdbs(namespace);
    return this.store.get(this.def('poddisruptionbudgets', 'policy'), namespace, name) ?? pdb;
  }

  pod(namespace: string, name: string): K8sObject | null {
    return this.store.get(this.def('pods'), namespace, name);
  }

  podsOn(nodeName: string): K8sObject[] {
    return this.store.list(this.def('pods')).filter((p) => p.spec?.nodeName === nodeName);
  }

  /** The node's taints and conditions as the node lifecycle controller or a person sets them. */
  setNodeTaints(name: string, taints: { key: string; value?: string; effect: string }[]): void {
    this.store.mutate(this.def('nodes'), undefined, name, (n) => (n.spec = { ...(n.spec ?? {}), taints }));
  }

  /** Called with every simulator before it listens (tests attach schema checks here). */
  static instrument: ((sim: K8sSim) => void) | null = null;

  static async start(options: K8sSimOptions = {}): Promise<K8sSim> {
    const sim = new K8sSim(options);
    K8sSim.instrument?.(sim);
    sim.url = await sim.api.listen();
    return sim;
  }

  /** A kubeconfig (JSON is YAML) whose current context talks to this server with a bearer token. */
  kubeconfig(context = 'sim'): string {
    return JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'sim',
          // Over HTTPS the certificate is its own CA; plain HTTP on loopback: the client only allows it with TLS verification off.
          cluster: this.tlsCert
            ? { server: this.url, 'certificate-authority-data': Buffer.from(this.tlsCert).toString('base64') }
            : { server: this.url, 'insecure-skip-tls-verify': true },
        },
      ],
      users: [{ name: 'sim-user', user: { token: this.token } }],
      contexts: [{ name: context, context: { cluster: 'sim', user: 'sim-user' } }],
      'current-context': context,
    });
  }

  /** Writes the kubeconfig to a temporary file and returns its path. */
  kubeconfigFile(context = 'sim'): string {
    this.dir ??= mkdtempSync(join(tmpdir(), 'k8s-sim-'));
    const file = join(this.dir, 'kubeconfig');
    writeFileSync(file, this.kubeconfig(context));
    return file;
  }

  get calls(): RecordedCall[] {
    return this.api.calls;
  }

  /** Restricts requests to these RBAC rules (null: allow everything). */
  setRules(rules: PolicyRule[] | null): void {
    this.api.rules = rules;
  }

  def(plural: string, group = ''): ResourceDef {
    return this.store.def(plural, group);
  }

  addNode(
    name: string,
    options: {
      zone?: string;
      roles?: string[];
      labels?: Record<string, string>;
      annotations?: Record<string, string>;
      ready?: boolean;
      unschedulable?: boolean;
      taints?: { key: string; value?: string; effect: string }[];
    } = {},
  ): K8sObject {
    const labels: Record<string, string> = { 'kubernetes.io/hostname': name, ...options.labels };
    if (options.zone) labels['topology.kubernetes.io/zone'] = options.zone;
    for (const role of options.roles ?? []) labels[`node-role.kubernetes.io/${role}`] = 'true';
    return this.store.create(this.def('nodes'), {
      metadata: { name, labels, ...(options.annotations && { annotations: options.annotations }) },
      spec: { ...(options.unschedulable && { unschedulable: true }), ...(options.taints && { taints: options.taints }) },
      status: { conditions: [{ type: 'Ready', status: options.ready === false ? 'False' : 'True', reason: 'KubeletReady' }] },
    });
  }

  /**
   * The node's Ready condition, as the node lifecycle controller sets it: True, or (not ready)
   * `Unknown` when the kubelet stopped posting status (the default) or `False` when it reports
   * itself not ready. `lastTransitionTime` moves only when the status changes.
   */
  setNodeReady(name: string, ready: boolean, notReadyStatus: 'Unknown' | 'False' = 'Unknown'): void {
    this.store.mutate(this.def('nodes'), undefined, name, (n) => {
      const status = ready ? 'True' : notReadyStatus;
      const before = (n.status.conditions ?? []).find((c: { type: string }) => c.type === 'Ready');
      const now = new Date(this.clock.now()).toISOString();
      const reason = ready ? 'KubeletReady' : status === 'Unknown' ? 'NodeStatusUnknown' : 'KubeletNotReady';
      n.status.conditions = [
        { type: 'Ready', status, reason, lastHeartbeatTime: now, lastTransitionTime: before?.status === status ? before.lastTransitionTime : now },
      ];
    });
  }

  /** The kubelet posts its status: only `lastHeartbeatTime` of the Ready condition moves. */
  heartbeat(name: string): void {
    this.store.mutate(this.def('nodes'), undefined, name, (n) => {
      for (const c of n.status.conditions ?? []) if (c.type === 'Ready') c.lastHeartbeatTime = new Date(this.clock.now() + 1).toISOString();
    });
  }

  /** The API server unreachable (connections refused) or reachable again, on the same address. */
  setReachable(reachable: boolean): Promise<void> {
    return this.api.setReachable(reachable);
  }

  deleteNode(name: string): void {
    this.store.delete(this.def('nodes'), undefined, name);
  }

  /** Installs (true) or removes (false) Longhorn's `replicas.longhorn.io` CRD; removing drops its replicas. */
  setLonghornInstalled(installed: boolean): void {
    if (installed) this.installCrd(LONGHORN_REPLICAS);
    else this.uninstallCrd(LONGHORN_REPLICAS);
  }

  addPvc(namespace: string, name: string, options: { volumeName?: string; accessModes?: string[] } = {}): K8sObject {
    return this.store.create(this.def('persistentvolumeclaims'), {
      metadata: { name, namespace },
      spec: { accessModes: options.accessModes ?? ['ReadWriteMany'], volumeName: options.volumeName ?? `pvc-${name}` },
      status: { phase: 'Bound' },
    });
  }

  addReplica(volumeName: string, nodeID: string, started: boolean, name = `${volumeName}-r-${nodeID}`): K8sObject {
    return this.store.create(this.def('replicas', 'longhorn.io'), {
      metadata: { name, namespace: 'longhorn-system', labels: { longhornvolume: volumeName } },
      spec: { volumeName, nodeID, failedAt: started ? '' : '2026-01-01T00:00:00Z' },
      status: { started, currentState: started ? 'running' : 'stopped' },
    });
  }

  /** A VM (and, with `nodeName`, its running VMI). */
  addVm(input: VmInput): K8sObject {
    const namespace = input.namespace ?? 'default';
    const running = input.nodeName != null;
    const runStrategy = input.runStrategy ?? (running ? 'Always' : 'Halted');
    const templateSpec: Record<string, unknown> = {
      ...(input.evictionStrategy !== undefined && { evictionStrategy: input.evictionStrategy }),
      domain: {
        ...(input.memory !== undefined && { memory: { guest: input.memory } }),
        devices: {
          disks: (input.claims ?? []).map((c) => ({ name: c, disk: { bus: 'virtio' } })),
          ...(input.gpu && { gpus: [{ name: 'gpu1', deviceName: 'nvidia.com/A100' }] }),
        },
      },
      volumes: (input.claims ?? []).map((c) => ({ name: c, persistentVolumeClaim: { claimName: c } })),
      ...(input.nodeSelector && { nodeSelector: input.nodeSelector }),
      ...(input.affinity !== undefined && { affinity: input.affinity }),
    };
    // Created with the status a settled controller would have given it, so no start is simulated.
    if (input.dirtyRate !== undefined) this.controller.dirtyRates.set(`${namespace}/${input.name}`, input.dirtyRate);
    const vm = this.store.create(this.def('virtualmachines', 'kubevirt.io'), {
      metadata: { name: input.name, namespace, labels: input.labels ?? {}, annotations: input.annotations ?? {} },
      spec: { runStrategy, template: { metadata: { labels: { 'kubevirt.io/domain': input.name } }, spec: templateSpec } },
      status: running ? { printableStatus: 'Running', ready: true, created: true } : { printableStatus: 'Stopped', ready: false, created: false },
    });
    if (running) {
      this.controller.createVmi(vm, input.nodeName!, { ...(input.liveMigratableCondition === false && { liveMigratableCondition: false }) });
    }
    return vm;
  }

  vm(namespace: string, name: string): K8sObject | null {
    return this.store.get(this.def('virtualmachines', 'kubevirt.io'), namespace, name);
  }

  vmi(namespace: string, name: string): K8sObject | null {
    return this.store.get(this.def('virtualmachineinstances', 'kubevirt.io'), namespace, name);
  }

  node(name: string): K8sObject | null {
    return this.store.get(this.def('nodes'), undefined, name);
  }

  migrations(namespace?: string): K8sObject[] {
    return this.store.list(this.def('virtualmachineinstancemigrations', 'kubevirt.io'), namespace);
  }

  async close(): Promise<void> {
    this.harvester?.close();
    this.eviction.close();
    this.pods.close();
    this.controller.close();
    await this.api.close();
  }
}
