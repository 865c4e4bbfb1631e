import type { Clock } from '../../src/cluster/clock.ts';
import { BackendError } from '../../src/cluster/errors.ts';
import { EventFanout } from '../../src/cluster/event-fanout.ts';
import type { PluginContext } from '../../src/cluster/plugin.ts';
import type { ClusterEvent, ClusterNode, ClusterVm, VmVolume } from '../../src/cluster/types.ts';
import { vmSubject, type KubeApi, type Subject } from './api.ts';
import { Informer } from './informer.ts';
import { RESOURCES, toBackendError, type Resource } from './kube.ts';
import { claimVolumes, toClusterNode, toClusterVm, type KObject } from './mapping.ts';
import type { KubevirtOptions } from './options.ts';

type Log = PluginContext['log'];

/** An action waiting for the watches to show it complete. */
interface Waiter {
  /** Re-checks on every watched change. */
  check(): void;
  /** The watch connection failed (API server unreachable or 5xx): absent = keep waiting through it. */
  watchLost?(error: BackendError): void;
}

const json = (v: unknown) => JSON.stringify(v);

/**
 * List+watch caches of nodes, VMs, VMIs and migrations: they feed the backend's `watch`
 * listeners (only changes of the mapped value are events) and tell actions when they are
 * complete (waiters, re-checked on every watched change: no polling).
 */
export class ClusterCache {
  readonly events: EventFanout<ClusterEvent>;
  readonly nodeInformers: Informer[];
  readonly vmInformers: Informer[];
  readonly vmiInformers: Informer[];
  readonly migrationInformers: Informer[];
  private readonly emittedNodes = new Map<string, string>();
  private readonly emittedVms = new Map<string, string>();
  /** Volumes (with replica health) as last read per VM; replicas are not watched. */
  readonly volumeCache = new Map<string, VmVolume[]>();
  /** The KubeVirt CR's eviction strategy as last read (k8s:E1); the CR is not watched. */
  clusterEvictionStrategy: unknown = null;
  /** The KubeVirt CR's `spec.configuration.migrations` as last read with it (issue 26: KubeVirt's migration bounds). */
  clusterMigrations: Record<string, unknown> = {};
  private readonly waiters = new Set<Waiter>();
  private primed = false;
  closed = false;
  /** Every change of a raw node (taints and conditions too, which map to nothing): the node-down controller's trigger. */
  onNodeTouched: ((key: string) => void) | null = null;

  constructor(
    api: KubeApi,
    options: KubevirtOptions,
    private readonly clock: Clock,
    log: Log,
  ) {
    this.events = new EventFanout({ onListenerError: (e) => log.warn({ err: e }, 'a cluster event listener threw') });
    const make = (r: Resource, namespace: string | undefined, onChange: (key: string, o: KObject | null) => void) =>
      new Informer({
        list: () => api.listRaw(r, namespace),
        path: r.group ? `/apis/${r.group}/${r.version}${namespace ? `/namespaces/${namespace}` : ''}/${r.plural}` : `/api/v1/${r.plural}`,
        watch: api.k.watch,
        clock,
        backoffMs: options.watchBackoffMs,
        backoffMaxMs: options.watchBackoffMaxMs,
        timeoutSeconds: options.watchTimeoutSeconds,
        onChange,
        onError: (e) => this.watchFailed(r, e),
        log,
      });
    const scopes = api.namespaces() ?? [undefined];
    this.nodeInformers = [make(RESOURCES.nodes, undefined, (key) => this.nodeTouched(key))];
    this.vmInformers = scopes.map((ns) => make(RESOURCES.vms, ns, (key) => this.vmTouched(key)));
    this.vmiInformers = scopes.map((ns) => make(RESOURCES.vmis, ns, (key) => this.vmTouched(key)));
    this.migrationInformers = scopes.map((ns) => make(RESOURCES.migrations, ns, () => this.runWaiters()));
  }

  get informers(): Informer[] {
    return [...this.nodeInformers, ...this.vmInformers, ...this.vmiInformers, ...this.migrationInformers];
  }

  start(): Promise<void> {
    for (const i of this.informers) i.start();
    return Promise.all(this.informers.map((i) => i.firstSync)).then(() => undefined);
  }

  /** The current state is what listeners compare against; only later changes are events. */
  prime(): void {
    for (const [key] of this.cached(this.nodeInformers)) this.emittedNodes.set(key, json(this.node(key)));
    for (const [key] of this.cached(this.vmInformers)) this.emittedVms.set(key, json(this.vm(key)));
    this.primed = true;
  }

  *cached(informers: Informer[]): Iterable<[string, KObject]> {
    for (const i of informers) yield* i.objects;
  }

  fromCache(informers: Informer[], key: string): KObject | undefined {
    for (const i of informers) {
      const o = i.objects.get(key);
      if (o) return o;
    }
    return undefined;
  }

  rawNode(key: string): KObject | undefined {
    return this.fromCache(this.nodeInformers, key);
  }

  node(key: string): ClusterNode | null {
    const node = this.rawNode(key);
    return node ? toClusterNode(node) : null;
  }

  vmi(key: string): KObject | undefined {
    return this.fromCache(this.vmiInformers, key);
  }

  migration(key: string): KObject | undefined {
    return this.fromCache(this.migrationInformers, key);
  }

  migrations(): KObject[] {
    return [...this.cached(this.migrationInformers)].map(([, m]) => m);
  }

  vm(key: string): ClusterVm | null {
    const vm = this.fromCache(this.vmInformers, key);
    if (!vm) return null;
    const volumes = this.volumeCache.get(key) ?? claimVolumes(vm).map((v) => ({ name: v.name, replicas: [] }));
    return toClusterVm(vm, this.vmi(key), volumes, this.clusterEvictionStrategy, this.migrations(), this.clusterMigrations);
  }

  /**
   * Emits when the mapped node changed: a Ready transition (NotReady → OFFLINE, Ready again →
   * ACTIVE), a cordon, labels. Heartbeats change nothing mapped and emit nothing. There is no
   * `nodeReattached`: Kubernetes has no re-attach step (README.md, "No re-attach").
   */
  private nodeTouched(key: string): void {
    if (this.primed) {
      const node = this.node(key);
      const before = this.emittedNodes.get(key);
      if (!node) {
        if (before !== undefined) {
          this.emittedNodes.delete(key);
          this.events.emit({ type: 'nodeRemoved', nodeId: key });
        }
      } else if (json(node) !== before) {
        this.emittedNodes.set(key, json(node));
        this.events.emit({ type: 'nodeChanged', node });
      }
    }
    this.onNodeTouched?.(key);
    this.runWaiters();
  }

  private vmTouched(key: string): void {
    if (this.primed) {
      const vm = this.vm(key);
      const before = this.emittedVms.get(key);
      if (!vm) {
        if (before !== undefined) {
          this.emittedVms.delete(key);
          this.volumeCache.delete(key);
          this.events.emit({ type: 'vmRemoved', vmId: key });
        }
      } else if (json(vm) !== before) {
        this.emittedVms.set(key, json(vm));
        this.events.emit({ type: 'vmChanged', vm });
      }
    }
    this.runWaiters();
  }

  runWaiters(): void {
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
   * undefined, or throws; `onTimeout` (default: Transient) after `timeoutMs`. No polling:
   * the watches drive it. Unless `throughOutage`, a failed watch connection rejects it
   * Unavailable (see `watchFailed`).
   */
  waitFor<T>(what: string, timeoutMs: number, check: () => T | undefined, subject?: Subject, throughOutage = false, onTimeout?: () => Error): Promise<T> {
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
        finish(() => reject(onTimeout?.() ?? new BackendError('Transient', `${what}: not done after ${timeoutMs} ms`, subject))),
      );
      waiter.check();
    });
  }

  /**
   * Waits until the watched VM satisfies `done`. A VM deleted meanwhile: `gone` says what
   * that means for the action (a stop is then complete; a migration rejects Transient so
   * that the caller re-reads and finds the VM gone; anything else rejects NotFound).
   */
  waitVm(
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
        const vm = this.vm(id);
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

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const i of this.informers) i.stop();
    this.runWaiters();
    this.events.clear();
  }
}
