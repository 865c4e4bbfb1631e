/* eslint-disable @typescript-eslint/no-explicit-any -- Kubernetes objects are free-form JSON here, read field by field */
import type { SimClock } from './clock.ts';
import { DOMAIN_ANNOTATION, EVACUATION_ANNOTATION, type KubevirtController } from './kubevirt-controller.ts';
import { ApiError } from './server.ts';
import type { K8sObject, ObjectStore, ResourceDef, StoreEvent } from './store.ts';

const FINAL = ['Succeeded', 'Failed'];
/** KubeVirt's default `nodeDrainTaintKey` (k8s:E3). */
const DEFAULT_DRAIN_TAINT = 'kubevirt.io/drain';
/** `handleMigrationBackoff`: 20 s after a failed evacuation migration, doubling (k8s:C10). */
const EVACUATION_BACKOFF_MS = 20_000;

const isMigratable = (vmi: K8sObject) => (vmi.status?.conditions ?? []).some((c: any) => c.type === 'LiveMigratable' && c.status === 'True');

/**
 * KubeVirt's eviction handling (k8s:E2, k8s:E3): the `virt-launcher-eviction-interceptor`
 * webhook on pods/eviction, and the evacuation controller that migrates VMIs marked by it
 * (or on a node with the drain taint), with KubeVirt's back-off after failures.
 */
export class KubevirtEviction {
  private readonly vmis: ResourceDef;
  private readonly migrations: ResourceDef;
  private readonly nodes: ResourceDef;
  private readonly pods: ResourceDef;
  private readonly unsubscribe: () => void;
  private readonly failures = new Map<string, { count: number; until: number }>();
  private scheduled = false;
  /**
   * The store's resourceVersion when the evacuation controller last synced: every change up
   * to it has been considered, so a migration not created by then for a VMI marked at or
   * before it will not be (until something changes or time moves). For tests of "never
   * migrated", instead of a sleep.
   */
  syncedRv = 0;

  constructor(
    private readonly store: ObjectStore,
    private readonly kubevirt: KubevirtController,
    private readonly clock: SimClock,
  ) {
    this.vmis = store.def('virtualmachineinstances', 'kubevirt.io');
    this.migrations = store.def('virtualmachineinstancemigrations', 'kubevirt.io');
    this.nodes = store.def('nodes');
    this.pods = store.def('pods');
    this.unsubscribe = store.subscribe((e) => this.onEvent(e));
  }

  close(): void {
    this.unsubscribe();
  }

  /** The effective strategy (k8s:E1): the VMI's, else the cluster's, else None. */
  private strategyOf(vmi: K8sObject): string {
    return vmi.spec?.evictionStrategy ?? this.kubevirt.clusterConfig().evictionStrategy ?? 'None';
  }

  /** `VMIMigratableOnEviction`: the strategies the evacuation controller migrates. */
  private migratesOnEviction(vmi: K8sObject): boolean {
    const s = this.strategyOf(vmi);
    return s === 'LiveMigrate' || (s === 'LiveMigrateIfPossible' && isMigratable(vmi));
  }

  /**
   * `pod-eviction-admitter.go` `Admit`: hotplug-disk pods of a live VMI and launcher pods by
   * their VMI's strategy; denials are 429 with KubeVirt's own messages. The VMI is the one the
   * pod's `kubevirt.io/domain` annotation names; completed pods, and VMIs without a strategy
   * (None), pass.
   */
  readonly webhook = (pod: K8sObject): void => {
    if (pod.metadata.labels?.['kubevirt.io'] === 'hotplug-disk') return this.admitHotplugPod(pod);
    if (pod.metadata.labels?.['kubevirt.io'] !== 'virt-launcher' || FINAL.includes(pod.status?.phase)) return;
    const vmiName = pod.metadata.annotations?.[DOMAIN_ANNOTATION];
    if (!vmiName) return;
    const vmi = this.store.get(this.vmis, pod.metadata.namespace, vmiName);
    if (!vmi) throw this.denied(`kubevirt failed getting the vmi: virtualmachineinstances.kubevirt.io "${vmiName}" not found`);
    const strategy = this.strategyOf(vmi);
    const mark = strategy === 'LiveMigrate' || strategy === 'External' || (strategy === 'LiveMigrateIfPossible' && isMigratable(vmi));
    if (strategy === 'LiveMigrate' && !isMigratable(vmi))
      throw this.denied(`VMI ${vmi.metadata.name} is configured with an eviction strategy but is not live-migratable`);
    if (!mark) return;
    const evacuation = `Eviction triggered evacuation of VMI "${vmi.metadata.namespace}/${vmi.metadata.name}"`;
    if (vmi.status?.evacuationNodeName) throw this.denied(`Evacuation in progress: ${evacuation}`);
    if (vmi.status?.nodeName !== pod.spec?.nodeName) throw this.denied('Eviction request for target Pod');
    // markVMI: KubeVirt marks it for evacuation off the pod's node, then denies.
    this.store.mutate(this.vmis, vmi.metadata.namespace, vmi.metadata.name, (v) => (v.status.evacuationNodeName = pod.spec?.nodeName));
    throw this.denied(evacuation);
  };

  /** `admitHotplugPod`: denied while its owner, a live launcher pod, belongs to an existing VMI. */
  private admitHotplugPod(pod: K8sObject): void {
    const ownerName = ((pod.metadata.ownerReferences ?? [])[0] as { name?: string } | undefined)?.name;
    const owner = ownerName ? this.store.get(this.pods, pod.metadata.namespace, ownerName) : null;
    if (!owner || owner.metadata.labels?.['kubevirt.io'] !== 'virt-launcher' || FINAL.includes(owner.status?.phase)) return;
    const vmiName = owner.metadata.annotations?.[DOMAIN_ANNOTATION];
    if (!vmiName || !this.store.get(this.vmis, pod.metadata.namespace, vmiName)) return;
    throw this.denied(`cannot evict hotplug pod: ${pod.metadata.name} associated with running vmi: ${vmiName} in namespace ${pod.metadata.namespace}`);
  }

  private denied(message: string): ApiError {
    return new ApiError(429, 'TooManyRequests', `admission webhook "virt-launcher-eviction-interceptor.kubevirt.io" denied the request: ${message}`);
  }

  private onEvent(e: StoreEvent): void {
    if (
      e.resource === this.migrations &&
      e.type === 'MODIFIED' &&
      e.object.status?.phase === 'Failed' &&
      e.object.metadata.annotations?.[EVACUATION_ANNOTATION]
    ) {
      const key = `${e.object.metadata.namespace}/${e.object.spec?.vmiName}`;
      const count = (this.failures.get(key)?.count ?? 0) + 1;
      this.failures.set(key, { count, until: this.clock.now() + EVACUATION_BACKOFF_MS * 2 ** (count - 1) });
      this.clock.setTimer(EVACUATION_BACKOFF_MS * 2 ** (count - 1), () => this.syncSoon());
    }
    if (e.resource === this.vmis || e.resource === this.nodes || e.resource === this.migrations) this.syncSoon();
  }

  private syncSoon(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.sync();
    });
  }

  /** `evacuation.go` `sync`: marked VMIs, and every migratable-on-eviction VMI of a node with the drain taint. */
  private sync(): void {
    this.syncedRv = this.store.currentRv;
    const taintKey = this.kubevirt.clusterConfig().migrations?.nodeDrainTaintKey ?? DEFAULT_DRAIN_TAINT;
    const drained = new Set(
      this.store
        .list(this.nodes)
        .filter((n) => (n.spec?.taints ?? []).some((t: any) => t.key === taintKey && t.effect === 'NoSchedule'))
        .map((n) => n.metadata.name),
    );
    const migrations = this.store.list(this.migrations);
    for (const vmi of this.store.list(this.vmis)) {
      if (vmi.status?.phase !== 'Running') continue;
      const node = vmi.status?.nodeName;
      const marked = vmi.status?.evacuationNodeName === node;
      if (!(marked || drained.has(node)) || !this.migratesOnEviction(vmi)) continue;
      const busy = migrations.some(
        (m) => m.metadata.namespace === vmi.metadata.namespace && m.spec?.vmiName === vmi.metadata.name && !FINAL.includes(m.status?.phase),
      );
      const backoff = this.failures.get(`${vmi.metadata.namespace}/${vmi.metadata.name}`);
      if (busy || (backoff && backoff.until > this.clock.now())) continue;
      this.kubevirt.createMigration(vmi.metadata.namespace!, vmi.metadata.name, {
        generateName: 'kubevirt-evacuation-',
        annotations: { [EVACUATION_ANNOTATION]: node },
      });
    }
  }
}
