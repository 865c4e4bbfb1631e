/* eslint-disable @typescript-eslint/no-explicit-any -- Kubernetes objects are free-form JSON here, read field by field */
import type { SimClock } from './clock.ts';
import type { PodController } from './pods.ts';
import type { K8sObject, ObjectStore, ResourceDef, StoreEvent } from './store.ts';

export const DRAIN_REQUESTED = 'harvesterhci.io/drain-requested';
export const DRAIN_FORCED = 'harvesterhci.io/drain-forced';
export const MAINTAIN_STATUS = 'harvesterhci.io/maintain-status';
const STRATEGY_LABEL = 'harvesterhci.io/maintain-mode-strategy';
const TRACKED_NODE = 'harvesterhci.io/maintain-mode-strategy-node-name';
const SAVED_RUN_STRATEGY = 'harvesterhci.io/vmRunStrategy';
const SHUTDOWN_CLASS = ['Shutdown', 'ShutdownAndRestartAfterEnable', 'ShutdownAndRestartAfterDisable'];
const RESTART_CLASS = ['ShutdownAndRestartAfterEnable', 'ShutdownAndRestartAfterDisable'];
/** Harvester's `defaultSkipPodLabels` (k8s:K1). */
const SKIP = [
  ['app', 'csi-attacher'],
  ['app', 'csi-provisioner'],
  ['kubevirt.io', 'hotplug-disk'],
];

const hasCpRole = (n: K8sObject) =>
  Object.hasOwn(n.metadata.labels ?? {}, 'node-role.kubernetes.io/control-plane') || Object.hasOwn(n.metadata.labels ?? {}, 'node-role.kubernetes.io/etcd');
const isLiveMigratableFalse = (vmi: K8sObject) => (vmi.status?.conditions ?? []).some((c: any) => c.type === 'LiveMigratable' && c.status === 'False');
const byNamespaceName = (a: K8sObject, b: K8sObject) =>
  `${a.metadata.namespace}/${a.metadata.name}`.localeCompare(`${b.metadata.namespace}/${b.metadata.name}`);

/**
 * Harvester's maintenance controllers (k8s:H2 steps 2–6), reacting to `drain-requested` on a
 * node as `nodedrain_controller.go` and `maintain_controller.go` do: check again (the
 * control-plane count of `DrainPossible`, non-migratable VMs unless forced) and on failure
 * remove the three annotations; track RestartAfter* VMs and halt shutdown-class ones; cordon
 * and evict every pod (launcher pods included, so the eviction strategy decides, k8s:E4);
 * `maintain-status: running`; once no VMI is on the node, start RestartAfterEnable VMs and
 * `completed`. A failed drain is tried again every `retryMs` while the request stands.
 */
export class HarvesterController {
  private readonly nodes: ResourceDef;
  private readonly vms: ResourceDef;
  private readonly vmis: ResourceDef;
  private readonly podsDef: ResourceDef;
  private readonly unsubscribe: () => void;
  private readonly queued = new Set<string>();
  private readonly timers = new Set<() => void>();
  /** What Harvester's controller returned as its error, per node (it records it nowhere in the cluster). */
  readonly lastError = new Map<string, string>();

  constructor(
    private readonly store: ObjectStore,
    private readonly pods: PodController,
    private readonly clock: SimClock,
    private readonly retryMs: number,
  ) {
    this.nodes = store.def('nodes');
    this.vms = store.def('virtualmachines', 'kubevirt.io');
    this.vmis = store.def('virtualmachineinstances', 'kubevirt.io');
    this.podsDef = store.def('pods');
    this.unsubscribe = store.subscribe((e) => this.onEvent(e));
  }

  close(): void {
    this.unsubscribe();
    for (const cancel of this.timers) cancel();
  }

  private onEvent(e: StoreEvent): void {
    if (e.resource === this.nodes && e.type !== 'DELETED') this.queue(e.object.metadata.name);
    if (e.resource === this.vmis || e.resource === this.podsDef) {
      for (const n of this.store.list(this.nodes))
        if (n.metadata.annotations?.[MAINTAIN_STATUS] === 'running' || n.metadata.annotations?.[DRAIN_REQUESTED]) this.queue(n.metadata.name);
    }
  }

  private queue(node: string): void {
    if (this.queued.has(node)) return;
    this.queued.add(node);
    setImmediate(() => {
      this.queued.delete(node);
      this.onNodeChange(node);
    });
  }

  private annotate(node: string, change: Record<string, string | null>): void {
    this.store.mutate(this.nodes, undefined, node, (n) => {
      const a = { ...(n.metadata.annotations ?? {}) };
      for (const [k, v] of Object.entries(change)) {
        if (v === null) delete a[k];
        else a[k] = v;
      }
      n.metadata.annotations = a;
    });
  }

  /** `DrainPossible` (k8s:H8), in Harvester's words. */
  private drainImpossible(node: K8sObject): string | null {
    if (!hasCpRole(node)) return null;
    const set = this.store.list(this.nodes).filter(hasCpRole);
    if (set.length === 1) return 'draining of this node is not possible: single controlplane cluster, cannot place controlplane in maintenance mode';
    if (set.filter((n) => !n.metadata.annotations?.[MAINTAIN_STATUS]).length !== 3)
      return 'draining of this node is not possible: another controlplane is already in maintenance mode, cannot place current node in maintenance mode';
    return null;
  }

  private vmisOn(node: string): K8sObject[] {
    return this.store.list(this.vmis).filter((v) => v.metadata.labels?.['kubevirt.io/nodeName'] === node);
  }

  private onNodeChange(name: string): void {
    const node = this.store.get(this.nodes, undefined, name);
    if (!node) return;
    const a = node.metadata.annotations ?? {};
    if (a[DRAIN_REQUESTED]) this.drain(node, a[DRAIN_FORCED] === 'true');
    else if (a[MAINTAIN_STATUS] === 'running') this.finish(node);
  }

  /** Steps 2–5 (`OnNodeChange`). */
  private drain(node: K8sObject, forced: boolean): void {
    const name = node.metadata.name;
    const impossible = this.drainImpossible(node);
    const vmis = this.vmisOn(name);
    const nonMigratable = vmis.filter(isLiveMigratableFalse);
    if (impossible || (!forced && nonMigratable.length)) {
      this.lastError.set(
        name,
        impossible
          ? `enabling maintenance mode is impossible: ${impossible}`
          : `enabling maintenance mode is impossible. Non-migratable VMs found: ${nonMigratable.map((v) => v.metadata.name).join(',')} cannot be migrated due to NotLiveMigratable. Use 'force drain' to perform a collective shutdown`,
      );
      this.annotate(name, { [DRAIN_REQUESTED]: null, [DRAIN_FORCED]: null, [MAINTAIN_STATUS]: null });
      return;
    }
    // Step 3: track, then halt, sorted by namespace/name.
    for (const vmi of [...vmis].sort(byNamespaceName)) {
      const vm = this.store.get(this.vms, vmi.metadata.namespace, vmi.metadata.name);
      if (!vm) continue;
      const strategy = vm.metadata.labels?.[STRATEGY_LABEL] ?? '';
      if (RESTART_CLASS.includes(strategy) && vm.metadata.annotations?.[TRACKED_NODE] !== name) {
        this.store.mutate(this.vms, vm.metadata.namespace, vm.metadata.name, (v) => {
          v.metadata.annotations = { ...(v.metadata.annotations ?? {}), [TRACKED_NODE]: name, [SAVED_RUN_STRATEGY]: v.spec.runStrategy ?? 'RerunOnFailure' };
        });
      }
      if ((SHUTDOWN_CLASS.includes(strategy) || (forced && isLiveMigratableFalse(vmi))) && vm.spec.runStrategy !== 'Halted') {
        this.store.mutate(this.vms, vm.metadata.namespace, vm.metadata.name, (v) => (v.spec.runStrategy = 'Halted'));
      }
    }
    // Step 4: cordon and drain.
    if (!node.spec?.unschedulable) this.store.mutate(this.nodes, undefined, name, (n) => (n.spec = { ...(n.spec ?? {}), unschedulable: true }));
    const left = this.store
      .list(this.podsDef)
      .filter((p) => p.spec?.nodeName === name && !SKIP.some(([k, v]) => p.metadata.labels?.[k!] === v))
      .filter((p) => !(p.metadata.ownerReferences ?? []).some((r: any) => r.controller && r.kind === 'DaemonSet'))
      .filter((p) => !p.metadata.annotations?.['kubernetes.io/config.mirror'])
      .filter((p) => !['Succeeded', 'Failed'].includes(p.status?.phase))
      .filter((p) => !this.haltedVmPod(p));
    for (const p of left) {
      if (p.metadata.deletionTimestamp) continue;
      try {
        this.pods.evictNow(p.metadata.namespace!, p.metadata.name, 180);
      } catch {
        // A 429 (PDB, KubeVirt's webhook): the drain helper retries; so does the controller.
      }
    }
    if (left.length) {
      this.retryLater(name);
      return;
    }
    // Step 5.
    this.annotate(name, { [MAINTAIN_STATUS]: 'running', [DRAIN_REQUESTED]: null, [DRAIN_FORCED]: null });
  }

  /** A shutdown-class VM's launcher pod: its VM is being halted (k8s:K10, as far as the simulator can tell). */
  private haltedVmPod(pod: K8sObject): boolean {
    const vmName = pod.metadata.labels?.['vm.kubevirt.io/name'];
    if (!vmName) return false;
    return this.store.get(this.vms, pod.metadata.namespace, vmName)?.spec?.runStrategy === 'Halted';
  }

  private retryLater(node: string): void {
    const cancel = this.clock.setTimer(this.retryMs, () => {
      this.timers.delete(cancel);
      this.queue(node);
    });
    this.timers.add(cancel);
  }

  /** Step 6 (`maintain_controller.go`): no VMI left on the node → RestartAfterEnable VMs start, `completed`. */
  private finish(node: K8sObject): void {
    const name = node.metadata.name;
    if (this.vmisOn(name).length) return;
    for (const vm of this.store.list(this.vms).sort(byNamespaceName)) {
      if (vm.metadata.annotations?.[TRACKED_NODE] !== name || vm.metadata.labels?.[STRATEGY_LABEL] !== 'ShutdownAndRestartAfterEnable') continue;
      this.store.mutate(this.vms, vm.metadata.namespace, vm.metadata.name, (v) => {
        v.spec.runStrategy = v.metadata.annotations?.[SAVED_RUN_STRATEGY] ?? 'RerunOnFailure';
        const a = { ...(v.metadata.annotations ?? {}) };
        delete a[TRACKED_NODE];
        delete a[SAVED_RUN_STRATEGY];
        v.metadata.annotations = a;
      });
    }
    this.annotate(name, { [MAINTAIN_STATUS]: 'completed' });
  }
}
