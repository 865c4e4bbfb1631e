import type { ClusterBackend, CutOverResult, ShardFilter, VmFilter } from '../../src/cluster/backend.ts';
import type { Clock } from '../../src/cluster/clock.ts';
import { BackendError, notFound } from '../../src/cluster/errors.ts';
import { EventFanout } from '../../src/cluster/event-fanout.ts';
import type { PluginStore } from '../../src/cluster/plugin-store.ts';
import type { PluginContext } from '../../src/cluster/plugin.ts';
import type { BackendSnapshot } from '../../src/cluster/rehearsal.ts';
import type {
  CutOverOptions,
  FailoverControl,
  PlaceOptions,
  NodeRegistry,
  PlacementControl,
  ShardDetails,
  ShardPlacement,
} from '../../src/cluster/shard-control.ts';
import type { ClusterEvent, ClusterEventListener, ClusterNode, ClusterShard, ClusterVm, NodeAvailability, SecondaryStatus } from '../../src/cluster/types.ts';
import { checkSecondaryProgress } from './checks.ts';
import { ComputeHook } from './compute-hook.ts';
import { discover, importStateFile, seedNodes, type DiscoveryReport } from './discovery.ts';
import { Heartbeater } from './heartbeater.ts';
import { PageserverHttp } from './http-client.ts';
import { IntentStore } from './intent-store.ts';
import { describeObserved, type ShardIntent } from './intent.ts';
import { shardUpdateOf, type ReconcileDeps } from './location-calls.ts';
import { CALLS, DRAIN_FILL_WARMUP } from './neon-retry.ts';
import { NodeAvailabilityKeeper } from './node-availability.ts';
import { NodeSet, toClusterNode, type NodeRuntime } from './nodes.ts';
import { ObservedState } from './observed.ts';
import type { PageserverOptions } from './options.ts';
import { Reconciler } from './reconciler.ts';
import { Registration, registrationOf, resolveWithDns, type ResolveHost } from './registration.ts';
import { ShardMoves } from './shard-moves.ts';
import { readSnapshot } from './snapshot.ts';
import { Upcalls } from './upcalls.ts';
import type { SecondaryProgress } from './wire.ts';
import { normaliseTenantConfig, type TenantConfig } from '../../src/domain/storage/tenant-config.ts';

/** Neon's `SHORT_RECONCILE_TIMEOUT`: how long a tenant config change waits for its reconciles. */
const SHORT_RECONCILE_TIMEOUT_MS = 5_000;

export interface PageserverBackendConfig extends Omit<PageserverOptions, 'stateFile' | 'upcall'> {
  /** Absolute path of a legacy state file to import once, if any. */
  stateFile: string | undefined;
  store: PluginStore;
  clock: Clock;
  log: { info(obj: object, msg?: string): void; warn(obj: object, msg?: string): void };
  resolveHost?: ResolveHost;
  onListenerError?: (error: unknown) => void;
  /**
   * ha:L8: whether this replica leads. Heartbeats, background reconciles, compute
   * notifications and every request that changes a pageserver happen only then; the first
   * heartbeat round as leader reloads the intent and the persisted heartbeats. Absent: always.
   */
  mayAct?: () => boolean;
  /** ha:L3, ha:L9: the authority of every request to a pageserver or the compute hook (`PluginContext.authority`). Absent: not named. */
  authority?: PluginContext['authority'];
}

type NodeEvent = Extract<ClusterEvent, { type: 'nodeReattached' | 'nodeLost' }>;

const byTenantAndNumber = (a: ShardIntent, b: ShardIntent) => (a.tenantId < b.tenantId ? -1 : a.tenantId > b.tenantId ? 1 : a.shardNumber - b.shardNumber);

/**
 * Lockkeeper as the storage controller of a set of Neon pageservers, through their HTTP
 * API (docs/pageserver.md): a thin facade over the modules that split Neon's
 * controller — the intent store (`intent-store.ts`, in the gateway's database), observed
 * state, the heartbeater and node availability, the reconciler (live migration, direct
 * attach, background pass), registration, upcalls and the compute hook. Shards only.
 */
export class PageserverBackend implements ClusterBackend {
  readonly name = 'pageserver';
  readonly capabilities = { vms: false, shards: true };
  readonly http: PageserverHttp;
  readonly hook: ComputeHook;
  readonly nodes = new NodeSet();
  readonly observed = new ObservedState();
  readonly failover: FailoverControl;
  readonly placement: PlacementControl;
  readonly registry: NodeRegistry;
  discoveryReport: DiscoveryReport = { adopted: [], extraAttachments: [], missing: [], unattached: [], unreachable: [], importedStateFile: null };
  upcalls!: Upcalls;

  private intents!: IntentStore;
  private reconciler!: Reconciler;
  private moves!: ShardMoves;
  private availability!: NodeAvailabilityKeeper;
  private registration!: Registration;
  private heartbeater!: Heartbeater;
  private readonly events: EventFanout<ClusterEvent>;
  /** Re-attaches and losses of nodes that no listener has acted on yet, by kind and node (see `untilHeard`). */
  private readonly unheard = new Map<string, NodeEvent>();
  private closed = false;
  /** beforeLeading() has read the previous leader's state for this leadership (reset while standing by). */
  private tookOver = false;

  /** Issue 26: the Kubernetes node each configured pageserver runs on (`pageservers[].kubernetesNode`), for the composite to merge them. */
  hosts(): Record<string, string> {
    return Object.fromEntries(this.config.pageservers.flatMap((p) => (p.kubernetesNode ? [[String(p.id), p.kubernetesNode]] : [])));
  }

  constructor(private readonly config: PageserverBackendConfig) {
    this.events = new EventFanout({ onListenerError: config.onListenerError ?? (() => {}) });
    const gate = { ...(config.mayAct && { mayAct: config.mayAct }), ...(config.authority && { authority: config.authority }) };
    this.http = new PageserverHttp({ clock: config.clock, authToken: config.authToken, ...gate });
    this.hook = new ComputeHook({ clock: config.clock, url: config.controlPlane?.url, token: config.controlPlane?.token, log: config.log, ...gate });
    this.failover = {
      failOverShard: (id, o) => this.failOverShard(id, o),
      setNodeAvailability: (id, a) => this.setNodeAvailability(id, a),
    };
    this.placement = {
      placeShard: (id, p, o) => this.placeShard(id, p, o),
      cancelReconcile: (id) => this.cancelReconcile(id),
      setShardPolicy: (id, c) => this.setShardPolicy(id, c),
      setPreferredZone: (id, z) => this.setPreferredZone(id, z),
      describeShard: async (id) => this.describeShard(id),
      getTenantConfig: async (tenantId) => this.tenantShards(tenantId)[0]!.tenantConfig,
      setTenantConfig: (tenantId, config) => this.setTenantConfig(tenantId, config),
    };
    this.registry = {
      register: (r) => this.registration.register(r),
      registration: (id) => {
        const r = this.intents.nodes.get(id);
        return r ? registrationOf(r) : null;
      },
      tombstone: (id) => this.tombstone(id),
      forgetLocations: async (id) => this.observed.forgetNode(id),
      tombstones: async () => [...this.intents.tombstones.values()].map(registrationOf),
      removeTombstone: (id) => this.removeTombstone(id),
    };
  }

  // ---------------------------------------------------------------- start-up

  /**
   * Loads the intent from the database (importing a legacy state file once), registers the
   * config's seed nodes, reads each pageserver's locations, runs a first heartbeat round
   * (nodes start OFFLINE, neon:H4) and starts the heartbeats and the background reconcile.
   */
  async start(): Promise<void> {
    const { clock, log } = this.config;
    this.intents = await IntentStore.load(this.config.store);
    await seedNodes(this.intents, this.config.pageservers, log);
    if (this.config.stateFile && (await importStateFile(this.intents, this.config.stateFile, log)))
      this.discoveryReport.importedStateFile = this.config.stateFile;
    for (const record of this.intents.nodes.values()) this.nodes.add(record, clock.now());
    this.rememberPlacements();
    const deps: ReconcileDeps = {
      clock,
      http: this.http,
      hook: this.hook,
      intents: this.intents,
      observed: this.observed,
      nodes: this.nodes,
      log,
      warmup: { timeoutMs: this.config.secondaryWarmupTimeoutMs, requestTimeoutMs: this.config.secondaryDownloadRequestTimeoutMs },
      ...(this.config.mayAct && { mayAct: this.config.mayAct }),
      ...(this.config.authority && { authority: this.config.authority }),
    };
    this.reconciler = new Reconciler(deps, this.config.backgroundReconcileIntervalMs);
    this.moves = new ShardMoves(deps, this.reconciler, (shard) => this.emit({ type: 'shardChanged', shard: toShard(shard) }));
    this.availability = new NodeAvailabilityKeeper({
      ...deps,
      reconciler: this.reconciler,
      limits: { maxOfflineIntervalMs: this.config.maxOfflineIntervalMs, maxWarmingUpIntervalMs: this.config.maxWarmingUpIntervalMs },
      changed: (node) => {
        this.emit({ type: 'nodeChanged', node: toClusterNode(node) });
        this.moves.recheck();
      },
      lost: (node) => void this.untilHeard({ type: 'nodeLost', nodeId: node.nodeId }),
    });
    this.registration = new Registration({
      intents: this.intents,
      nodes: this.nodes,
      now: () => clock.now(),
      resolveHost: this.config.resolveHost ?? resolveWithDns,
      log,
      added: (node) => this.emit({ type: 'nodeChanged', node: toClusterNode(node) }),
    });
    this.upcalls = new Upcalls({
      intents: this.intents,
      nodes: this.nodes,
      observed: this.observed,
      availability: this.availability,
      registration: this.registration,
      now: () => clock.now(),
      log,
      reattached: (nodeId) => this.reattached(nodeId),
      record: (upcall) => this.emit({ type: 'nodeUpcall', upcall }),
    });
    await discover({ http: this.http, intents: this.intents, nodes: this.nodes, observed: this.observed, log }, this.discoveryReport);
    // ha:L3: what follows (heartbeats, reconciles, upcalls, registrations, actions) writes through the fence.
    this.intents.started();
    this.heartbeater = new Heartbeater({
      clock,
      intervalMs: this.config.heartbeatIntervalMs,
      nodeIds: () => this.nodes.ids(),
      probe: (id) => this.availability.probe(id),
      onRound: (results, endedAt, first) => this.availability.onRound(results, endedAt, first),
      onError: (e) => log.warn({ err: e }, 'heartbeat round failed'),
      ...(this.config.mayAct && {
        mayAct: this.config.mayAct,
        // Once per leadership: the gateway calls beforeLeading() before its operations resume; the first round does it otherwise.
        onLead: () => (this.tookOver ? Promise.resolve() : this.takeOver()),
        onStandby: () => {
          this.tookOver = false;
          return this.availability.follow();
        },
      }),
    });
    await this.heartbeater.start();
    this.reconciler.startBackground();
  }

  /** ha:L4: the gateway's call when this replica starts leading, before its operations resume (ClusterBackend.beforeLeading). */
  async beforeLeading(): Promise<void> {
    await this.takeOver();
    this.tookOver = true;
    this.heartbeater.now();
  }

  /**
   * ha:L8: this replica now leads. What the previous leader wrote is read again (intent,
   * registered nodes) and its persisted heartbeats are taken over, before the first round.
   */
  private async takeOver(): Promise<void> {
    const { clock, log } = this.config;
    await this.intents.reload();
    for (const id of this.nodes.ids()) if (!this.intents.nodes.has(id)) this.nodes.remove(id);
    for (const record of this.intents.nodes.values()) this.nodes.add(record, clock.now());
    this.rememberPlacements();
    await this.availability.inherit();
    log.info({ nodes: this.nodes.size, shards: this.intents.shards.size }, 'pageserver: leading; intent and heartbeat state read from the database');
  }

  /** neon:C12: the compute hook knows every shard's intended node from the start (see ComputeHook.remember). */
  private rememberPlacements(): void {
    for (const shard of this.intents.shards.values()) this.hook.remember(shardUpdateOf(shard));
  }

  /** Requests to pageservers and the hook not yet answered (tests wait until the plugin is idle). */
  outstandingRequests(): number {
    return this.http.pending + this.hook.pending;
  }

  /**
   * Issue 33: the pageservers' state for a rehearsal, one `BackendSnapshot` (see snapshot.ts):
   * the intent as the database holds it, what is observed, timelines and secondaries' progress
   * read now from the pageservers (reads only, allowed on a stand-by too). No address, no token.
   */
  async snapshot(): Promise<BackendSnapshot[]> {
    this.assertOpen();
    const takenAt = this.config.clock.now();
    const data = await readSnapshot({
      http: this.http,
      intents: this.intents,
      nodes: this.nodes,
      observed: this.observed,
      hook: { configured: this.hook.configured, tokenRequired: this.hook.tokenRequired },
    });
    return [{ plugin: 'pageserver', takenAt, data }];
  }

  /** The highest generation issued for a shard (tests and operators). */
  generationOf(shardId: string): number | null {
    return this.intents.shards.get(shardId)?.generation ?? null;
  }

  /** neon:C14's background pass, now (tests). */
  reconcileInBackground(): void {
    this.reconciler.backgroundPass();
  }

  // ---------------------------------------------------------------- events

  watch(listener: ClusterEventListener): () => void {
    const unwatch = this.events.add(listener);
    // A re-attach or a loss told before this listener watched (the gateway still starting after a kill, a replica taking over) is told to it too.
    for (const [key, event] of [...this.unheard]) {
      void this.events.deliverTo(listener, event).then((acted) => {
        if (acted && this.unheard.get(key) === event) this.unheard.delete(key);
      });
    }
    return unwatch;
  }

  /**
   * neon:L3: the re-attach upcall is answered once a listener has acted on it (the gateway's
   * storage engine returns when the node's policy change is recorded), so that a gateway killed
   * meanwhile hears it again (the pageserver retries an unanswered upcall).
   */
  private reattached(nodeId: string): Promise<void> {
    return this.untilHeard({ type: 'nodeReattached', nodeId });
  }

  /**
   * Tells every listener; one that no listener acted on (none watched yet, or the operations
   * of a replica taking over not yet started) stays pending for the next listener: a node lost
   * in the first heartbeat round of a new leader must still fail over (ha:L8).
   */
  private async untilHeard(event: NodeEvent): Promise<void> {
    if (this.closed) return;
    const key = `${event.type} ${event.nodeId}`;
    this.unheard.set(key, event);
    if ((await this.events.deliver(event)) > 0 && this.unheard.get(key) === event) this.unheard.delete(key);
  }

  private emit(event: ClusterEvent): void {
    if (this.closed) return;
    this.events.emit(event);
  }

  // ---------------------------------------------------------------- nodes

  async listNodes(): Promise<ClusterNode[]> {
    return this.nodes.all().map(toClusterNode);
  }

  async getNode(id: string): Promise<ClusterNode | null> {
    const n = this.nodes.get(id);
    return n ? toClusterNode(n) : null;
  }

  async getNodes(ids: readonly string[]): Promise<(ClusterNode | null)[]> {
    return ids.map((id) => {
      const n = this.nodes.get(id);
      return n ? toClusterNode(n) : null;
    });
  }

  async cordonNode(id: string): Promise<void> {
    await this.setCordoned(id, true);
  }

  async uncordonNode(id: string): Promise<void> {
    await this.setCordoned(id, false);
  }

  private async setCordoned(id: string, cordoned: boolean): Promise<void> {
    this.assertOpen();
    const node = this.requireNode(id);
    if (node.record.cordoned === cordoned) return;
    if (node.hb.availability === 'OFFLINE') throw new BackendError('Unavailable', `pageserver ${id} is OFFLINE`, { kind: 'node', id });
    const record = { ...node.record, cordoned };
    await this.intents.putNode(record);
    node.record = record;
    this.emit({ type: 'nodeChanged', node: toClusterNode(node) });
  }

  private requireNode(id: string): NodeRuntime {
    const node = this.nodes.get(id);
    if (!node) throw notFound('node', id);
    return node;
  }

  private async setNodeAvailability(nodeId: string, availability: NodeAvailability): Promise<void> {
    this.assertOpen();
    await this.availability.command(this.requireNode(nodeId), availability);
  }

  private async tombstone(nodeId: string): Promise<void> {
    this.assertOpen();
    if (!this.intents.nodes.has(nodeId)) return;
    this.http.abortNode(nodeId, `pageserver ${nodeId} was deleted`);
    this.observed.forgetNode(nodeId);
    this.nodes.remove(nodeId);
    await this.intents.tombstone(nodeId);
    this.config.log.info({ node: nodeId }, `pageserver ${nodeId} deleted: tombstoned`);
    this.emit({ type: 'nodeRemoved', nodeId });
    this.moves.recheck();
  }

  private async removeTombstone(nodeId: string): Promise<void> {
    if (this.intents.nodes.has(nodeId))
      throw new BackendError('Conflict', `node ${nodeId} is registered: only a deleted node's tombstone can be removed`, { kind: 'node', id: nodeId });
    if (!this.intents.tombstones.has(nodeId)) throw notFound('node', nodeId);
    await this.intents.removeTombstone(nodeId);
  }

  // ---------------------------------------------------------------- VMs: not served

  private noVms(): never {
    throw new BackendError('Rejected', 'the pageserver backend serves no VMs');
  }
  async listVms(_filter?: VmFilter): Promise<ClusterVm[]> {
    this.noVms();
  }
  async getVm(_id: string): Promise<ClusterVm | null> {
    this.noVms();
  }
  async getVms(_ids: readonly string[]): Promise<(ClusterVm | null)[]> {
    this.noVms();
  }
  async migrateVm(): Promise<void> {
    this.noVms();
  }
  async stopVm(): Promise<void> {
    this.noVms();
  }
  async startVm(): Promise<void> {
    this.noVms();
  }
  async setVmMaintenanceStrategyLabel(): Promise<void> {
    this.noVms();
  }
  async setVmTracking(): Promise<void> {
    this.noVms();
  }

  // ---------------------------------------------------------------- shards

  async listShards(filter: ShardFilter = {}): Promise<ClusterShard[]> {
    return [...this.intents.shards.values()]
      .filter(
        (s) =>
          (filter.attachedNodeId === undefined || s.attachedNodeId === filter.attachedNodeId) &&
          (filter.secondaryNodeId === undefined || s.secondaryNodeIds.includes(filter.secondaryNodeId)) &&
          (filter.tenantId === undefined || s.tenantId === filter.tenantId),
      )
      .sort(byTenantAndNumber)
      .map(toShard);
  }

  async getShard(id: string): Promise<ClusterShard | null> {
    const s = this.intents.shards.get(id);
    return s ? toShard(s) : null;
  }

  async getShards(ids: readonly string[]): Promise<(ClusterShard | null)[]> {
    return ids.map((id) => {
      const s = this.intents.shards.get(id);
      return s ? toShard(s) : null;
    });
  }

  async getSecondaryStatus(shardId: string, nodeId: string): Promise<SecondaryStatus> {
    this.assertOpen();
    const shard = this.requireShard(shardId);
    const node = this.requireNode(nodeId);
    if (!shard.secondaryNodeIds.includes(nodeId))
      throw new BackendError('NotFound', `shard ${shardId} has no secondary on node ${nodeId}`, { kind: 'shard', id: shardId });
    if (node.hb.availability === 'OFFLINE') throw new BackendError('Unavailable', `pageserver ${nodeId} is OFFLINE`, { kind: 'node', id: nodeId });
    const { json } = await this.http.request<SecondaryProgress>(node, 'GET', `/v1/tenant/${shardId}/secondary/status`, {
      ...CALLS.listing,
      check: checkSecondaryProgress,
    });
    return {
      bytesTotal: json.bytes_total,
      bytesDownloaded: Math.min(json.bytes_downloaded, json.bytes_total),
      heatmapMtime: json.heatmap_mtime === null ? null : Date.parse(json.heatmap_mtime),
    };
  }

  private requireShard(id: string): ShardIntent {
    const shard = this.intents.shards.get(id);
    if (!shard) throw notFound('shard', id);
    return shard;
  }

  /**
   * A drain's or fill's cut-over: the roles swap in the intent and the reconcile runs
   * Neon's live migration (neon:C1–C9) with the drain/fill warm-up bounds (neon:C3). See
   * ShardMoves for what a failure does (back to the origin before neon:C4, forward after).
   */
  async cutOverShard(id: string, options: { fromNodeId: string; toNodeId: string } & CutOverOptions): Promise<CutOverResult | void> {
    this.assertOpen();
    const { fromNodeId, toNodeId } = options;
    const shard = this.requireShard(id);
    this.requireNode(fromNodeId);
    this.requireNode(toNodeId);
    if (shard.attachedNodeId === toNodeId) return this.joinAttached(shard, toNodeId);
    if (shard.attachedNodeId !== fromNodeId) {
      throw new BackendError('Conflict', `shard ${id} is attached to node ${shard.attachedNodeId}, not ${fromNodeId}`, { kind: 'shard', id });
    }
    if (!shard.secondaryNodeIds.includes(toNodeId))
      throw new BackendError('Conflict', `shard ${id} has no secondary on node ${toNodeId}`, { kind: 'shard', id });
    for (const n of [toNodeId, fromNodeId]) {
      if (!this.nodes.available(n)) throw new BackendError('Unavailable', `pageserver ${n} is OFFLINE`, { kind: 'node', id: n });
    }
    return this.moves.place(
      shard,
      { attachedNodeId: toNodeId, secondaryNodeIds: [...shard.secondaryNodeIds.filter((n) => n !== toNodeId), fromNodeId] },
      { warmup: options.warmup ?? DRAIN_FILL_WARMUP, onProgress: options.onProgress, signal: options.signal },
    );
  }

  /** The shard's intent is already on the node: done when it holds it; else the reconcile (or a roll-forward) is awaited. */
  private async joinAttached(shard: ShardIntent, nodeId: string): Promise<CutOverResult | void> {
    if (this.moves.holds(shard, nodeId)) return;
    if (!this.reconciler.reconciling(shard.id)) this.reconciler.spawn(shard.id, 'joining', { priority: 'high' });
    await this.moves.whenAttached(shard.id, nodeId);
  }

  /** neon:H5d: the lost node stays a secondary in the intent; `toNodeId` is attached by a direct attach; no replacement secondary (H5e). */
  private async failOverShard(id: string, options: { fromNodeId: string; toNodeId: string }): Promise<CutOverResult | void> {
    this.assertOpen();
    const { fromNodeId, toNodeId } = options;
    const shard = this.requireShard(id);
    this.requireNode(toNodeId);
    if (shard.attachedNodeId === toNodeId) return this.joinAttached(shard, toNodeId);
    if (shard.attachedNodeId !== fromNodeId)
      throw new BackendError('Conflict', `shard ${id} is attached to node ${shard.attachedNodeId}, not ${fromNodeId}`, { kind: 'shard', id });
    if (!this.nodes.available(toNodeId)) throw new BackendError('Unavailable', `pageserver ${toNodeId} is OFFLINE`, { kind: 'node', id: toNodeId });
    const secondaries = [...shard.secondaryNodeIds.filter((n) => n !== toNodeId), ...(this.nodes.get(fromNodeId) ? [fromNodeId] : [])];
    // neon:H9: the intent stays on the target whatever fails before its generation is issued.
    return this.moves.place(shard, { attachedNodeId: toNodeId, secondaryNodeIds: secondaries }, { priority: 'normal', keepIntent: true, failover: true });
  }

  private async placeShard(id: string, placement: ShardPlacement, options: PlaceOptions = {}): Promise<CutOverResult | void> {
    this.assertOpen();
    const shard = this.requireShard(id);
    for (const n of [placement.attachedNodeId, ...placement.secondaryNodeIds]) this.requireNode(n);
    return this.moves.place(shard, placement, options);
  }

  private cancelReconcile(id: string): Promise<boolean> {
    this.requireShard(id);
    return this.reconciler.cancel(id);
  }

  private async setShardPolicy(id: string, change: { policy?: ShardIntent['policy']; secondaryCount?: number }): Promise<void> {
    const shard = this.requireShard(id);
    const next = { policy: change.policy ?? shard.policy, secondaryCount: change.secondaryCount ?? shard.secondaryCount };
    if (next.policy === shard.policy && next.secondaryCount === shard.secondaryCount) return;
    await this.intents.update(shard, next);
    this.emit({ type: 'shardChanged', shard: toShard(shard) });
  }

  private tenantShards(tenantId: string): ShardIntent[] {
    const shards = this.intents.sortedShards().filter((s) => s.tenantId === tenantId);
    if (!shards.length) throw new BackendError('NotFound', `Tenant ${tenantId} not found`, { kind: 'shard', id: tenantId });
    return shards;
  }

  /**
   * neon:W10 (Neon's `set_tenant_config_and_reconcile`): the config is written for every shard
   * of the tenant in one write, then each shard is reconciled at high priority (its locations
   * get the config, neon:W11); the call waits at most 5 s (`SHORT_RECONCILE_TIMEOUT`) and a
   * reconcile that fails or takes longer is only logged: the config is stored, the background
   * pass goes on sending it.
   */
  private async setTenantConfig(tenantId: string, config: TenantConfig): Promise<void> {
    this.assertOpen();
    const shards = this.tenantShards(tenantId);
    await this.intents.updateMany(shards, { tenantConfig: normaliseTenantConfig(config) });
    for (const shard of shards) for (const nodeId of this.observed.of(shard.id).keys()) this.observed.markConfStale(shard.id, nodeId);
    const reconciles = shards.filter((s) => s.policy !== 'STOP').map((s) => this.reconciler.run(s.id, { priority: 'high' }).then(() => undefined));
    const timedOut = new Promise<'timeout'>((resolve) => {
      const cancel = this.config.clock.setTimer(SHORT_RECONCILE_TIMEOUT_MS, () => resolve('timeout'));
      void Promise.allSettled(reconciles).then(cancel);
    });
    const outcome = await Promise.race([Promise.all(reconciles).then(() => 'done' as const), timedOut]).catch((e: unknown) => e);
    if (outcome !== 'done')
      this.config.log.warn(
        { tenant: tenantId, err: outcome === 'timeout' ? undefined : outcome },
        `tenant ${tenantId}'s config stored; its reconcile ${outcome === 'timeout' ? 'takes longer than 5 s' : 'failed'} (the background pass goes on)`,
      );
  }

  private async setPreferredZone(id: string, zone: string | null): Promise<void> {
    const shard = this.requireShard(id);
    if (shard.preferredZone === zone) return;
    await this.intents.update(shard, { preferredZone: zone });
    this.emit({ type: 'shardChanged', shard: toShard(shard) });
  }

  private describeShard(id: string): ShardDetails | null {
    const s = this.intents.shards.get(id);
    if (!s) return null;
    return {
      id,
      generation: s.generation,
      generationNodeId: s.generationNodeId,
      pendingComputeNotification: s.pendingComputeNotification,
      secondaryCount: s.secondaryCount,
      observed: Object.fromEntries([...this.observed.of(id)].map(([n, o]) => [n, describeObserved(o)])),
      reconciling: this.reconciler.reconciling(id),
    };
  }

  // ---------------------------------------------------------------- lifecycle

  private assertOpen(): void {
    if (this.closed) throw new BackendError('Unavailable', 'the pageserver backend is closed');
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Calls first: a heartbeat round or a reconcile waiting on them then ends at once.
    this.http.close();
    await Promise.all([this.heartbeater?.stop(), this.reconciler?.close()]);
    this.events.clear();
  }
}

function toShard(s: ShardIntent): ClusterShard {
  return {
    id: s.id,
    tenantId: s.tenantId,
    shardNumber: s.shardNumber,
    shardCount: s.shardCount,
    attachedNodeId: s.attachedNodeId,
    secondaryNodeIds: [...s.secondaryNodeIds],
    preferredZone: s.preferredZone,
    policy: s.policy,
    pendingComputeNotification: s.pendingComputeNotification,
  };
}
