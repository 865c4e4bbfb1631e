import type { BackendCapabilities, ClusterBackend, ShardFilter, VmFilter } from '../../src/cluster/backend.ts';
import type { Clock } from '../../src/cluster/clock.ts';
import { BackendError, notFound } from '../../src/cluster/errors.ts';
import { EventFanout } from '../../src/cluster/event-fanout.ts';
import type { PluginContext } from '../../src/cluster/plugin.ts';
import { retry } from '../../src/cluster/retry.ts';
import type {
  ClusterEvent,
  ClusterEventListener,
  ClusterNode,
  ClusterShard,
  ClusterVm,
  RunStrategy,
  SecondaryStatus,
  VmMaintenanceTracking,
  VmVolume,
} from '../../src/cluster/types.ts';
import { compareNatural, compareNodeIds } from '../../src/domain/compare.ts';
import { HOSTNAME_LABEL, MAINTENANCE_STRATEGY_LABEL } from '../../src/domain/labels.ts';
import { matchesPlacement } from '../../src/domain/placement.ts';
import { Informer } from './informer.ts';
import { call, mergePatch, RESOURCES, toBackendError, type KubeClients, type Resource } from './kube.ts';
import {
  MANAGED_BY,
  MANAGED_BY_LABEL,
  START_PREFERENCE_KEY,
  claimVolumes,
  parseVmId,
  replicasByVolume,
  toClusterNode,
  toClusterVm,
  trackingAnnotations,
  trackingOf,
  volumesOf,
  type KObject,
} from './mapping.ts';
import type { KubevirtOptions } from './options.ts';

type Log = PluginContext['log'];
interface ListResult {
  items: KObject[];
  resourceVersion: string;
}

/** An action waiting for the watches to show it complete. */
interface Waiter {
  /** Re-checks on every watched change. */
  check(): void;
  /** The watch connection failed (API server unreachable or 5xx): absent = keep waiting through it. */
  watchLost?(error: BackendError): void;
}

const json = (v: unknown) => JSON.stringify(v);
const vmSubject = (id: string) => ({ kind: 'vm' as const, id });
const nodeSubject = (id: string) => ({ kind: 'node' as const, id });
const rejectShards = () => Promise.reject(new BackendError('Rejected', 'the kubevirt backend serves no tenant shards'));

/**
 * Kubernetes + KubeVirt (+ Longhorn) behind the cluster interface. Reads go to the API
 * server (never stale); list+watch caches of nodes, VMs, VMIs and migrations feed the
 * `watch` listeners and tell actions when they are complete. See README.md beside this file.
 */
export class KubevirtBackend implements ClusterBackend {
  readonly name = 'kubevirt';
  readonly capabilities: BackendCapabilities = { vms: true, shards: false };
  private readonly events: EventFanout<ClusterEvent>;
  private readonly nodeInformers: Informer[];
  private readonly vmInformers: Informer[];
  private readonly vmiInformers: Informer[];
  private readonly migrationInformers: Informer[];
  private readonly emittedNodes = new Map<string, string>();
  private readonly emittedVms = new Map<string, string>();
  /** Volumes (with replica health) as last read per VM; replicas are not watched. */
  private readonly volumeCache = new Map<string, VmVolume[]>();
  private readonly waiters = new Set<Waiter>();
  private primed = false;
  private closed = false;

  constructor(
    private readonly k: KubeClients,
    private readonly options: KubevirtOptions,
    private readonly clock: Clock,
    private readonly log: Log,
  ) {
    this.events = new EventFanout({ onListenerError: (e) => log.warn({ err: e }, 'a cluster event listener threw') });
    const make = (r: Resource, namespace: string | undefined, onChange: (key: string, o: KObject | null) => void) =>
      new Informer({
        list: () => this.listRaw(r, namespace),
        path: r.group ? `/apis/${r.group}/${r.version}${namespace ? `/namespaces/${namespace}` : ''}/${r.plural}` : `/api/v1/${r.plural}`,
        watch: k.watch,
        clock,
        backoffMs: options.watchBackoffMs,
        backoffMaxMs: options.watchBackoffMaxMs,
        timeoutSeconds: options.watchTimeoutSeconds,
        onChange,
        onError: (e) => this.watchFailed(r, e),
        log,
      });
    const scopes = this.namespaces() ?? [undefined];
    this.nodeInformers = [make(RESOURCES.nodes, undefined, (key) => this.nodeTouched(key))];
    this.vmInformers = scopes.map((ns) => make(RESOURCES.vms, ns, (key) => this.vmTouched(key)));
    this.vmiInformers = scopes.map((ns) => make(RESOURCES.vmis, ns, (key) => this.vmTouched(key)));
    this.migrationInformers = scopes.map((ns) => make(RESOURCES.migrations, ns, () => this.runWaiters()));
  }

  private get informers(): Informer[] {
    return [...this.nodeInformers, ...this.vmInformers, ...this.vmiInformers, ...this.migrationInformers];
  }

  /** Starts the watches and waits for their first lists (failing fast on, e.g., missing RBAC). */
  async start(): Promise<void> {
    for (const i of this.informers) i.start();
    try {
      await Promise.all(this.informers.map((i) => i.firstSync));
      // Whether Longhorn is installed is known before the first plan (and re-checked on every VM read).
      await this.longhornReplicas();
    } catch (e) {
      await this.close();
      throw e;
    }
    // The current state is what listeners compare against; only later changes are events.
    await this.listVms().catch((e: unknown) => this.log.warn({ err: e }, 'kubevirt: reading volumes at start failed'));
    for (const [key] of this.cached(this.nodeInformers)) this.emittedNodes.set(key, json(this.nodeFromCache(key)));
    for (const [key] of this.cached(this.vmInformers)) this.emittedVms.set(key, json(this.vmFromCache(key)));
    this.primed = true;
  }

  // ------------------------------------------------------------------ plumbing

  private namespaces(): string[] | null {
    return this.options.namespaces.length ? this.options.namespaces : null;
  }

  private inScope(namespace: string): boolean {
    const ns = this.namespaces();
    return ns === null || ns.includes(namespace);
  }

  private async listRaw(r: Resource, namespace: string | undefined, labelSelector?: string): Promise<ListResult> {
    const result = (await call('list', r, () => {
      if (r === RESOURCES.nodes) return this.k.core.listNode({ labelSelector }) as Promise<unknown>;
      if (r === RESOURCES.pvcs) {
        return (
          namespace ? this.k.core.listNamespacedPersistentVolumeClaim({ namespace }) : this.k.core.listPersistentVolumeClaimForAllNamespaces()
        ) as Promise<unknown>;
      }
      const base = { group: r.group, version: r.version, plural: r.plural, ...(labelSelector && { labelSelector }) };
      return namespace ? this.k.custom.listNamespacedCustomObject({ ...base, namespace }) : this.k.custom.listClusterCustomObject(base);
    })) as { items?: KObject[]; metadata?: { resourceVersion?: string } };
    return { items: result.items ?? [], resourceVersion: result.metadata?.resourceVersion ?? '' };
  }

  /** Lists `r` in the managed namespaces (or `namespace` alone). */
  private async listScoped(r: Resource, namespace?: string, labelSelector?: string): Promise<KObject[]> {
    if (namespace !== undefined) return this.inScope(namespace) ? (await this.listRaw(r, namespace, labelSelector)).items : [];
    const scopes = this.namespaces() ?? [undefined];
    const lists = await Promise.all(scopes.map((ns) => this.listRaw(r, ns, labelSelector)));
    return lists.flatMap((l) => l.items);
  }

  private async getCustom(r: Resource, namespace: string, name: string, subject: { kind: 'node' | 'vm'; id: string }): Promise<KObject | null> {
    try {
      return (await call(
        'get',
        r,
        () => this.k.custom.getNamespacedCustomObject({ group: r.group, version: r.version, plural: r.plural, namespace, name }),
        subject,
      )) as KObject;
    } catch (e) {
      if (e instanceof BackendError && e.code === 'NotFound') return null;
      throw e;
    }
  }

  private async patchCustom(r: Resource, namespace: string, name: string, body: unknown, subject: { kind: 'node' | 'vm'; id: string }): Promise<KObject> {
    return (await call(
      'patch',
      r,
      () => this.k.custom.patchNamespacedCustomObject({ group: r.group, version: r.version, plural: r.plural, namespace, name, body }, mergePatch),
      subject,
    )) as KObject;
  }

  private *cached(informers: Informer[]): Iterable<[string, KObject]> {
    for (const i of informers) yield* i.objects;
  }

  private fromCache(informers: Informer[], key: string): KObject | undefined {
    for (const i of informers) {
      const o = i.objects.get(key);
      if (o) return o;
    }
    return undefined;
  }

  private nodeFromCache(key: string): ClusterNode | null {
    const node = this.fromCache(this.nodeInformers, key);
    return node ? toClusterNode(node) : null;
  }

  private vmFromCache(key: string): ClusterVm | null {
    const vm = this.fromCache(this.vmInformers, key);
    if (!vm) return null;
    const volumes = this.volumeCache.get(key) ?? claimVolumes(vm).map((v) => ({ name: v.name, replicas: [] }));
    return toClusterVm(vm, this.fromCache(this.vmiInformers, key), volumes);
  }

  private emit(event: ClusterEvent): void {
    this.events.emit(event);
  }

  /**
   * Emits when the mapped node changed: a Ready transition (NotReady → OFFLINE, Ready again →
   * ACTIVE), a cordon, labels. Heartbeats change nothing mapped and emit nothing. There is no
   * `nodeReattached`: Kubernetes has no re-attach step (README.md, "No re-attach").
   */
  private nodeTouched(key: string): void {
    if (this.primed) {
      const node = this.nodeFromCache(key);
      const before = this.emittedNodes.get(key);
      if (!node) {
        if (before !== undefined) {
          this.emittedNodes.delete(key);
          this.emit({ type: 'nodeRemoved', nodeId: key });
        }
      } else if (json(node) !== before) {
        this.emittedNodes.set(key, json(node));
        this.emit({ type: 'nodeChanged', node });
      }
    }
    this.runWaiters();
  }

  private vmTouched(key: string): void {
    if (this.primed) {
      const vm = this.vmFromCache(key);
      const before = this.emittedVms.get(key);
      if (!vm) {
        if (before !== undefined) {
          this.emittedVms.delete(key);
          this.volumeCache.delete(key);
          this.emit({ type: 'vmRemoved', vmId: key });
        }
      } else if (json(vm) !== before) {
        this.emittedVms.set(key, json(vm));
        this.emit({ type: 'vmChanged', vm });
      }
    }
    this.runWaiters();
  }

  private runWaiters(): void {
    for (const w of [...this.waiters]) w.check();
  }

  /**
   * A watch could not be (re)established. Actions waiting for the watches cannot see their
   * outcome until it is back, so those that may be re-issued (idempotent, the engine retries
   * Unavailable) reject Unavailable now instead of waiting silently: the operation then says
   * it is retrying. 403/401 (RBAC) keep waiting (to their timeout); the watch logs them.
   */
  private watchFailed(r: Resource, e: unknown): void {
    const error = toBackendError(e, 'watch', r);
    if (error.code !== 'Unavailable') return;
    for (const w of [...this.waiters]) w.watchLost?.(error);
  }

  /**
   * Waits until `check` (run on every watched change) returns a value other than
   * undefined, or throws; Transient after `timeoutMs`. No polling: the watches drive it.
   * Unless `throughOutage`, a failed watch connection rejects it Unavailable (see `watchFailed`).
   */
  private waitFor<T>(
    what: string,
    timeoutMs: number,
    check: () => T | undefined,
    subject?: { kind: 'node' | 'vm'; id: string },
    throughOutage = false,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let cancelTimer = () => {};
      const finish = (fn: () => void) => {
        this.waiters.delete(waiter);
        cancelTimer();
        fn();
      };
      const waiter: Waiter = {
        check: () => {
          if (this.closed) return finish(() => reject(new BackendError('Unavailable', `${what}: the backend was closed`, subject)));
          try {
            const value = check();
            if (value !== undefined) finish(() => resolve(value));
          } catch (e) {
            finish(() => reject(e));
          }
        },
        ...(!throughOutage && {
          watchLost: (error: BackendError) =>
            finish(() =>
              reject(
                new BackendError(
                  'Unavailable',
                  `${what}: lost the watch on the Kubernetes API server, the outcome is not known yet (${error.message})`,
                  subject,
                ),
              ),
            ),
        }),
      };
      this.waiters.add(waiter);
      cancelTimer = this.clock.setTimer(timeoutMs, () =>
        finish(() => reject(new BackendError('Transient', `${what}: not done after ${timeoutMs} ms`, subject))),
      );
      waiter.check();
    });
  }

  /**
   * Waits until the watched VM satisfies `done`. A VM deleted meanwhile: `gone` says what
   * that means for the action (a stop is then complete; a migration rejects Transient so
   * that the caller re-reads and finds the VM gone; anything else rejects NotFound).
   */
  private waitVm(
    id: string,
    what: string,
    timeoutMs: number,
    done: (vm: ClusterVm) => boolean,
    gone: 'resolve' | 'transient' | 'notFound' = 'notFound',
    throughOutage = false,
  ): Promise<ClusterVm | null> {
    return this.waitFor<ClusterVm | null>(
      what,
      timeoutMs,
      () => {
        const vm = this.vmFromCache(id);
        if (!vm) {
          if (gone === 'resolve') return null;
          throw new BackendError(gone === 'transient' ? 'Transient' : 'NotFound', `${what}: VM ${id} was deleted`, vmSubject(id));
        }
        return done(vm) ? vm : undefined;
      },
      vmSubject(id),
      throughOutage,
    );
  }

  // ------------------------------------------------------------------ volumes

  /**
   * Longhorn's replicas, or null when `replicas.longhorn.io` is not served (404: Longhorn is
   * not installed). Every call records the answer in `capabilities.replicaHealth`, so the
   * plan's "LastHealthyReplica (vm:N1) not checked" note follows Longhorn being installed or
   * removed; other errors (5xx, 403) propagate and leave the capability as it was.
   */
  private async longhornReplicas(): Promise<KObject[] | null> {
    let replicas: KObject[] | null;
    try {
      replicas = (await this.listRaw(RESOURCES.replicas, this.options.longhornNamespace)).items;
    } catch (e) {
      if (!(e instanceof BackendError && e.code === 'NotFound')) throw e;
      replicas = null;
    }
    const present = replicas !== null;
    if (this.capabilities.replicaHealth !== present) {
      if (present) this.log.info({}, 'kubevirt: replicas.longhorn.io found; the LastHealthyReplica rule is checked');
      else this.log.info({}, 'kubevirt: replicas.longhorn.io not found; the LastHealthyReplica rule is skipped (volumes report no replicas; plans say so)');
    }
    this.capabilities.replicaHealth = present;
    return replicas;
  }

  private async volumeSource(
    namespace?: string,
  ): Promise<{ pvc: (ns: string, claim: string) => string | undefined; replicas: ReturnType<typeof replicasByVolume> | null }> {
    const replicas = await this.longhornReplicas();
    if (replicas === null) return { pvc: () => undefined, replicas: null };
    const pvcs = await this.listScoped(RESOURCES.pvcs, namespace);
    const byClaim = new Map(pvcs.map((p) => [`${p.metadata?.namespace}/${p.metadata?.name}`, p.spec?.volumeName as string | undefined]));
    return { pvc: (ns, claim) => byClaim.get(`${ns}/${claim}`), replicas: replicasByVolume(replicas) };
  }

  private assemble(vms: KObject[], vmis: KObject[], source: Awaited<ReturnType<KubevirtBackend['volumeSource']>>): ClusterVm[] {
    const vmiByKey = new Map(vmis.map((v) => [`${v.metadata?.namespace}/${v.metadata?.name}`, v]));
    return vms
      .map((vm) => {
        const key = `${vm.metadata?.namespace}/${vm.metadata?.name}`;
        const volumes = volumesOf(vm, source.pvc, source.replicas);
        this.volumeCache.set(key, volumes);
        return toClusterVm(vm, vmiByKey.get(key), volumes);
      })
      .sort((a, b) => compareNatural(a.id, b.id));
  }

  // ------------------------------------------------------------------ nodes

  async listNodes(): Promise<ClusterNode[]> {
    const { items } = await this.listRaw(RESOURCES.nodes, undefined);
    return items.map(toClusterNode).sort((a, b) => compareNodeIds(a.id, b.id));
  }

  private async readNode(id: string): Promise<KObject | null> {
    try {
      return (await call('get', RESOURCES.nodes, () => this.k.core.readNode({ name: id }), nodeSubject(id))) as KObject;
    } catch (e) {
      if (e instanceof BackendError && e.code === 'NotFound') return null;
      throw e;
    }
  }

  async getNode(id: string): Promise<ClusterNode | null> {
    const node = await this.readNode(id);
    return node ? toClusterNode(node) : null;
  }

  async getNodes(ids: readonly string[]): Promise<(ClusterNode | null)[]> {
    if (ids.length === 0) return [];
    const byId = new Map((await this.listNodes()).map((n) => [n.id, n]));
    return ids.map((id) => (byId.has(id) ? structuredClone(byId.get(id)!) : null));
  }

  cordonNode(id: string): Promise<void> {
    return this.setCordoned(id, true);
  }

  uncordonNode(id: string): Promise<void> {
    return this.setCordoned(id, false);
  }

  private async setCordoned(id: string, cordoned: boolean): Promise<void> {
    const raw = await this.readNode(id);
    if (!raw) throw notFound('node', id);
    const node = toClusterNode(raw);
    if (node.cordoned === cordoned) return;
    if (node.availability === 'OFFLINE') throw new BackendError('Unavailable', `node ${id} is not Ready`, nodeSubject(id));
    await call(
      'patch',
      RESOURCES.nodes,
      () => this.k.core.patchNode({ name: id, body: { spec: { unschedulable: cordoned ? true : null } } }, mergePatch),
      nodeSubject(id),
    );
    await this.waitFor(
      `${cordoned ? 'cordon' : 'uncordon'} node ${id}`,
      this.options.vmActionTimeoutMs,
      () => (this.nodeFromCache(id)?.cordoned === cordoned ? true : undefined),
      nodeSubject(id),
    );
  }

  // ------------------------------------------------------------------ VMs: reads

  async listVms(filter: VmFilter = {}): Promise<ClusterVm[]> {
    const selector =
      filter.labels && Object.keys(filter.labels).length
        ? Object.entries(filter.labels)
            .map(([k, v]) => `${k}=${v}`)
            .join(',')
        : undefined;
    const [vms, vmis, source] = await Promise.all([
      this.listScoped(RESOURCES.vms, filter.namespace, selector),
      this.listScoped(RESOURCES.vmis, filter.namespace),
      this.volumeSource(filter.namespace),
    ]);
    return this.assemble(vms, vmis, source).filter((vm) => filter.nodeId === undefined || vm.nodeId === filter.nodeId);
  }

  private async readVm(id: string): Promise<{ vm: KObject; vmi: KObject | null } | null> {
    const parsed = parseVmId(id);
    if (!parsed || !this.inScope(parsed.namespace)) return null;
    const [vm, vmi] = await Promise.all([
      this.getCustom(RESOURCES.vms, parsed.namespace, parsed.name, vmSubject(id)),
      this.getCustom(RESOURCES.vmis, parsed.namespace, parsed.name, vmSubject(id)),
    ]);
    return vm ? { vm, vmi } : null;
  }

  async getVm(id: string): Promise<ClusterVm | null> {
    const found = await this.readVm(id);
    if (!found) return null;
    const parsed = parseVmId(id)!;
    return this.assemble([found.vm], found.vmi ? [found.vmi] : [], await this.volumeSource(parsed.namespace))[0]!;
  }

  async getVms(ids: readonly string[]): Promise<(ClusterVm | null)[]> {
    if (ids.length === 0) return [];
    const byId = new Map((await this.listVms()).map((v) => [v.id, v]));
    return ids.map((id) => (byId.has(id) ? structuredClone(byId.get(id)!) : null));
  }

  /** The VM as it is now (live read); NotFound when it does not exist. */
  private async requireVm(id: string): Promise<{ raw: KObject; vm: ClusterVm }> {
    const found = await this.readVm(id);
    if (!found) throw notFound('vm', id);
    return { raw: found.vm, vm: toClusterVm(found.vm, found.vmi, []) };
  }

  private async requireOnline(nodeId: string, what: string, subject: { kind: 'node' | 'vm'; id: string }): Promise<ClusterNode | null> {
    const node = await this.getNode(nodeId);
    if (node && node.availability === 'OFFLINE') throw new BackendError('Unavailable', `${what}: node ${nodeId} is not Ready`, subject);
    return node;
  }

  // ------------------------------------------------------------------ VMs: actions

  /**
   * Read-modify-write of a VM with optimistic concurrency: the merge patch carries the
   * resourceVersion it was computed from; a 409 Conflict re-reads and tries again.
   */
  private async updateVm(id: string, change: (vm: KObject) => Record<string, unknown> | null): Promise<void> {
    const { namespace, name } = parseVmId(id)!;
    await retry(
      async () => {
        const vm = await this.getCustom(RESOURCES.vms, namespace, name, vmSubject(id));
        if (!vm) throw notFound('vm', id);
        const patch = change(vm);
        if (!patch) return;
        const metadata = { ...((patch['metadata'] as object | undefined) ?? {}), resourceVersion: vm.metadata?.resourceVersion };
        await this.patchCustom(RESOURCES.vms, namespace, name, { ...patch, metadata }, vmSubject(id));
      },
      {
        clock: this.clock,
        maxAttempts: this.options.conflictRetries + 1,
        // The re-read is the remedy: nothing to wait for.
        delayMs: () => 0,
        // Only the patch can meet 409: a read never does.
        retryable: (e) => e instanceof BackendError && e.code === 'Conflict',
        onRetry: (_e, { attempt }) => this.log.info({ vm: id, attempt: attempt - 1 }, `kubevirt: VM ${id} changed under us (409); retrying`),
      },
    );
  }

  /** The run-strategy part of a patch (the deprecated `spec.running` is dropped: they exclude each other). */
  private runStrategyPatch(vm: KObject, runStrategy: RunStrategy): Record<string, unknown> {
    return { runStrategy, ...(vm.spec?.running !== undefined && { running: null }) };
  }

  async stopVm(id: string): Promise<void> {
    const { vm } = await this.requireVm(id);
    if (vm.runStrategy === 'Halted' && vm.status === 'Stopped') return;
    if (vm.nodeId) await this.requireOnline(vm.nodeId, `stop VM ${id}`, vmSubject(id));
    if (vm.runStrategy !== 'Halted') {
      await this.updateVm(id, (raw) => ({ spec: this.runStrategyPatch(raw, 'Halted') }));
    }
    await this.waitVm(id, `stop VM ${id}`, this.options.vmActionTimeoutMs, (v) => v.runStrategy === 'Halted' && v.status === 'Stopped', 'resolve');
  }

  async startVm(id: string, options: { runStrategy: RunStrategy; nodeId?: string }): Promise<void> {
    const { runStrategy } = options;
    if (runStrategy === 'Halted') throw new BackendError('Rejected', `startVm: run strategy Halted does not start VM ${id}`, vmSubject(id));
    const { vm } = await this.requireVm(id);
    const running = (v: ClusterVm) => v.runStrategy === runStrategy && v.status === 'Running' && v.nodeId !== null;
    if (vm.runStrategy !== 'Halted') {
      // Already running (or starting): only the run strategy may need to change.
      if (vm.runStrategy !== runStrategy)
        await this.updateVm(id, (raw) => (raw.spec?.runStrategy === runStrategy ? null : { spec: this.runStrategyPatch(raw, runStrategy) }));
      if (!running(vm)) await this.waitVm(id, `start VM ${id}`, this.options.vmActionTimeoutMs, running);
      return;
    }
    if (vm.status !== 'Stopped') await this.waitVm(id, `start VM ${id} (waiting for its stop)`, this.options.vmActionTimeoutMs, (v) => v.status === 'Stopped');
    // KubeVirt has no "start on node X": a preferred node-affinity term steers the scheduler for this start.
    let preferHost: string | null = null;
    if (options.nodeId) {
      const node = await this.readNode(options.nodeId);
      if (node && toClusterNode(node).availability === 'ACTIVE' && !toClusterNode(node).cordoned)
        preferHost = node.metadata?.labels?.[HOSTNAME_LABEL] ?? options.nodeId;
    }
    await this.updateVm(id, (raw) => ({
      ...(preferHost && { metadata: { annotations: { [START_PREFERENCE_KEY]: preferHost } } }),
      spec: { ...this.runStrategyPatch(raw, runStrategy), ...(preferHost && { template: { spec: { affinity: withPreference(raw, preferHost) } } }) },
    }));
    try {
      await this.waitVm(id, `start VM ${id}`, this.options.vmActionTimeoutMs, running);
    } finally {
      if (preferHost)
        await this.dropStartPreference(id).catch((e: unknown) =>
          this.log.warn({ err: e, vm: id }, `kubevirt: removing the start preference of VM ${id} failed`),
        );
    }
  }

  private async dropStartPreference(id: string): Promise<void> {
    await this.updateVm(id, (raw) => {
      const host = raw.metadata?.annotations?.[START_PREFERENCE_KEY];
      if (!host) return null;
      return { metadata: { annotations: { [START_PREFERENCE_KEY]: null } }, spec: { template: { spec: { affinity: withoutPreference(raw, host) } } } };
    });
  }

  async migrateVm(id: string, options: { fromNodeId: string; toNodeId?: string }): Promise<void> {
    const { fromNodeId, toNodeId } = options;
    const { vm } = await this.requireVm(id);
    if (vm.nodeId !== fromNodeId || vm.status === 'Stopped') return;
    await this.requireOnline(fromNodeId, `migrate VM ${id}`, vmSubject(id));
    if (!vm.liveMigratable) throw new BackendError('Rejected', `VM ${id} cannot be live-migrated: ${vm.liveMigratableReason}`, vmSubject(id));
    let addedNodeSelector: Record<string, string> | undefined;
    if (toNodeId !== undefined) {
      const target = await this.readNode(toNodeId);
      if (!target) throw new BackendError('Rejected', `migrate VM ${id}: target node ${toNodeId} does not exist`, vmSubject(id));
      const t = toClusterNode(target);
      if (t.availability === 'OFFLINE') throw new BackendError('Unavailable', `migrate VM ${id}: target node ${toNodeId} is not Ready`, vmSubject(id));
      if (t.cordoned) throw new BackendError('Conflict', `migrate VM ${id}: target node ${toNodeId} is cordoned`, vmSubject(id));
      if (!matchesPlacement(t.labels, vm))
        throw new BackendError('Rejected', `migrate VM ${id}: target node ${toNodeId} does not satisfy the VM's node selector/affinity`, vmSubject(id));
      addedNodeSelector = { [HOSTNAME_LABEL]: t.labels[HOSTNAME_LABEL] ?? toNodeId };
    }
    const namespace = vm.namespace;
    // Join a migration already in flight for this VMI rather than start a second one.
    const inFlight = [...this.cached(this.migrationInformers)]
      .map(([, m]) => m)
      .find((m) => m.metadata?.namespace === namespace && m.spec?.vmiName === vm.name && !['Succeeded', 'Failed'].includes(m.status?.phase));
    let migrationName = inFlight?.metadata?.name;
    if (!migrationName) {
      const body = {
        apiVersion: 'kubevirt.io/v1',
        kind: 'VirtualMachineInstanceMigration',
        metadata: { generateName: `${vm.name}-lockkeeper-`, namespace, labels: { [MANAGED_BY_LABEL]: MANAGED_BY } },
        spec: { vmiName: vm.name, ...(addedNodeSelector && { addedNodeSelector }) },
      };
      const created = (await call(
        'create',
        RESOURCES.migrations,
        () => this.k.custom.createNamespacedCustomObject({ group: 'kubevirt.io', version: 'v1', plural: RESOURCES.migrations.plural, namespace, body }),
        vmSubject(id),
      )) as KObject;
      migrationName = created.metadata!.name!;
      this.log.info(
        { vm: id, migration: migrationName, from: fromNodeId, to: toNodeId },
        `kubevirt: created VirtualMachineInstanceMigration ${namespace}/${migrationName}`,
      );
    }
    const key = `${namespace}/${migrationName}`;
    const what = `migrate VM ${id}`;
    const outcome = await this.waitFor(
      what,
      this.options.migrationTimeoutMs,
      () => {
        if (!this.vmFromCache(id)) throw new BackendError('Transient', `${what}: VM ${id} was deleted during the migration`, vmSubject(id));
        const m = this.fromCache(this.migrationInformers, key);
        if (m?.status?.phase === 'Failed')
          return {
            failed: String(
              m.status?.migrationState?.failureReason ?? this.fromCache(this.vmiInformers, id)?.status?.migrationState?.failureReason ?? 'unknown reason',
            ),
          };
        if (m?.status?.phase === 'Succeeded') return { failed: null };
        return undefined;
      },
      vmSubject(id),
      // The migration goes on in the cluster without us: its wait outlives an outage (up to
      // migrationTimeoutMs) and resumes from the watch, so a migration is not failed by one.
      true,
    );
    if (outcome.failed !== null) {
      const code = /NotLiveMigratable/.test(outcome.failed) ? 'Rejected' : 'Transient';
      throw new BackendError(code, `${what}: migration ${key} failed: ${outcome.failed}`, vmSubject(id));
    }
    await this.waitVm(id, what, this.options.migrationTimeoutMs, (v) => v.status === 'Running' && v.nodeId !== fromNodeId, 'transient', true);
  }

  async setVmMaintenanceStrategyLabel(id: string, value: string | null): Promise<void> {
    const { vm } = await this.requireVm(id);
    if (vm.maintenanceStrategyLabel === value) return;
    const { namespace, name } = parseVmId(id)!;
    await this.patchCustom(RESOURCES.vms, namespace, name, { metadata: { labels: { [MAINTENANCE_STRATEGY_LABEL]: value } } }, vmSubject(id));
    await this.waitVm(id, `label VM ${id}`, this.options.vmActionTimeoutMs, (v) => v.maintenanceStrategyLabel === value);
  }

  async setVmTracking(id: string, tracking: VmMaintenanceTracking | null): Promise<void> {
    const { raw } = await this.requireVm(id);
    if (json(trackingOf(raw)) === json(tracking && { nodeName: tracking.nodeName, strategy: tracking.strategy, savedRunStrategy: tracking.savedRunStrategy }))
      return;
    const { namespace, name } = parseVmId(id)!;
    await this.patchCustom(RESOURCES.vms, namespace, name, { metadata: { annotations: trackingAnnotations(tracking) } }, vmSubject(id));
    // Waits through an outage: the write is done, and tracking is recorded as part of a stop, not retried on its own.
    await this.waitVm(
      id,
      `record tracking on VM ${id}`,
      this.options.vmActionTimeoutMs,
      (v) => json(v.tracking) === json(tracking && { nodeName: tracking.nodeName, strategy: tracking.strategy, savedRunStrategy: tracking.savedRunStrategy }),
      'notFound',
      true,
    );
  }

  // ------------------------------------------------------------------ shards: not served

  listShards(_filter?: ShardFilter): Promise<ClusterShard[]> {
    return rejectShards();
  }
  getShard(_id: string): Promise<ClusterShard | null> {
    return rejectShards();
  }
  getShards(_ids: readonly string[]): Promise<(ClusterShard | null)[]> {
    return rejectShards();
  }
  getSecondaryStatus(_shardId: string, _nodeId: string): Promise<SecondaryStatus> {
    return rejectShards();
  }
  cutOverShard(_id: string, _options: { fromNodeId: string; toNodeId: string }): Promise<void> {
    return rejectShards();
  }

  // ------------------------------------------------------------------ events, lifecycle

  watch(listener: ClusterEventListener): () => void {
    return this.events.add(listener);
  }

  /**
   * Watch statistics, for tests of reconnects. `seenResourceVersion` is the oldest of the
   * informers' newest resourceVersions: every change the API server made up to it has been
   * applied and reported (events in a watch arrive in order, and bookmarks move it on).
   */
  get watchStats(): { watchesStarted: number; relists: number; seenResourceVersion: number } {
    return {
      watchesStarted: this.informers.reduce((n, i) => n + i.watchesStarted, 0),
      relists: this.informers.reduce((n, i) => n + i.relists, 0),
      seenResourceVersion: Math.min(...this.informers.map((i) => i.seenResourceVersion)),
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const i of this.informers) i.stop();
    this.runWaiters();
    this.events.clear();
  }
}

const PREFERRED = 'preferredDuringSchedulingIgnoredDuringExecution';

function preferenceTerm(host: string) {
  return { weight: 100, preference: { matchExpressions: [{ key: HOSTNAME_LABEL, operator: 'In', values: [host] }] } };
}

/** The VM template's affinity with a preferred term for `host` added (merge-patch value). */
function withPreference(vm: KObject, host: string): unknown {
  const list: unknown[] = vm.spec?.template?.spec?.affinity?.nodeAffinity?.[PREFERRED] ?? [];
  const term = preferenceTerm(host);
  const rest = list.filter((t) => json(t) !== json(term));
  return { nodeAffinity: { [PREFERRED]: [...rest, term] } };
}

/** The merge-patch value that removes the term again, and any affinity left empty by it. */
function withoutPreference(vm: KObject, host: string): unknown {
  const affinity = vm.spec?.template?.spec?.affinity ?? {};
  const list: unknown[] = affinity.nodeAffinity?.[PREFERRED] ?? [];
  const rest = list.filter((t) => json(t) !== json(preferenceTerm(host)));
  const nodeAffinityKeys = Object.keys(affinity.nodeAffinity ?? {}).filter((k) => k !== PREFERRED);
  const otherAffinity = Object.keys(affinity).filter((k) => k !== 'nodeAffinity');
  if (rest.length === 0 && nodeAffinityKeys.length === 0 && otherAffinity.length === 0) return null;
  if (rest.length === 0 && nodeAffinityKeys.length === 0) return { nodeAffinity: null };
  return { nodeAffinity: { [PREFERRED]: rest.length ? rest : null } };
}
