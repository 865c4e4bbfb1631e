/* eslint-disable @typescript-eslint/no-explicit-any -- Kubernetes objects are free-form JSON here, read field by field */
import { randomUUID } from 'node:crypto';
import type { SimClock } from './clock.ts';
import { ApiError, type AdmissionRequest } from './server.ts';
import type { K8sObject, ObjectStore, ResourceDef, StoreEvent } from './store.ts';

export interface ControllerDelays {
  /** From a VM wanting to run to its VMI Running. */
  startMs: number;
  /** From run strategy Halted to the VMI gone. */
  stopMs: number;
  /** From a migration's creation to its end. */
  migrateMs: number;
}

/**
 * Per-object durations that replace the fixed delays (a rehearsal draws them from history,
 * issue 33). Plain functions of the objects: the simulator stays free of the gateway.
 */
/** Each answers the duration in ms, or undefined for the simulator's own delay. */
export interface ControllerDurations {
  /** A VM's start, from wanting to run to its VMI Running on `nodeName`; replaces `startMs`. */
  start?: (vm: K8sObject, nodeName: string) => number | undefined;
  /** A VM's stop, from run strategy Halted to its VMI gone; replaces `stopMs`. */
  stop?: (vm: K8sObject, nodeName: string | null) => number | undefined;
  /** A live migration's copy, from Running to its hand-over; replaces `migrateMs` (not the dirty-rate model). */
  migrate?: (vmi: K8sObject) => number | undefined;
}

export const MIGRATION_FINALIZER = 'kubevirt.io/migrationJobFinalize';
export const VMI_NAME_LABEL = 'kubevirt.io/vmi-name';
export const MIGRATION_JOB_LABEL = 'kubevirt.io/migrationJobUID';
export const EVACUATION_ANNOTATION = 'kubevirt.io/evacuationMigration';
/** `defaultUnschedulablePendingTimeoutSeconds` (k8s:C10). */
const UNSCHEDULABLE_PENDING_TIMEOUT_MS = 300_000;
/** `defaultCatchAllPendingTimeoutSeconds`: a target pod pending for any other reason (k8s:C10). */
const CATCH_ALL_PENDING_TIMEOUT_MS = 900_000;
/**
 * KubeVirt's defaults for a migration's configuration (`virt-config.go`, k8s:C10):
 * `MigrationProgressTimeout` (seconds without data-transfer progress) and
 * `MigrationCompletionTimeoutPerGiB`; the KubeVirt CR's `spec.configuration.migrations`
 * overrides them, and a matching MigrationPolicy overrides that.
 */
const MIGRATION_DEFAULTS = {
  completionTimeoutPerGiB: 150,
  progressTimeout: 150,
  allowPostCopy: false,
  allowWorkloadDisruption: false,
  allowAutoConverge: false,
};
/** The cluster-wide settings a VMI's `migrationState.migrationConfiguration` carries (VMIMConfigurationOptions). */
const CONFIGURATION_KEYS = [
  'allowAutoConverge',
  'allowPostCopy',
  'allowWorkloadDisruption',
  'bandwidthPerMigration',
  'completionTimeoutPerGiB',
  'disableTLS',
  'matchSELinuxLevelOnMigration',
  'maxDowntimeMs',
  'network',
  'nodeDrainTaintKey',
  'parallelMigrationsPerCluster',
  'parallelOutboundMigrationsPerNode',
  'progressTimeout',
  'unsafeMigrationOverride',
  'utilityVolumesTimeout',
];
/** What a MigrationPolicy may set (MigrationPolicySpec). */
const POLICY_KEYS = ['allowAutoConverge', 'allowPostCopy', 'allowWorkloadDisruption', 'bandwidthPerMigration', 'completionTimeoutPerGiB', 'maxDowntimeMs'];
const GIB = 1024 ** 3;
const QUANTITY_SUFFIX: Record<string, number> = { '': 1, Ki: 1024, Mi: 1024 ** 2, Gi: GIB, Ti: 1024 ** 4, k: 1e3, M: 1e6, G: 1e9, T: 1e12 };
/** `virtv1.DomainAnnotation`: on a launcher pod, the name of its VMI (what KubeVirt's eviction webhook reads). */
export const DOMAIN_ANNOTATION = 'kubevirt.io/domain';
/** KubeVirt's `defaultFinalizedMigrationGarbageCollectionBuffer` (k8s:C4). */
const FINALIZED_MIGRATIONS_KEPT = 5;
const FINAL = ['Succeeded', 'Failed'];
/** Phases before the migration is handed to the VMI (k8s:C2). */
const BEFORE_HANDOFF = [undefined, 'Pending', 'Scheduling', 'Scheduled'];

/** Where a test holds a migration: in Pending (its target pod not scheduled) or in Running (copying memory). */
export interface MigrationHolds {
  pending: (m: K8sObject) => boolean;
  /** Why a held Pending target pod waits: unschedulable (300 s limit) or scheduled but not starting, e.g. an image pull (900 s). */
  pendingCause: 'Unschedulable' | 'ContainerCreating';
  running: (m: K8sObject) => boolean;
  /** How a held Running migration's copy goes: on, but slower than the completion bound, or stalled (the progress bound). */
  transfer: 'progressing' | 'stalled';
  /** How an abort of a Running migration ends (k8s:C3): Succeeded = back on the source, Failed = the migration won the race. */
  abortOutcome: 'Succeeded' | 'Failed';
  /** false: KubeVirt's own timeouts (pending, progress, completion) never fire, a KubeVirt that fails to bound a migration (the backstop's case). */
  monitor: boolean;
}

type Requirement = { key: string; operator: string; values?: string[] };

const isNodeReady = (node: K8sObject): boolean =>
  (node.status?.conditions ?? []).some((c: { type: string; status: string }) => c.type === 'Ready' && c.status === 'True');
/** The scheduler does not place pods on nodes with NoSchedule/NoExecute taints (launcher pods tolerate none here). */
const isTainted = (node: K8sObject): boolean =>
  (node.spec?.taints ?? []).some((t: { effect?: string }) => t.effect === 'NoSchedule' || t.effect === 'NoExecute');

function matchesRequirement(labels: Record<string, string>, r: Requirement): boolean {
  const has = Object.hasOwn(labels, r.key);
  switch (r.operator) {
    case 'In':
      return has && (r.values ?? []).includes(labels[r.key]!);
    case 'NotIn':
      return !has || !(r.values ?? []).includes(labels[r.key]!);
    case 'Exists':
      return has;
    case 'DoesNotExist':
      return !has;
    default:
      return false;
  }
}

/** The Kubernetes scheduler's filter for a VMI's pod: node selector and required node affinity (terms ORed). */
function nodeFits(node: K8sObject, podSpec: any, extraSelector: Record<string, string> = {}): boolean {
  const labels: Record<string, string> = node.metadata.labels ?? {};
  const selector: Record<string, string> = { ...extraSelector, ...(podSpec?.nodeSelector ?? {}) };
  if (!Object.entries(selector).every(([k, v]) => labels[k] === v)) return false;
  const terms: { matchExpressions?: Requirement[] }[] =
    podSpec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms ?? [];
  if (terms.length === 0) return true;
  return terms.some((t) => (t.matchExpressions ?? []).every((r) => matchesRequirement(labels, r)));
}

function preferenceScore(node: K8sObject, podSpec: any): number {
  const labels: Record<string, string> = node.metadata.labels ?? {};
  const preferred: { weight: number; preference: { matchExpressions?: Requirement[] } }[] =
    podSpec?.affinity?.nodeAffinity?.preferredDuringSchedulingIgnoredDuringExecution ?? [];
  return preferred.filter((p) => (p.preference.matchExpressions ?? []).every((r) => matchesRequirement(labels, r))).reduce((sum, p) => sum + p.weight, 0);
}

/** The guest memory a migration copies (`memory.guest`, else the memory request); 1 GiB when the simulated VM names none; null when unreadable. */
function memoryBytes(vmiSpec: any): number | null {
  const quantity: string | undefined = vmiSpec?.domain?.memory?.guest ?? vmiSpec?.domain?.resources?.requests?.memory;
  if (quantity === undefined) return GIB;
  return quantityBytes(quantity);
}

function quantityBytes(quantity: unknown): number | null {
  if (typeof quantity === 'number') return quantity;
  const match = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?$/.exec(String(quantity));
  if (!match) return null;
  return Number(match[1]) * QUANTITY_SUFFIX[match[2] ?? '']!;
}

const matchesLabels = (selector: Record<string, string> | undefined, labels: Record<string, string>) =>
  Object.entries(selector ?? {}).every(([k, v]) => labels[k] === v);

const runStrategyOf = (vm: K8sObject): string => vm.spec?.runStrategy ?? (vm.spec?.running === true ? 'Always' : 'Halted');
const wantsRunning = (vm: K8sObject) => ['Always', 'RerunOnFailure', 'Once'].includes(runStrategyOf(vm));

/**
 * What KubeVirt's and the scheduler's controllers do, as far as maintenance can tell:
 * a VM that should run gets a VMI (and its virt-launcher pod) on a ready, schedulable,
 * untainted node that fits its selector and affinity; Halted deletes the VMI; a launcher
 * pod deleted under a running VMI fails it (Always/RerunOnFailure start it again); a
 * migration goes Pending → Scheduling (target pod) → Running → Succeeded, or fails with a
 * reason; deleting a migration aborts it (k8s:C1–C3) and its finalizer keeps it until
 * final; final migrations are garbage-collected (k8s:C4); one migration per VMI (k8s:C5).
 */
export class KubevirtController {
  private readonly timers = new Set<() => void>();
  private readonly pending = new Set<string>();
  private readonly unsubscribe: () => void;
  private readonly nodes: ResourceDef;
  private readonly vms: ResourceDef;
  private readonly vmis: ResourceDef;
  private readonly migrations: ResourceDef;
  private readonly pvcs: ResourceDef;
  private readonly pods: ResourceDef;
  private readonly kubevirts: ResourceDef;
  private readonly policies: ResourceDef;
  private readonly running = new Set<string>();
  /**
   * The dirty-rate model (issue 26): how fast each VM's guest dirties memory (bytes/s, by
   * `namespace/name`) against the link a migration has (`bandwidth`, bytes/s, capped by
   * `bandwidthPerMigration`). With a bandwidth set, a pre-copy takes memory / (bandwidth −
   * dirty rate) and one whose guest dirties as fast as the link moves stalls; without,
   * every migration takes `delays.migrateMs`.
   */
  readonly dirtyRates = new Map<string, number>();
  bandwidth: number | null = null;
  /**
   * KubeVirt's migration throttle: a migration stays Pending while `parallelMigrationsPerCluster`
   * (default 5) migrations are under way, or `parallelOutboundMigrationsPerNode` (default 2)
   * leave its VM's node, and goes on when one ends. Off by default here (the simulator's
   * tests predate it); a rehearsal turns it on.
   */
  migrationLimits = false;
  readonly holds: MigrationHolds = {
    pending: () => false,
    pendingCause: 'Unschedulable',
    running: () => false,
    transfer: 'progressing',
    abortOutcome: 'Succeeded',
    monitor: true,
  };

  constructor(
    private readonly store: ObjectStore,
    public delays: ControllerDelays,
    private readonly clock: SimClock,
    private readonly durations: ControllerDurations = {},
  ) {
    this.nodes = store.def('nodes');
    this.pvcs = store.def('persistentvolumeclaims');
    this.pods = store.def('pods');
    this.vms = store.def('virtualmachines', 'kubevirt.io');
    this.vmis = store.def('virtualmachineinstances', 'kubevirt.io');
    this.migrations = store.def('virtualmachineinstancemigrations', 'kubevirt.io');
    this.kubevirts = store.def('kubevirts', 'kubevirt.io');
    this.policies = store.def('migrationpolicies', 'migrations.kubevirt.io');
    this.unsubscribe = store.subscribe((e) => this.onEvent(e));
  }

  close(): void {
    this.unsubscribe();
    for (const cancel of this.timers) cancel();
    this.timers.clear();
  }

  /** A simulated duration, on the simulator's clock. */
  private later(ms: number, fn: () => void): void {
    const cancel = this.clock.setTimer(ms, () => {
      this.timers.delete(cancel);
      fn();
    });
    this.timers.add(cancel);
  }

  /** Migrations held by `holds` go on (tests release them). */
  release(): void {
    for (const m of this.store.list(this.migrations))
      this.schedule(`mig/${m.metadata.namespace}/${m.metadata.name}`, () => this.syncMigration(m.metadata.namespace!, m.metadata.name));
  }

  /** KubeVirt's admission of migrations: the VMI label (mutating webhook), the finalizer, one in flight per VMI (k8s:C5). */
  admit(a: AdmissionRequest): void {
    if (a.resource !== this.migrations || a.verb !== 'create' || !a.object) return;
    const m = a.object;
    const vmiName: string | undefined = m.spec?.vmiName;
    if (!vmiName) throw new ApiError(422, 'Invalid', 'spec.vmiName: Required value');
    const active = this.store.list(this.migrations, a.namespace).find((o) => o.spec?.vmiName === vmiName && !FINAL.includes(o.status?.phase));
    if (active) {
      throw new ApiError(
        400,
        'BadRequest',
        `admission webhook "migration-create-validator.kubevirt.io" denied the request: in-flight migration detected. Active migration job (${active.metadata.uid}) is currently already in progress for VMI ${vmiName}.`,
      );
    }
    m.metadata.labels = { ...(m.metadata.labels ?? {}), [VMI_NAME_LABEL]: vmiName };
    m.metadata.finalizers = [...new Set([...(m.metadata.finalizers ?? []), MIGRATION_FINALIZER])];
  }

  private onEvent(e: StoreEvent): void {
    const { namespace, name } = e.object.metadata;
    if (e.resource === this.vms && e.type !== 'DELETED') this.schedule(`vm/${namespace}/${name}`, () => this.reconcileVm(namespace!, name));
    if (e.resource === this.vmis && e.type === 'DELETED') {
      this.schedule(`vm/${namespace}/${name}`, () => this.reconcileVm(namespace!, name));
      this.schedule(`gc/${namespace}`, () => this.collectMigrations(namespace!));
    }
    if (e.resource === this.vmis && e.type === 'MODIFIED' && e.object.status?.phase === 'Failed')
      this.schedule(`vm/${namespace}/${name}`, () => this.reconcileVm(namespace!, name));
    if (e.resource === this.migrations && e.type !== 'DELETED') this.schedule(`mig/${namespace}/${name}`, () => this.syncMigration(namespace!, name));
    if (this.migrationLimits && e.resource === this.migrations && (e.type === 'DELETED' || FINAL.includes(e.object.status?.phase))) {
      // A slot is free: the queued migrations are looked at again, oldest first.
      this.schedule('throttle', () => {
        const queued = this.store.list(this.migrations).filter((m) => m.status?.phase === 'Pending' && !m.metadata.deletionTimestamp);
        queued.sort((a, b) => Number(a.metadata.resourceVersion) - Number(b.metadata.resourceVersion));
        for (const m of queued) this.syncMigration(m.metadata.namespace!, m.metadata.name);
      });
    }
    if (e.resource === this.pods && e.type === 'DELETED') this.launcherGone(e.object);
    if (e.resource === this.nodes && e.type === 'DELETED') this.schedule(`node/${name}`, () => this.nodeGone(name));
    if (e.resource === this.nodes && e.type === 'MODIFIED') {
      // A node that becomes schedulable may take VMs that are waiting.
      this.schedule('all-vms', () => {
        for (const vm of this.store.list(this.vms)) this.reconcileVm(vm.metadata.namespace!, vm.metadata.name);
      });
    }
  }

  /** Runs `fn` once after the current change settles (coalesced per key; real time: the controllers' work queue). */
  private schedule(key: string, fn: () => void): void {
    if (this.pending.has(key)) return;
    this.pending.add(key);
    setImmediate(() => {
      this.pending.delete(key);
      fn();
    });
  }

  private setVmStatus(namespace: string, name: string, change: Record<string, unknown>): void {
    this.store.mutate(this.vms, namespace, name, (vm) => {
      vm.status = { ...(vm.status ?? {}), ...change };
    });
  }

  private readonly starting = new Set<string>();
  private readonly stopping = new Set<string>();

  private reconcileVm(namespace: string, name: string): void {
    const vm = this.store.get(this.vms, namespace, name);
    if (!vm) return;
    const key = `${namespace}/${name}`;
    let vmi = this.store.get(this.vmis, namespace, name);
    if (vmi?.status?.phase === 'Failed') {
      // Its pod went (an eviction under None, the node lost): Always/RerunOnFailure start a new one; Manual keeps it off.
      if (['Always', 'RerunOnFailure'].includes(runStrategyOf(vm)) || !wantsRunning(vm)) {
        this.deleteVmi(namespace, name);
        vmi = null;
      } else {
        if (vm.status?.printableStatus !== 'Stopped') this.setVmStatus(namespace, name, { printableStatus: 'Stopped', ready: false });
        return;
      }
    }
    if (wantsRunning(vm) && !vmi) {
      if (this.starting.has(key)) return;
      const node = this.pickNode(vm.spec?.template?.spec, null, {});
      if (!node) {
        if (vm.status?.printableStatus !== 'ErrorUnschedulable')
          this.setVmStatus(namespace, name, { printableStatus: 'ErrorUnschedulable', ready: false, created: false });
        return;
      }
      this.starting.add(key);
      this.setVmStatus(namespace, name, { printableStatus: 'Starting', ready: false, created: true });
      this.later(this.durations.start?.(vm, node.metadata.name) ?? this.delays.startMs, () => {
        this.starting.delete(key);
        const current = this.store.get(this.vms, namespace, name);
        if (!current || !wantsRunning(current) || this.store.get(this.vmis, namespace, name)) return this.reconcileVm(namespace, name);
        // The scheduler decides now, with the nodes as they are now.
        const target = this.pickNode(current.spec?.template?.spec, null, {});
        if (!target) return this.reconcileVm(namespace, name);
        this.createVmi(current, target.metadata.name);
        this.setVmStatus(namespace, name, { printableStatus: 'Running', ready: true, created: true });
      });
      return;
    }
    if (!wantsRunning(vm) && runStrategyOf(vm) !== 'Manual' && vmi) {
      if (this.stopping.has(key)) return;
      this.stopping.add(key);
      this.setVmStatus(namespace, name, { printableStatus: 'Stopping' });
      this.later(this.durations.stop?.(vm, vmi.status?.nodeName ?? null) ?? this.delays.stopMs, () => {
        this.stopping.delete(key);
        this.deleteVmi(namespace, name);
        const current = this.store.get(this.vms, namespace, name);
        if (current && !wantsRunning(current)) this.setVmStatus(namespace, name, { printableStatus: 'Stopped', ready: false, created: false });
        else this.reconcileVm(namespace, name);
      });
      return;
    }
    if (!vmi && !wantsRunning(vm) && vm.status?.printableStatus !== 'Stopped' && !this.starting.has(key)) {
      this.setVmStatus(namespace, name, { printableStatus: 'Stopped', ready: false, created: false });
    }
  }

  /** The VMI and, by owner reference, its pods. */
  private deleteVmi(namespace: string, name: string): void {
    const vmi = this.store.get(this.vmis, namespace, name);
    if (!vmi) return;
    this.store.delete(this.vmis, namespace, name);
    for (const pod of this.launcherPods(namespace, vmi.metadata.uid!)) this.store.delete(this.pods, namespace, pod.metadata.name);
  }

  private launcherPods(namespace: string, vmiUid: string): K8sObject[] {
    return this.store.list(this.pods, namespace).filter((p) => p.metadata.labels?.['kubevirt.io/created-by'] === vmiUid);
  }

  /** The running launcher pod of a VMI (not a migration target, not finished), or null. */
  activePod(vmi: K8sObject): K8sObject | null {
    const uid = Object.keys(vmi.status?.activePods ?? {})[0];
    return this.launcherPods(vmi.metadata.namespace!, vmi.metadata.uid!).find((p) => p.metadata.uid === uid && !FINAL.includes(p.status?.phase)) ?? null;
  }

  /** A running VMI's launcher pod was deleted: the VMI fails (the VM's run strategy decides what comes next). */
  private launcherGone(pod: K8sObject): void {
    if (pod.metadata.labels?.['kubevirt.io'] !== 'virt-launcher' || pod.metadata.labels?.[MIGRATION_JOB_LABEL]) return;
    const owner: any = (pod.metadata.ownerReferences ?? []).find((r: any) => r.kind === 'VirtualMachineInstance');
    if (!owner) return;
    const vmi = this.store.get(this.vmis, pod.metadata.namespace, owner.name);
    if (!vmi || vmi.metadata.uid !== owner.uid || vmi.status?.phase !== 'Running' || !Object.hasOwn(vmi.status?.activePods ?? {}, pod.metadata.uid!)) return;
    this.store.mutate(this.vmis, pod.metadata.namespace, owner.name, (v) => {
      v.status.phase = 'Failed';
    });
  }

  /** The KubeVirt CR's `spec.configuration` (k8s:E1, k8s:E3), or empty. */
  clusterConfig(): any {
    return this.store.list(this.kubevirts)[0]?.spec?.configuration ?? {};
  }

  /** Why KubeVirt would call this VMI not live-migratable, or null. */
  private notMigratableReason(vmiSpec: any, namespace: string): { reason: string; message: string } | null {
    const devices = vmiSpec?.domain?.devices ?? {};
    if ((devices.hostDevices ?? []).length > 0 || (devices.gpus ?? []).length > 0) {
      return { reason: 'HostDeviceNotLiveMigratable', message: 'VMI uses a PCI host devices' };
    }
    for (const volume of vmiSpec?.volumes ?? []) {
      const claim = volume.persistentVolumeClaim?.claimName ?? volume.dataVolume?.name;
      if (!claim) continue;
      const pvc = this.store.get(this.pvcs, namespace, claim);
      const modes: string[] = pvc?.spec?.accessModes ?? [];
      if (pvc && !modes.includes('ReadWriteMany')) {
        return {
          reason: 'DisksNotLiveMigratable',
          message: `cannot migrate VMI: PVC ${claim} is not shared, live migration requires that all PVCs must be shared (using ReadWriteMany access mode)`,
        };
      }
    }
    return null;
  }

  /**
   * Creates the Running VMI of `vm` on `nodeName` (also used to seed VMs that already run),
   * with its launcher pod. KubeVirt's VMI mutating webhook copies the cluster's eviction
   * strategy into a VMI that has none (k8s:E1).
   */
  createVmi(vm: K8sObject, nodeName: string, options: { liveMigratableCondition?: boolean } = {}): void {
    const { namespace, name } = vm.metadata;
    const spec = structuredClone(vm.spec?.template?.spec ?? {});
    const cluster = this.clusterConfig().evictionStrategy;
    if (spec.evictionStrategy === undefined && cluster !== undefined) spec.evictionStrategy = cluster;
    const notMigratable = this.notMigratableReason(spec, namespace!);
    const labels = { ...(vm.spec?.template?.metadata?.labels ?? {}), 'kubevirt.io/nodeName': nodeName };
    const vmi = this.store.create(this.vmis, {
      metadata: {
        name,
        namespace,
        labels,
        ownerReferences: [{ apiVersion: 'kubevirt.io/v1', kind: 'VirtualMachine', name, uid: vm.metadata.uid, controller: true }],
      },
      spec,
      status: {
        phase: 'Running',
        nodeName,
        conditions: [
          { type: 'Ready', status: 'True' },
          ...(options.liveMigratableCondition === false
            ? []
            : [
                notMigratable
                  ? { type: 'LiveMigratable', status: 'False', reason: notMigratable.reason, message: notMigratable.message }
                  : { type: 'LiveMigratable', status: 'True' },
              ]),
        ],
      },
    });
    const pod = this.createLauncherPod(vmi, nodeName, {});
    this.store.mutate(this.vmis, namespace, name, (v) => {
      v.status.activePods = { [pod.metadata.uid!]: nodeName };
    });
  }

  /** A virt-launcher pod of the VMI; `nodeName` null: a migration target not scheduled yet (Pending). */
  private createLauncherPod(vmi: K8sObject, nodeName: string | null, extraLabels: Record<string, string>): K8sObject {
    const { namespace, name } = vmi.metadata;
    return this.store.create(this.pods, {
      metadata: {
        name: `virt-launcher-${name}-${randomUUID().slice(0, 5)}`,
        namespace,
        labels: {
          ...Object.fromEntries(Object.entries(vmi.metadata.labels ?? {}).filter(([k]) => k !== 'kubevirt.io/nodeName')),
          'kubevirt.io': 'virt-launcher',
          'kubevirt.io/created-by': vmi.metadata.uid!,
          'vm.kubevirt.io/name': name,
          ...extraLabels,
        },
        annotations: { [DOMAIN_ANNOTATION]: name },
        ownerReferences: [
          { apiVersion: 'kubevirt.io/v1', kind: 'VirtualMachineInstance', name, uid: vmi.metadata.uid, controller: true, blockOwnerDeletion: true },
        ],
      },
      spec: {
        ...(nodeName && { nodeName }),
        terminationGracePeriodSeconds: 45,
        containers: [{ name: 'compute', image: 'quay.io/kubevirt/virt-launcher:v1.6.0' }],
      },
      status: nodeName ? { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] } : { phase: 'Pending' },
    });
  }

  private pickNode(podSpec: any, exclude: string | null, extraSelector: Record<string, string>): K8sObject | null {
    const load = new Map<string, number>();
    for (const vmi of this.store.list(this.vmis)) load.set(vmi.status?.nodeName, (load.get(vmi.status?.nodeName) ?? 0) + 1);
    const candidates = this.store
      .list(this.nodes)
      .filter((n) => n.metadata.name !== exclude && isNodeReady(n) && !n.spec?.unschedulable && !isTainted(n) && nodeFits(n, podSpec, extraSelector));
    candidates.sort(
      (a, b) =>
        preferenceScore(b, podSpec) - preferenceScore(a, podSpec) ||
        (load.get(a.metadata.name) ?? 0) - (load.get(b.metadata.name) ?? 0) ||
        a.metadata.name.localeCompare(b.metadata.name),
    );
    return candidates[0] ?? null;
  }

  private setMigration(namespace: string, name: string, change: (m: K8sObject) => void): void {
    this.store.mutate(this.migrations, namespace, name, change);
  }

  private setPhase(namespace: string, name: string, phase: string, extra: Record<string, unknown> = {}): void {
    this.setMigration(namespace, name, (m) => {
      m.status = { ...(m.status ?? {}), ...extra, phase };
    });
  }

  private targetPods(namespace: string, migrationUid: string): K8sObject[] {
    return this.store.list(this.pods, namespace).filter((p) => p.metadata.labels?.[MIGRATION_JOB_LABEL] === migrationUid);
  }

  private fail(mig: K8sObject, reason: string, extra: { abortRequested?: boolean } = {}): void {
    const { namespace, name } = mig.metadata;
    const vmiName: string | undefined = mig.spec?.vmiName;
    for (const p of this.targetPods(namespace!, mig.metadata.uid!)) this.store.delete(this.pods, namespace, p.metadata.name);
    this.setMigration(namespace!, name, (m) => {
      m.status = {
        ...(m.status ?? {}),
        phase: 'Failed',
        migrationState: { ...(m.status?.migrationState ?? {}), failed: true, completed: true, failureReason: reason },
        ...(extra.abortRequested && { conditions: [...(m.status?.conditions ?? []), { type: 'migrationAbortRequested', status: 'True' }] }),
      };
    });
    const vmi = vmiName ? this.store.get(this.vmis, namespace, vmiName) : null;
    if (vmi && vmi.status?.migrationState?.migrationUid === mig.metadata.uid) {
      this.store.mutate(this.vmis, namespace, vmiName!, (v) => {
        v.status.migrationState = { ...(v.status.migrationState ?? {}), failed: true, completed: true, failureReason: reason };
      });
      if (this.store.get(this.vms, namespace, vmiName!)) this.setVmStatus(namespace!, vmiName!, { printableStatus: 'Running' });
    }
    this.event(namespace!, mig, 'FailedMigration', reason);
  }

  /** A core/v1 Event about the migration, as KubeVirt records one. */
  private event(namespace: string, mig: K8sObject, reason: string, message: string): void {
    const events = this.store.resource('', 'events');
    if (!events) return;
    this.store.create(events, {
      metadata: { name: '', generateName: `${mig.metadata.name}.`, namespace },
      involvedObject: { apiVersion: 'kubevirt.io/v1', kind: 'VirtualMachineInstanceMigration', name: mig.metadata.name, namespace, uid: mig.metadata.uid },
      reason,
      message,
      type: reason === 'FailedMigration' ? 'Warning' : 'Normal',
      source: { component: 'virtualmachine-controller' },
    });
  }

  /** One step of a migration's life, from what it is now. */
  private syncMigration(namespace: string, name: string): void {
    const mig = this.store.get(this.migrations, namespace, name);
    if (!mig) return;
    const phase: string | undefined = mig.status?.phase;
    if (mig.metadata.deletionTimestamp) return this.abort(mig);
    if (FINAL.includes(phase!)) return this.schedule(`gc/${namespace}`, () => this.collectMigrations(namespace));
    if (phase === undefined) {
      // The target pod exists from the start, unscheduled, as KubeVirt creates it.
      const vmi = this.store.get(this.vmis, namespace, mig.spec?.vmiName);
      if (vmi) this.createLauncherPod(vmi, null, { [MIGRATION_JOB_LABEL]: mig.metadata.uid! });
      return this.setPhase(namespace, name, 'Pending');
    }
    if (phase === 'Pending') {
      if (this.holds.pending(mig)) return this.holdPending(mig);
      if (this.throttled(mig)) return;
      return this.startMigration(mig);
    }
  }

  /** With `migrationLimits`: whether KubeVirt's parallel-migration limits keep this migration queued. */
  private throttled(mig: K8sObject): boolean {
    if (!this.migrationLimits) return false;
    const limits = this.clusterConfig().migrations ?? {};
    const active = this.store.list(this.migrations).filter((m) => m.status?.phase === 'Scheduling' || m.status?.phase === 'Running');
    if (active.length >= (limits.parallelMigrationsPerCluster ?? 5)) return true;
    const source = this.store.get(this.vmis, mig.metadata.namespace, mig.spec?.vmiName)?.status?.nodeName;
    return active.filter((m) => m.status?.migrationState?.sourceNode === source).length >= (limits.parallelOutboundMigrationsPerNode ?? 2);
  }

  /**
   * A held Pending migration's target pod does not start: `handlePendingPodTimeout` deletes it
   * after `defaultUnschedulablePendingTimeoutSeconds` (300 s) when it is unschedulable, after
   * `defaultCatchAllPendingTimeoutSeconds` (900 s) when it pends for another reason (k8s:C10),
   * and the migration fails.
   */
  private holdPending(mig: K8sObject): void {
    const { namespace } = mig.metadata;
    const unschedulable = this.holds.pendingCause === 'Unschedulable';
    for (const pod of this.targetPods(namespace!, mig.metadata.uid!)) {
      if (pod.spec?.nodeName || pod.status?.conditions?.some((c: { type: string }) => c.type === 'PodScheduled')) continue;
      this.store.mutate(this.pods, namespace, pod.metadata.name, (p) => {
        p.status = {
          ...p.status,
          conditions: [
            unschedulable
              ? { type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: '0/3 nodes are available' }
              : { type: 'PodScheduled', status: 'True' },
          ],
          ...(!unschedulable && {
            containerStatuses: [
              {
                name: 'compute',
                image: 'quay.io/kubevirt/virt-launcher:v1.6.0',
                imageID: '',
                ready: false,
                restartCount: 0,
                state: { waiting: { reason: 'ContainerCreating' } },
              },
            ],
          }),
        };
      });
      // Counted on the simulator's clock from now: the pod was created a moment ago, in the step before Pending.
      this.later(unschedulable ? UNSCHEDULABLE_PENDING_TIMEOUT_MS : CATCH_ALL_PENDING_TIMEOUT_MS, () => {
        const now = this.store.get(this.migrations, namespace, mig.metadata.name);
        const target = this.store.get(this.pods, namespace, pod.metadata.name);
        if (now?.status?.phase !== 'Pending' || now.metadata.deletionTimestamp || !target || target.spec?.nodeName || !this.holds.monitor) return;
        this.fail(now, `${unschedulable ? 'unschedulable' : 'pending'} pod ${namespace}/${pod.metadata.name} timeout period exceeded`);
      });
    }
  }

  /**
   * The configuration KubeVirt merges for a migration (`migrationState.migrationConfiguration`):
   * its defaults, then the KubeVirt CR's `spec.configuration.migrations`, then the first
   * MigrationPolicy (by name) whose selectors match the VMI's labels and its namespace.
   */
  private migrationConfiguration(vmi: K8sObject): { configuration: Record<string, unknown>; policy: string | null } {
    const cluster = this.clusterConfig().migrations ?? {};
    const configuration: Record<string, unknown> = { ...MIGRATION_DEFAULTS };
    for (const k of CONFIGURATION_KEYS) if (cluster[k] !== undefined) configuration[k] = cluster[k];
    const namespaceLabels = { 'kubernetes.io/metadata.name': vmi.metadata.namespace! };
    const policy = this.store
      .list(this.policies)
      .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name))
      .find(
        (p) =>
          matchesLabels(p.spec?.selectors?.virtualMachineInstanceSelector, vmi.metadata.labels ?? {}) &&
          matchesLabels(p.spec?.selectors?.namespaceSelector, namespaceLabels),
      );
    for (const k of POLICY_KEYS) if (policy?.spec?.[k] !== undefined) configuration[k] = policy.spec[k];
    return { configuration, policy: policy?.metadata.name ?? null };
  }

  /** How long the pre-copy of this VMI takes (the dirty-rate model), or null when it never converges. */
  private transferMs(vmi: K8sObject, configuration: Record<string, unknown>): number | null {
    if (this.bandwidth === null) return this.durations.migrate?.(vmi) ?? this.delays.migrateMs;
    const cap = configuration.bandwidthPerMigration === undefined ? null : quantityBytes(configuration.bandwidthPerMigration);
    const link = cap ? Math.min(cap, this.bandwidth) : this.bandwidth;
    const dirty = this.dirtyRates.get(`${vmi.metadata.namespace}/${vmi.metadata.name}`) ?? 0;
    if (dirty >= link) return null;
    return Math.ceil(((memoryBytes(vmi.spec) ?? GIB) / (link - dirty)) * 1000);
  }

  /**
   * virt-launcher's migration monitor (k8s:C10), with the configuration merged for this
   * migration: a copy with no progress for `progressTimeout` is aborted; one still running
   * after `completionTimeoutPerGiB` × the VM's memory in GiB (rounded up) is aborted, unless
   * post-copy is allowed (it switches to post-copy and completes) or workload disruption is
   * (the guest is paused and the copy completes).
   */
  private watchTransfer(mig: K8sObject, vmi: K8sObject, configuration: Record<string, any>, converges: boolean): void {
    const { namespace, name } = mig.metadata;
    const uid = mig.metadata.uid!;
    const progressS: number = configuration.progressTimeout;
    const bytes = memoryBytes(vmi.spec);
    const current = () => {
      const now = this.store.get(this.migrations, namespace, name);
      return now && now.metadata.uid === uid && now.status?.phase === 'Running' && !now.metadata.deletionTimestamp ? now : null;
    };
    const abortIf = (stuck: () => boolean, reason: string) => () => {
      const now = current();
      if (!now || !stuck() || !this.holds.monitor) return;
      this.running.delete(uid);
      this.fail(now, reason);
    };
    // A copy stalls when a test holds it so, or when the guest dirties memory as fast as the link moves it.
    this.later(
      progressS * 1000,
      abortIf(
        () => (this.holds.transfer === 'stalled' && this.holds.running(mig)) || (!converges && current()?.status?.migrationState?.mode === 'PreCopy'),
        `Live migration stuck for ${progressS} sec and has been aborted`,
      ),
    );
    if (bytes === null) return;
    const completionS = configuration.completionTimeoutPerGiB * Math.ceil(bytes / GIB);
    const switchTo = configuration.allowPostCopy ? 'PostCopy' : configuration.allowWorkloadDisruption ? 'Paused' : null;
    this.later(completionS * 1000, () => {
      const now = current();
      if (!now || !this.holds.monitor) return;
      if (!switchTo) return abortIf(() => true, `Live migration is not completed after ${completionS} sec and has been aborted`)();
      // Post-copy (or a paused guest) always converges: the rest is moved and the migration completes.
      const setMode = (m: any) => (m.status.migrationState = { ...m.status.migrationState, mode: switchTo });
      this.setMigration(namespace!, name, setMode);
      this.store.mutate(this.vmis, namespace, mig.spec.vmiName, (v) => {
        if (v.status.migrationState?.migrationUid === uid) setMode(v);
      });
      this.later(this.delays.migrateMs, () => {
        const again = current();
        if (again) this.succeed(again);
      });
    });
  }

  /** Pending → Scheduling (the target pod) → Running; then Succeeded after `migrateMs`, unless held or aborted. */
  private startMigration(mig: K8sObject): void {
    const { namespace, name } = mig.metadata;
    const vmiName: string | undefined = mig.spec?.vmiName;
    const vmi = vmiName ? this.store.get(this.vmis, namespace, vmiName) : null;
    if (!vmi || vmi.status?.phase !== 'Running') return this.fail(mig, `VMI ${namespace}/${vmiName} is not running`);
    const notMigratable = (vmi.status.conditions ?? []).find((c: { type: string; status: string }) => c.type === 'LiveMigratable' && c.status === 'False');
    if (notMigratable) return this.fail(mig, `${notMigratable.reason}: ${notMigratable.message ?? 'not live-migratable'}`);
    const source: string = vmi.status.nodeName;
    const target = this.pickNode(vmi.spec, source, mig.spec?.addedNodeSelector ?? {});
    if (!target) return this.fail(mig, "target pod unschedulable: no node matches the VMI's constraints");
    const targetNode = target.metadata.name;
    this.setPhase(namespace!, name, 'Scheduling');
    const pending = this.targetPods(namespace!, mig.metadata.uid!)[0];
    const targetPod = pending
      ? this.store.mutate(this.pods, namespace, pending.metadata.name, (p) => {
          p.spec.nodeName = targetNode;
          p.status = { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] };
        })!
      : this.createLauncherPod(vmi, targetNode, { [MIGRATION_JOB_LABEL]: mig.metadata.uid! });
    const { configuration, policy } = this.migrationConfiguration(vmi);
    const migrationState = {
      migrationUid: mig.metadata.uid,
      sourceNode: source,
      targetNode,
      targetPod: targetPod.metadata.name,
      startTimestamp: new Date(this.clock.now()).toISOString(),
      mode: 'PreCopy',
      migrationConfiguration: configuration,
      ...(policy && { migrationPolicyName: policy }),
      completed: false,
      failed: false,
    };
    this.setPhase(namespace!, name, 'Running', { migrationState });
    this.store.mutate(this.vmis, namespace, vmiName!, (v) => {
      v.status.migrationState = migrationState;
    });
    this.setVmStatus(namespace!, vmiName!, { printableStatus: 'Migrating' });
    this.running.add(mig.metadata.uid!);
    const transferMs = this.transferMs(vmi, configuration);
    this.watchTransfer(mig, vmi, configuration, transferMs !== null);
    if (transferMs !== null) this.later(transferMs, () => this.complete(namespace!, name, mig.metadata.uid!));
  }

  /** The copy is done: hand-over to the target, unless a test holds it or it was aborted meanwhile. */
  private complete(namespace: string, name: string, uid: string): void {
    const mig = this.store.get(this.migrations, namespace, name);
    if (!mig || mig.metadata.uid !== uid || mig.status?.phase !== 'Running') return;
    if (mig.metadata.deletionTimestamp) return;
    if (this.holds.running(mig)) {
      // Looked at again on release().
      return;
    }
    this.succeed(mig);
  }

  private succeed(mig: K8sObject): void {
    const { namespace, name } = mig.metadata;
    const vmiName: string = mig.spec.vmiName;
    const state = mig.status.migrationState;
    this.running.delete(mig.metadata.uid!);
    const vmi = this.store.get(this.vmis, namespace, vmiName);
    if (!vmi || vmi.status?.migrationState?.migrationUid !== mig.metadata.uid) return this.fail(mig, 'the VMI went away during the migration');
    const targetNow = this.store.get(this.nodes, undefined, state.targetNode);
    if (!targetNow || !isNodeReady(targetNow)) return this.fail(mig, `target node ${state.targetNode} became unavailable`);
    const done = { ...state, completed: true };
    const sourcePod = this.activePod(vmi);
    const targetPod = this.targetPods(namespace!, mig.metadata.uid!)[0];
    this.store.mutate(this.vmis, namespace, vmiName, (v) => {
      v.status.nodeName = state.targetNode;
      v.status.migrationState = done;
      v.metadata.labels = { ...(v.metadata.labels ?? {}), 'kubevirt.io/nodeName': state.targetNode };
      v.status.activePods = targetPod ? { [targetPod.metadata.uid!]: state.targetNode } : {};
      delete v.status.evacuationNodeName;
    });
    // The source's launcher pod completes (a completed launcher pod passes an eviction, k8s:E2).
    if (sourcePod)
      this.store.mutate(
        this.pods,
        namespace,
        sourcePod.metadata.name,
        (p) => (p.status = { phase: 'Succeeded', conditions: [{ type: 'Ready', status: 'False' }] }),
      );
    this.setPhase(namespace!, name, 'Succeeded', { migrationState: done });
    this.setVmStatus(namespace!, vmiName, { printableStatus: 'Running' });
  }

  /**
   * k8s:C1–C3: a deleted migration. Final: its finalizer goes. Before hand-off: abort
   * requested, target pod deleted, Failed, the VM never left. Running: the VMI's
   * migrationState asks for the abort; it ends as `holds.abortOutcome` says.
   */
  private abort(mig: K8sObject): void {
    const { namespace, name } = mig.metadata;
    const phase: string | undefined = mig.status?.phase;
    const dropFinalizer = () =>
      this.setMigration(namespace!, name, (m) => {
        m.metadata.finalizers = (m.metadata.finalizers ?? []).filter((f: string) => f !== MIGRATION_FINALIZER);
      });
    if (FINAL.includes(phase!)) return dropFinalizer();
    if (BEFORE_HANDOFF.includes(phase)) {
      this.fail(mig, `Migration ${name} was canceled`, { abortRequested: true });
      return dropFinalizer();
    }
    if (phase === 'Running' && mig.status?.migrationState?.abortStatus === undefined) {
      const vmiName: string = mig.spec.vmiName;
      this.setMigration(namespace!, name, (m) => {
        m.status.conditions = [...(m.status.conditions ?? []), { type: 'migrationAbortRequested', status: 'True' }];
        m.status.migrationState = { ...m.status.migrationState, abortRequested: true, abortStatus: 'Aborting' };
      });
      this.store.mutate(this.vmis, namespace, vmiName, (v) => {
        if (v.status.migrationState?.migrationUid === mig.metadata.uid)
          v.status.migrationState = { ...v.status.migrationState, abortRequested: true, abortStatus: 'Aborting' };
      });
      this.later(Math.max(1, Math.floor(this.delays.migrateMs / 4)), () => {
        const now = this.store.get(this.migrations, namespace, name);
        if (!now) return;
        const outcome = this.holds.abortOutcome;
        this.store.mutate(this.vmis, namespace, vmiName, (v) => {
          if (v.status.migrationState?.migrationUid === mig.metadata.uid) v.status.migrationState = { ...v.status.migrationState, abortStatus: outcome };
        });
        this.setMigration(namespace!, name, (m) => (m.status.migrationState = { ...m.status.migrationState, abortStatus: outcome }));
        const current = this.store.get(this.migrations, namespace, name)!;
        // The abort lost the race: the migration completes on the target.
        if (outcome === 'Failed') this.succeed(current);
        else this.fail(current, `Migration ${name} was aborted`, {});
        this.running.delete(mig.metadata.uid!);
        dropFinalizer();
      });
    }
  }

  /** k8s:C4: migrations of a VMI that is gone go; of the final ones only the newest 5 per VMI are kept. */
  private collectMigrations(namespace: string): void {
    const byVmi = new Map<string, K8sObject[]>();
    for (const m of this.store.list(this.migrations, namespace)) {
      const vmiName: string = m.spec?.vmiName;
      if (!this.store.get(this.vmis, namespace, vmiName)) {
        if (FINAL.includes(m.status?.phase) || !m.metadata.finalizers?.length) this.store.delete(this.migrations, namespace, m.metadata.name);
        continue;
      }
      if (FINAL.includes(m.status?.phase) && !m.metadata.deletionTimestamp) byVmi.set(vmiName, [...(byVmi.get(vmiName) ?? []), m]);
    }
    for (const list of byVmi.values()) {
      list.sort((a, b) => Number(b.metadata.resourceVersion) - Number(a.metadata.resourceVersion));
      for (const old of list.slice(FINALIZED_MIGRATIONS_KEPT)) this.store.delete(this.migrations, namespace, old.metadata.name);
    }
  }

  /** A migration as KubeVirt's own controllers create it (the evacuation controller), with what admission adds. */
  createMigration(namespace: string, vmiName: string, metadata: { generateName: string; annotations?: Record<string, string> }): K8sObject {
    return this.store.create(this.migrations, {
      metadata: { name: '', ...metadata, namespace, labels: { [VMI_NAME_LABEL]: vmiName }, finalizers: [MIGRATION_FINALIZER] },
      spec: { vmiName },
    });
  }

  private nodeGone(nodeName: string): void {
    for (const vmi of this.store.list(this.vmis)) {
      if (vmi.status?.nodeName === nodeName) this.deleteVmi(vmi.metadata.namespace!, vmi.metadata.name);
    }
  }
}
