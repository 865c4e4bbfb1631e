/* eslint-disable @typescript-eslint/no-explicit-any -- Kubernetes objects are free-form JSON here, read field by field */
import type { K8sObject, ObjectStore, ResourceDef, StoreEvent } from './store.ts';

export interface ControllerDelays {
  /** From a VM wanting to run to its VMI Running. */
  startMs: number;
  /** From run strategy Halted to the VMI gone. */
  stopMs: number;
  /** From a migration's creation to its end. */
  migrateMs: number;
}

type Requirement = { key: string; operator: string; values?: string[] };

const isNodeReady = (node: K8sObject): boolean =>
  (node.status?.conditions ?? []).some((c: { type: string; status: string }) => c.type === 'Ready' && c.status === 'True');

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

const runStrategyOf = (vm: K8sObject): string => vm.spec?.runStrategy ?? (vm.spec?.running === true ? 'Always' : 'Halted');
const wantsRunning = (vm: K8sObject) => ['Always', 'RerunOnFailure', 'Once'].includes(runStrategyOf(vm));

/**
 * What KubeVirt's and the scheduler's controllers do, as far as maintenance can tell:
 * a VM that should run gets a VMI on a ready, schedulable node that fits its selector and
 * affinity (preferred affinity and then load break ties); Halted deletes the VMI; a
 * migration moves the VMI to another fitting node after a delay, or fails with a reason
 * when the VMI is not live-migratable or no node fits; a deleted node takes its VMIs with it.
 */
export class KubevirtController {
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly pending = new Set<string>();
  private readonly unsubscribe: () => void;
  private readonly nodes: ResourceDef;
  private readonly vms: ResourceDef;
  private readonly vmis: ResourceDef;
  private readonly migrations: ResourceDef;
  private readonly pvcs: ResourceDef;

  constructor(
    private readonly store: ObjectStore,
    public delays: ControllerDelays,
  ) {
    this.nodes = store.def('nodes');
    this.pvcs = store.def('persistentvolumeclaims');
    this.vms = store.def('virtualmachines', 'kubevirt.io');
    this.vmis = store.def('virtualmachineinstances', 'kubevirt.io');
    this.migrations = store.def('virtualmachineinstancemigrations', 'kubevirt.io');
    this.unsubscribe = store.subscribe((e) => this.onEvent(e));
  }

  close(): void {
    this.unsubscribe();
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }

  private later(ms: number, fn: () => void): void {
    const t = setTimeout(() => {
      this.timers.delete(t);
      fn();
    }, ms);
    this.timers.add(t);
  }

  private onEvent(e: StoreEvent): void {
    const { namespace, name } = e.object.metadata;
    if (e.resource === this.vms && e.type !== 'DELETED') this.schedule(`vm/${namespace}/${name}`, () => this.reconcileVm(namespace!, name));
    if (e.resource === this.vmis && e.type === 'DELETED') this.schedule(`vm/${namespace}/${name}`, () => this.reconcileVm(namespace!, name));
    if (e.resource === this.migrations && e.type === 'ADDED') this.schedule(`mig/${namespace}/${name}`, () => this.startMigration(namespace!, name));
    if (e.resource === this.nodes && e.type === 'DELETED') this.schedule(`node/${name}`, () => this.nodeGone(name));
    if (e.resource === this.nodes && e.type === 'MODIFIED') {
      // A node that becomes schedulable may take VMs that are waiting.
      this.schedule('all-vms', () => {
        for (const vm of this.store.list(this.vms)) this.reconcileVm(vm.metadata.namespace!, vm.metadata.name);
      });
    }
  }

  /** Runs `fn` once after the current change settles (coalesced per key). */
  private schedule(key: string, fn: () => void): void {
    if (this.pending.has(key)) return;
    this.pending.add(key);
    this.later(0, () => {
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
    const vmi = this.store.get(this.vmis, namespace, name);
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
      this.later(this.delays.startMs, () => {
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
      this.later(this.delays.stopMs, () => {
        this.stopping.delete(key);
        if (this.store.get(this.vmis, namespace, name)) this.store.delete(this.vmis, namespace, name);
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

  /** Creates the Running VMI of `vm` on `nodeName` (also used to seed VMs that already run). */
  createVmi(vm: K8sObject, nodeName: string): void {
    const { namespace, name } = vm.metadata;
    const spec = structuredClone(vm.spec?.template?.spec ?? {});
    const notMigratable = this.notMigratableReason(spec, namespace!);
    this.store.create(this.vmis, {
      metadata: {
        name,
        namespace,
        labels: { ...(vm.spec?.template?.metadata?.labels ?? {}), 'kubevirt.io/nodeName': nodeName },
        ownerReferences: [{ apiVersion: 'kubevirt.io/v1', kind: 'VirtualMachine', name, uid: vm.metadata.uid, controller: true }],
      },
      spec,
      status: {
        phase: 'Running',
        nodeName,
        conditions: [
          { type: 'Ready', status: 'True' },
          notMigratable
            ? { type: 'LiveMigratable', status: 'False', reason: notMigratable.reason, message: notMigratable.message }
            : { type: 'LiveMigratable', status: 'True' },
        ],
      },
    });
  }

  private pickNode(podSpec: any, exclude: string | null, extraSelector: Record<string, string>): K8sObject | null {
    const load = new Map<string, number>();
    for (const vmi of this.store.list(this.vmis)) load.set(vmi.status?.nodeName, (load.get(vmi.status?.nodeName) ?? 0) + 1);
    const candidates = this.store
      .list(this.nodes)
      .filter((n) => n.metadata.name !== exclude && isNodeReady(n) && !n.spec?.unschedulable && nodeFits(n, podSpec, extraSelector));
    candidates.sort(
      (a, b) =>
        preferenceScore(b, podSpec) - preferenceScore(a, podSpec) ||
        (load.get(a.metadata.name) ?? 0) - (load.get(b.metadata.name) ?? 0) ||
        a.metadata.name.localeCompare(b.metadata.name),
    );
    return candidates[0] ?? null;
  }

  private setMigration(namespace: string, name: string, status: Record<string, unknown>): void {
    this.store.mutate(this.migrations, namespace, name, (m) => {
      m.status = { ...(m.status ?? {}), ...status };
    });
  }

  private fail(namespace: string, name: string, vmiName: string | undefined, reason: string): void {
    this.setMigration(namespace, name, { phase: 'Failed', migrationState: { failed: true, completed: true, failureReason: reason } });
    if (vmiName && this.store.get(this.vmis, namespace, vmiName)) {
      this.store.mutate(this.vmis, namespace, vmiName, (vmi) => {
        vmi.status.migrationState = { ...(vmi.status.migrationState ?? {}), failed: true, completed: true, failureReason: reason };
      });
      this.setVmStatus(namespace, vmiName, { printableStatus: 'Running' });
    }
  }

  private startMigration(namespace: string, name: string): void {
    const mig = this.store.get(this.migrations, namespace, name);
    if (!mig || mig.status?.phase) return;
    const vmiName: string | undefined = mig.spec?.vmiName;
    const vmi = vmiName ? this.store.get(this.vmis, namespace, vmiName) : null;
    if (!vmi || vmi.status?.phase !== 'Running') return this.fail(namespace, name, undefined, `VMI ${namespace}/${vmiName} is not running`);
    const notMigratable = (vmi.status.conditions ?? []).find((c: { type: string; status: string }) => c.type === 'LiveMigratable' && c.status === 'False');
    if (notMigratable) return this.fail(namespace, name, vmiName, `${notMigratable.reason}: ${notMigratable.message ?? 'not live-migratable'}`);
    const source: string = vmi.status.nodeName;
    const target = this.pickNode(vmi.spec, source, mig.spec?.addedNodeSelector ?? {});
    if (!target) return this.fail(namespace, name, vmiName, "target pod unschedulable: no node matches the VMI's constraints");
    const targetNode = target.metadata.name;
    const migrationState = { migrationUid: mig.metadata.uid, sourceNode: source, targetNode, completed: false, failed: false };
    this.setMigration(namespace, name, { phase: 'Running', migrationState });
    this.store.mutate(this.vmis, namespace, vmiName!, (v) => {
      v.status.migrationState = migrationState;
    });
    this.setVmStatus(namespace, vmiName!, { printableStatus: 'Migrating' });
    this.later(this.delays.migrateMs, () => {
      const now = this.store.get(this.vmis, namespace, vmiName!);
      if (!now || now.metadata.uid !== vmi.metadata.uid) return this.fail(namespace, name, undefined, 'the VMI went away during the migration');
      const targetNow = this.store.get(this.nodes, undefined, targetNode);
      if (!targetNow || !isNodeReady(targetNow)) return this.fail(namespace, name, vmiName, `target node ${targetNode} became unavailable`);
      const done = { ...migrationState, completed: true };
      this.store.mutate(this.vmis, namespace, vmiName!, (v) => {
        v.status.nodeName = targetNode;
        v.status.migrationState = done;
        v.metadata.labels = { ...(v.metadata.labels ?? {}), 'kubevirt.io/nodeName': targetNode };
      });
      this.setMigration(namespace, name, { phase: 'Succeeded', migrationState: done });
      this.setVmStatus(namespace, vmiName!, { printableStatus: 'Running' });
    });
  }

  private nodeGone(nodeName: string): void {
    for (const vmi of this.store.list(this.vmis)) {
      if (vmi.status?.nodeName === nodeName) this.store.delete(this.vmis, vmi.metadata.namespace, vmi.metadata.name);
    }
  }
}
