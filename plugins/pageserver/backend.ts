import type { ClusterBackend, CutOverResult, ShardFilter, VmFilter } from '../../src/cluster/backend.ts';
import type { Clock } from '../../src/cluster/clock.ts';
import { BackendError, isBackendError, notFound } from '../../src/cluster/errors.ts';
import { EventFanout } from '../../src/cluster/event-fanout.ts';
import type { ClusterEvent, ClusterEventListener, ClusterNode, ClusterShard, ClusterVm, NodeAvailability, SecondaryStatus } from '../../src/cluster/types.ts';
import { compareNodeIds } from '../../src/domain/compare.ts';
import { LISTEN_LABELS } from '../../src/domain/labels.ts';
import { checkLocationConfigList, checkLocationConfigResponse, checkSecondaryProgress, checkUtilization } from './checks.ts';
import { PageserverHttp, PageserverRequestError, type HttpTarget } from './http-client.ts';
import type { PageserverOptions } from './options.ts';
import { parseTenantShardId } from './shard-id.ts';
import { readControllerState, STATE_FORMAT, STATE_VERSION, writeControllerState, type ShardIntent } from './state-file.ts';
import type {
  LocationConfig,
  LocationConfigListResponse,
  LocationConfigMode,
  ReAttachRequest,
  ReAttachResponse,
  SecondaryProgress,
  ValidateRequest,
  ValidateResponse,
} from './wire.ts';

export interface PageserverBackendConfig extends Omit<PageserverOptions, 'stateFile' | 'upcall'> {
  /** Absolute path of the state file. */
  stateFile: string;
  clock: Clock;
  log: { info(obj: object, msg?: string): void; warn(obj: object, msg?: string): void };
  onListenerError?: (error: unknown) => void;
}

interface NodeRuntime extends HttpTarget {
  numericId: number;
  name: string;
  zone: string;
  availability: NodeAvailability;
  lastOkAt: number;
  /** Heartbeats sent before this instant do not end WARMING_UP. */
  reattachedAt: number;
  heartbeatInFlight: boolean;
  /** Heartbeats failed in a row since the last good one. */
  failedHeartbeats: number;
}

interface Migration {
  from: string;
  to: string;
  /** `committed` once the new generation is persisted: from then on the migration decides where the shard ends. */
  phase: 'prepare' | 'committed';
  /** The origin re-attached before the commit: the migration is abandoned, the re-attach's generation stands. */
  superseded: boolean;
  promise: Promise<CutOverResult>;
}

/** How far a cut-over got, for `recover`. */
interface CutOverProgress {
  /** Whether the destination may hold the new generation attached: `maybe` = a request for it failed without an answer. */
  dest: 'no' | 'maybe' | 'yes';
  /** The origin confirmed `Secondary` (step 5). */
  originSecondary: boolean;
}

/**
 * A shard whose locations a failed cut-over (or discovery) left unconfirmed. `pending`
 * holds the attached node until it holds `AttachedSingle` with a generation no other
 * node may hold, and other nodes until they confirm `Secondary`. `resync` works it off
 * when those nodes answer heartbeats.
 */
interface Unsettled {
  pending: Set<string>;
  /** What the attached node was last confirmed to hold. */
  attachedAs: LocationConfigMode | null;
  /** A node other than the attached one that may hold the shard's current generation (then a new one is issued). */
  generationMayBeOn: string | null;
  running: boolean;
}

/** What start-up discovery found that does not match the persisted intent (see README). */
export interface DiscoveryReport {
  /** Shards found on pageservers but not in the state file, now managed. */
  adopted: string[];
  /** Attached locations found where the intent has none (left alone, reported). */
  extraAttachments: { shardId: string; nodeId: string; mode: LocationConfigMode; generation: number | null }[];
  /** Locations the intent has but the (reachable) pageserver does not. */
  missing: { shardId: string; nodeId: string; role: 'attached' | 'secondary' }[];
  /** Shards seen only as secondaries (no attached location anywhere): not adopted. */
  unattached: string[];
  /** Pageservers that did not answer `GET /v1/location_config`. */
  unreachable: string[];
}

class Superseded extends Error {}

const ATTACHED: readonly LocationConfigMode[] = ['AttachedSingle', 'AttachedMulti', 'AttachedStale'];
const byId = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const describe = (e: unknown) => (e instanceof Error ? e.message : String(e));
/** The error's message, with how many attempts were made when more than one. */
const describeFailure = (e: unknown) => (e instanceof PageserverRequestError && e.attempts > 1 ? `${e.message} (${e.attempts} attempts)` : describe(e));
/** The pageserver answered with an error status: it refused the request and changed nothing. */
const refused = (e: unknown) => e instanceof PageserverRequestError && e.answered;

/**
 * Lockkeeper as the storage controller of a set of Neon pageservers, through their HTTP API
 * (README "Neon pageservers"). Shards only; VM methods reject `Rejected`.
 */
export class PageserverBackend implements ClusterBackend {
  readonly name = 'pageserver';
  readonly capabilities = { vms: false, shards: true };
  readonly http: PageserverHttp;
  discoveryReport: DiscoveryReport = { adopted: [], extraAttachments: [], missing: [], unattached: [], unreachable: [] };

  private readonly nodes = new Map<string, NodeRuntime>();
  private readonly shards = new Map<string, ShardIntent>();
  private readonly migrations = new Map<string, Migration>();
  /** Shards whose pageservers may disagree with the intent: re-sent when their nodes answer (`resync`). */
  private readonly unsettled = new Map<string, Unsettled>();
  private readonly cordoned = new Set<string>();
  private readonly events: EventFanout<ClusterEvent>;
  private cancelHeartbeat: (() => void) | undefined;
  private closed = false;

  constructor(private readonly config: PageserverBackendConfig) {
    this.events = new EventFanout({ onListenerError: config.onListenerError ?? (() => {}) });
    this.http = new PageserverHttp({
      clock: config.clock,
      authToken: config.authToken,
      requestTimeoutMs: config.requestTimeoutMs,
      attempts: config.retry.attempts,
      backoffMs: config.retry.backoffMs,
    });
    const now = config.clock.now();
    for (const p of config.pageservers) {
      const id = String(p.id);
      this.nodes.set(id, {
        nodeId: id,
        url: p.url,
        numericId: p.id,
        name: p.name ?? `pageserver-${p.id}`,
        zone: p.availabilityZone,
        availability: 'OFFLINE',
        lastOkAt: now,
        reattachedAt: now,
        heartbeatInFlight: false,
        failedHeartbeats: 0,
      });
    }
  }

  // ---------------------------------------------------------------- start-up

  /**
   * Reads the state file and each pageserver's `GET /v1/location_config`, reconciles them
   * (the persisted intent wins; see README), persists, and starts heartbeats.
   */
  async start(): Promise<void> {
    const saved = readControllerState(this.config.stateFile);
    for (const s of saved?.shards ?? []) this.shards.set(s.id, structuredClone(s));
    for (const id of saved?.cordoned ?? []) this.cordoned.add(id);

    const observed = new Map<string, { nodeId: string; config: LocationConfig }[]>();
    const reachable = new Set<string>();
    await Promise.all(
      [...this.nodes.values()].map(async (node) => {
        try {
          const { json } = await this.http.request<LocationConfigListResponse>(node, 'GET', '/v1/location_config', { check: checkLocationConfigList });
          node.availability = 'ACTIVE';
          node.lastOkAt = this.config.clock.now();
          reachable.add(node.nodeId);
          for (const [shardId, config] of json.tenant_shards) {
            if (!config || config.mode === 'Detached') continue;
            const list = observed.get(shardId) ?? [];
            list.push({ nodeId: node.nodeId, config });
            observed.set(shardId, list);
          }
        } catch (e) {
          this.discoveryReport.unreachable.push(node.nodeId);
          this.config.log.warn({ node: node.nodeId, err: e }, `pageserver ${node.nodeId} did not answer discovery: ${describe(e)}`);
        }
      }),
    );
    this.reconcileDiscovery(observed, reachable);
    this.persist();
    this.scheduleHeartbeat();
  }

  private reconcileDiscovery(observed: Map<string, { nodeId: string; config: LocationConfig }[]>, reachable: Set<string>): void {
    const report = this.discoveryReport;
    for (const [shardId, locations] of [...observed].sort(([a], [b]) => byId(a, b))) {
      const intent = this.shards.get(shardId);
      const attached = locations.filter((l) => ATTACHED.includes(l.config.mode));
      if (intent) {
        for (const l of attached) {
          if (l.nodeId !== intent.attachedNodeId)
            report.extraAttachments.push({ shardId, nodeId: l.nodeId, mode: l.config.mode, generation: l.config.generation });
        }
        // A generation seen on a pageserver was issued: never issue it again.
        const seen = Math.max(0, ...locations.map((l) => l.config.generation ?? 0));
        if (seen > intent.generation) intent.generation = seen;
        continue;
      }
      const parsed = parseTenantShardId(shardId);
      if (!attached.length || !parsed) {
        report.unattached.push(shardId);
        continue;
      }
      // The attached location with the newest generation wins (an interrupted migration
      // leaves the destination AttachedMulti with the newer one); ties: AttachedSingle, then lowest id.
      const winner = [...attached].sort(
        (a, b) =>
          (b.config.generation ?? 0) - (a.config.generation ?? 0) ||
          Number(b.config.mode === 'AttachedSingle') - Number(a.config.mode === 'AttachedSingle') ||
          compareNodeIds(a.nodeId, b.nodeId),
      )[0]!;
      for (const l of attached) {
        if (l !== winner) report.extraAttachments.push({ shardId, nodeId: l.nodeId, mode: l.config.mode, generation: l.config.generation });
      }
      this.shards.set(shardId, {
        id: shardId,
        tenantId: parsed.tenantId,
        shardNumber: parsed.shardNumber,
        shardCount: parsed.shardCount,
        stripeSize: winner.config.shard_stripe_size ?? 0,
        attachedNodeId: winner.nodeId,
        secondaryNodeIds: locations
          .filter((l) => l.config.mode === 'Secondary')
          .map((l) => l.nodeId)
          .sort(compareNodeIds),
        generation: Math.max(0, ...locations.map((l) => l.config.generation ?? 0)),
        preferredZone: this.nodes.get(winner.nodeId)?.zone ?? null,
        policy: 'ACTIVE',
      });
      report.adopted.push(shardId);
    }
    for (const intent of this.shards.values()) {
      const here = new Map((observed.get(intent.id) ?? []).map((l) => [l.nodeId, l.config.mode]));
      if (reachable.has(intent.attachedNodeId) && !ATTACHED.includes(here.get(intent.attachedNodeId) as LocationConfigMode)) {
        report.missing.push({ shardId: intent.id, nodeId: intent.attachedNodeId, role: 'attached' });
        this.unsettle(intent.id, new Set([intent.attachedNodeId]), { attachedAs: null, generationMayBeOn: null });
      }
      for (const s of intent.secondaryNodeIds) {
        if (reachable.has(s) && here.get(s) !== 'Secondary') report.missing.push({ shardId: intent.id, nodeId: s, role: 'secondary' });
      }
    }
    const { adopted, extraAttachments, missing, unattached } = report;
    if (extraAttachments.length || missing.length || unattached.length) {
      this.config.log.warn(
        { extraAttachments, missing, unattached },
        'pageserver discovery: observed locations differ from the persisted placement (the placement wins)',
      );
    }
    if (adopted.length) this.config.log.info({ count: adopted.length }, `pageserver discovery: adopted ${adopted.length} shard(s) found on the pageservers`);
  }

  private persist(): void {
    writeControllerState(this.config.stateFile, {
      format: STATE_FORMAT,
      version: STATE_VERSION,
      shards: [...this.shards.values()].sort((a, b) => byId(a.id, b.id)),
      cordoned: [...this.cordoned].sort(compareNodeIds),
    });
  }

  // ---------------------------------------------------------------- heartbeats

  private scheduleHeartbeat(): void {
    if (this.closed) return;
    this.cancelHeartbeat = this.config.clock.setTimer(this.config.heartbeatIntervalMs, () => {
      this.heartbeatAll();
      this.scheduleHeartbeat();
    });
  }

  private heartbeatAll(): void {
    const now = this.config.clock.now();
    for (const node of this.nodes.values()) {
      if (node.heartbeatInFlight) continue;
      node.heartbeatInFlight = true;
      const sentAt = now;
      const timeoutMs = Math.min(this.config.requestTimeoutMs, this.config.offlineAfterMs);
      this.http
        .request(node, 'GET', '/v1/utilization', { attempts: 1, timeoutMs, check: checkUtilization })
        .then(
          () => {
            if (this.closed) return;
            node.lastOkAt = this.config.clock.now();
            node.failedHeartbeats = 0;
            if (node.availability === 'OFFLINE' || (node.availability === 'WARMING_UP' && sentAt >= node.reattachedAt)) this.setAvailability(node, 'ACTIVE');
            this.resyncFor(node.nodeId);
          },
          (e: unknown) => {
            if (this.closed) return;
            node.failedHeartbeats++;
            // Two failures in a row, not one: a single heartbeat can time out because this
            // process was busy (its timer fired before the answer was read), not the pageserver.
            if (node.availability !== 'OFFLINE' && node.failedHeartbeats >= 2 && this.config.clock.now() - node.lastOkAt >= this.config.offlineAfterMs) {
              this.config.log.warn({ node: node.nodeId, err: e }, `pageserver ${node.nodeId} OFFLINE: no good heartbeat for ${this.config.offlineAfterMs} ms`);
              this.setAvailability(node, 'OFFLINE');
            }
          },
        )
        .finally(() => (node.heartbeatInFlight = false));
    }
  }

  private setAvailability(node: NodeRuntime, availability: NodeAvailability): void {
    if (node.availability === availability) return;
    node.availability = availability;
    this.emit({ type: 'nodeChanged', node: this.toNode(node) });
  }

  private unsettle(shardId: string, pending: Set<string>, state: Pick<Unsettled, 'attachedAs' | 'generationMayBeOn'>): void {
    this.unsettled.set(shardId, { pending, ...state, running: false });
  }

  /** Shards not yet re-synchronised after a failed cut-over, with the nodes they wait for (tests and operators). */
  unsettledShards(): Record<string, string[]> {
    return Object.fromEntries([...this.unsettled].sort(([a], [b]) => byId(a, b)).map(([id, u]) => [id, [...u.pending].sort(compareNodeIds)]));
  }

  /** A node answered a heartbeat: re-synchronise the shards waiting for it. */
  private resyncFor(nodeId: string): void {
    for (const [shardId, u] of this.unsettled) {
      if (u.pending.has(nodeId)) void this.resync(shardId);
    }
  }

  /**
   * Re-sends the intended locations of an unsettled shard: `Secondary` to the pending
   * secondaries that answer, then the attached node `AttachedSingle` — or `AttachedMulti`
   * while another node is still unconfirmed — with a generation no other node may hold
   * (a new one, persisted first, when the current one may have reached another node).
   */
  private async resync(shardId: string): Promise<void> {
    const u = this.unsettled.get(shardId);
    const shard = this.shards.get(shardId);
    if (!u || !shard || u.running || this.closed || this.migrations.has(shardId)) return;
    u.running = true;
    try {
      const attachedId = shard.attachedNodeId;
      for (const nodeId of [...u.pending].filter((n) => n !== attachedId).sort(compareNodeIds)) {
        const node = this.nodes.get(nodeId);
        if (!node || node.availability === 'OFFLINE') continue;
        try {
          await this.putLocation(node, shard, 'Secondary', null);
          u.pending.delete(nodeId);
          if (u.generationMayBeOn === nodeId) u.generationMayBeOn = null;
        } catch {
          // still pending: tried again after its next good heartbeat
        }
      }
      const attached = this.nodes.get(attachedId);
      const others = [...u.pending].some((n) => n !== attachedId);
      const mode: LocationConfigMode = others ? 'AttachedMulti' : 'AttachedSingle';
      if (attached && attached.availability !== 'OFFLINE' && u.pending.has(attachedId) && !(others && u.attachedAs === 'AttachedMulti') && !this.closed) {
        if (u.generationMayBeOn !== null && u.generationMayBeOn !== attachedId) {
          shard.generation += 1;
          this.persist();
        }
        u.generationMayBeOn = attachedId;
        try {
          await this.putLocation(attached, shard, mode, shard.generation);
          u.attachedAs = mode;
          if (mode === 'AttachedSingle') u.pending.delete(attachedId);
          this.config.log.info(
            { shard: shardId, node: attachedId },
            `shard ${shardId} re-attached to node ${attachedId} (${mode}, generation ${shard.generation}) by re-synchronisation`,
          );
        } catch {
          // still pending
        }
      }
      if (!u.pending.size && this.unsettled.get(shardId) === u) {
        this.unsettled.delete(shardId);
        this.config.log.info({ shard: shardId }, `shard ${shardId} re-synchronised: node ${attachedId} AttachedSingle (generation ${shard.generation})`);
      }
    } finally {
      u.running = false;
    }
  }

  // ---------------------------------------------------------------- events

  watch(listener: ClusterEventListener): () => void {
    return this.events.add(listener);
  }

  private emit(event: ClusterEvent): void {
    if (this.closed) return;
    this.events.emit(event);
  }

  // ---------------------------------------------------------------- nodes

  private toNode(n: NodeRuntime): ClusterNode {
    const url = new URL(n.url);
    return {
      id: n.nodeId,
      name: n.name,
      zone: n.zone,
      roles: ['storage'],
      availability: n.availability,
      cordoned: this.cordoned.has(n.nodeId),
      labels: {
        [LISTEN_LABELS.httpAddr]: url.hostname,
        [LISTEN_LABELS.httpPort]: url.port || (url.protocol === 'https:' ? '443' : '80'),
      },
    };
  }

  async listNodes(): Promise<ClusterNode[]> {
    return [...this.nodes.values()].sort((a, b) => a.numericId - b.numericId).map((n) => this.toNode(n));
  }

  async getNode(id: string): Promise<ClusterNode | null> {
    const n = this.nodes.get(id);
    return n ? this.toNode(n) : null;
  }

  async getNodes(ids: readonly string[]): Promise<(ClusterNode | null)[]> {
    return ids.map((id) => {
      const n = this.nodes.get(id);
      return n ? this.toNode(n) : null;
    });
  }

  async cordonNode(id: string): Promise<void> {
    this.setCordoned(id, true);
  }

  async uncordonNode(id: string): Promise<void> {
    this.setCordoned(id, false);
  }

  private setCordoned(id: string, cordoned: boolean): void {
    this.assertOpen();
    const node = this.nodes.get(id);
    if (!node) throw notFound('node', id);
    if (this.cordoned.has(id) === cordoned) return;
    if (node.availability === 'OFFLINE') throw new BackendError('Unavailable', `pageserver ${id} is OFFLINE`, { kind: 'node', id });
    if (cordoned) this.cordoned.add(id);
    else this.cordoned.delete(id);
    this.persist();
    this.emit({ type: 'nodeChanged', node: this.toNode(node) });
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

  private toShard(s: ShardIntent): ClusterShard {
    return {
      id: s.id,
      tenantId: s.tenantId,
      shardNumber: s.shardNumber,
      shardCount: s.shardCount,
      attachedNodeId: s.attachedNodeId,
      secondaryNodeIds: [...s.secondaryNodeIds],
      preferredZone: s.preferredZone,
      policy: s.policy,
    };
  }

  async listShards(filter: ShardFilter = {}): Promise<ClusterShard[]> {
    return [...this.shards.values()]
      .filter(
        (s) =>
          (filter.attachedNodeId === undefined || s.attachedNodeId === filter.attachedNodeId) &&
          (filter.secondaryNodeId === undefined || s.secondaryNodeIds.includes(filter.secondaryNodeId)) &&
          (filter.tenantId === undefined || s.tenantId === filter.tenantId),
      )
      .sort((a, b) => byId(a.tenantId, b.tenantId) || a.shardNumber - b.shardNumber)
      .map((s) => this.toShard(s));
  }

  async getShard(id: string): Promise<ClusterShard | null> {
    const s = this.shards.get(id);
    return s ? this.toShard(s) : null;
  }

  async getShards(ids: readonly string[]): Promise<(ClusterShard | null)[]> {
    return ids.map((id) => {
      const s = this.shards.get(id);
      return s ? this.toShard(s) : null;
    });
  }

  /** The highest generation issued for a shard (tests and operators). */
  generationOf(shardId: string): number | null {
    return this.shards.get(shardId)?.generation ?? null;
  }

  async getSecondaryStatus(shardId: string, nodeId: string): Promise<SecondaryStatus> {
    this.assertOpen();
    const shard = this.shards.get(shardId);
    if (!shard) throw notFound('shard', shardId);
    const node = this.nodes.get(nodeId);
    if (!node) throw notFound('node', nodeId);
    if (!shard.secondaryNodeIds.includes(nodeId))
      throw new BackendError('NotFound', `shard ${shardId} has no secondary on node ${nodeId}`, { kind: 'shard', id: shardId });
    if (node.availability === 'OFFLINE') throw new BackendError('Unavailable', `pageserver ${nodeId} is OFFLINE`, { kind: 'node', id: nodeId });
    const { json } = await this.http.request<SecondaryProgress>(node, 'GET', `/v1/tenant/${shardId}/secondary/status`, { check: checkSecondaryProgress });
    return {
      bytesTotal: json.bytes_total,
      bytesDownloaded: Math.min(json.bytes_downloaded, json.bytes_total),
      heatmapMtime: json.heatmap_mtime === null ? null : Date.parse(json.heatmap_mtime),
    };
  }

  /**
   * Neon's live migration (storage controller `Reconciler::live_migrate`): origin
   * AttachedStale → destination secondary downloads (bounded wait) → new generation,
   * persisted → destination AttachedMulti → origin Secondary {warm} → destination
   * AttachedSingle. Requests answered 5xx or timing out are retried; the result's note
   * names those that needed it. A step failing after its retries rolls the shard back to
   * the origin (rejected: "rolled back to node N") or, if the origin cannot take it,
   * forward to the destination (resolved: the note says "rolled forward"); see `recover`.
   */
  async cutOverShard(id: string, options: { fromNodeId: string; toNodeId: string }): Promise<CutOverResult | void> {
    this.assertOpen();
    const { fromNodeId, toNodeId } = options;
    const shard = this.shards.get(id);
    if (!shard) throw notFound('shard', id);
    const running = this.migrations.get(id);
    if (running) {
      if (running.from === fromNodeId && running.to === toNodeId) return running.promise;
      throw new BackendError('Conflict', `shard ${id} is being cut over from node ${running.from} to node ${running.to}`, { kind: 'shard', id });
    }
    if (shard.attachedNodeId === toNodeId) return;
    if (shard.attachedNodeId !== fromNodeId) {
      throw new BackendError('Conflict', `shard ${id} is attached to node ${shard.attachedNodeId}, not ${fromNodeId}`, { kind: 'shard', id });
    }
    if (!shard.secondaryNodeIds.includes(toNodeId)) {
      throw new BackendError('Conflict', `shard ${id} has no secondary on node ${toNodeId}`, { kind: 'shard', id });
    }
    const unsettled = this.unsettled.get(id);
    if (unsettled) {
      throw new BackendError(
        'Conflict',
        `shard ${id} is being re-synchronised after a failed cut-over: waiting for node(s) ${[...unsettled.pending].sort(compareNodeIds).join(', ')} to take their locations`,
        { kind: 'shard', id },
      );
    }
    const from = this.nodes.get(fromNodeId);
    const to = this.nodes.get(toNodeId);
    if (!from) throw notFound('node', fromNodeId);
    if (!to) throw notFound('node', toNodeId);
    for (const n of [to, from]) {
      if (n.availability === 'OFFLINE') throw new BackendError('Unavailable', `pageserver ${n.nodeId} is OFFLINE`, { kind: 'node', id: n.nodeId });
    }
    const migration: Migration = { from: fromNodeId, to: toNodeId, phase: 'prepare', superseded: false, promise: Promise.resolve({}) };
    this.migrations.set(id, migration);
    migration.promise = this.migrate(shard, from, to, migration).finally(() => this.migrations.delete(id));
    return migration.promise;
  }

  private async migrate(shard: ShardIntent, from: NodeRuntime, to: NodeRuntime, m: Migration): Promise<CutOverResult> {
    const id = shard.id;
    const retried: string[] = [];
    const progress: CutOverProgress = { dest: 'no', originSecondary: false };
    const put = async (node: NodeRuntime, mode: LocationConfigMode, generation: number | null) => {
      const r = await this.putLocation(node, shard, mode, generation);
      if (r.attempts > 1) retried.push(`PUT location_config ${mode} on node ${node.nodeId} took ${r.attempts} attempts (${r.failures.join(', ')})`);
    };
    try {
      await put(from, 'AttachedStale', shard.generation);
      await this.waitForDownload(to, id, (r) =>
        retried.push(`POST secondary/download on node ${to.nodeId} took ${r.attempts} attempts (${r.failures.join(', ')})`),
      );
      if (m.superseded) throw new Superseded();
      shard.generation += 1;
      this.persist();
      m.phase = 'committed';
      const generation = shard.generation;
      progress.dest = 'maybe';
      await put(to, 'AttachedMulti', generation);
      progress.dest = 'yes';
      await put(from, 'Secondary', null);
      progress.originSecondary = true;
      await put(to, 'AttachedSingle', generation);
      this.setRoles(shard, to.nodeId, from.nodeId);
      const note = retried.length ? `retried: ${retried.join('; ')}` : undefined;
      this.config.log.info(
        { shard: id, node: to.nodeId, from: from.nodeId, generation },
        `shard ${id} cut over from node ${from.nodeId} to node ${to.nodeId} (generation ${generation})${note ? `; ${note}` : ''}`,
      );
      return note ? { note } : {};
    } catch (e) {
      if (e instanceof Superseded || m.superseded) {
        throw new BackendError(
          'Conflict',
          `cut-over of shard ${id} abandoned: node ${from.nodeId} re-attached during it and keeps the shard (generation ${shard.generation})`,
          { kind: 'shard', id },
        );
      }
      if (this.closed) throw new BackendError('Unavailable', `cut-over of shard ${id} interrupted: the backend is closed`, { kind: 'shard', id });
      // A request the destination refused outright (an error status) did not attach it.
      if (progress.dest === 'maybe' && refused(e)) progress.dest = 'no';
      return this.recover(shard, from, to, progress, e, retried);
    }
  }

  /**
   * After a failed cut-over step, leave exactly one node in charge of the shard:
   *
   * 1. if the destination may be attached, set it back to `Secondary`;
   * 2. if it is known not to be attached: **roll back** — a new generation, persisted, and
   *    the origin `AttachedSingle` (rejects "…; rolled back to node N …");
   * 3. if it holds the new generation attached and refused to be set back: **roll forward**
   *    — it keeps the shard (it is the only location with the newest generation);
   * 4. if the origin refuses too: **roll forward** — a new generation and the destination
   *    attached (resolves, the note says "rolled forward");
   * 5. if both refuse: Unavailable; the shard stays assigned to the origin and is re-sent
   *    when the nodes answer heartbeats again (`resync`).
   *
   * A location is attached `AttachedSingle` only while no other node may hold an attached
   * one we could not confirm gone (a timed-out request may have been applied); otherwise
   * `AttachedMulti`, and `resync` makes it `AttachedSingle` once the other node answers.
   */
  private async recover(
    shard: ShardIntent,
    from: NodeRuntime,
    to: NodeRuntime,
    progress: CutOverProgress,
    cause: unknown,
    retried: string[],
  ): Promise<CutOverResult> {
    const id = shard.id;
    const why = `cut-over of shard ${id} from node ${from.nodeId} to node ${to.nodeId} failed: ${describeFailure(cause)}`;
    const code = isBackendError(cause) ? cause.code : 'Transient';
    const retriedNote = retried.length ? `; retried: ${retried.join('; ')}` : '';
    const committed = shard.generation;
    let dest = progress.dest;
    let demoteError: unknown = null;
    if (dest !== 'no') {
      try {
        await this.putLocation(to, shard, 'Secondary', null);
        dest = 'no';
      } catch (e) {
        demoteError = e;
        if (!refused(e)) dest = 'maybe';
        this.config.log.warn({ shard: id, node: to.nodeId, err: e }, `could not set node ${to.nodeId} back to Secondary for shard ${id}`);
      }
    }

    if (dest === 'yes') {
      // The destination holds the newest generation attached and refused to give it up: it keeps the shard.
      const pending = new Set([to.nodeId]);
      if (!progress.originSecondary) {
        await this.putLocation(from, shard, 'Secondary', null).catch(() => pending.add(from.nodeId));
      }
      this.setRoles(shard, to.nodeId, from.nodeId);
      this.unsettle(id, pending, { attachedAs: 'AttachedMulti', generationMayBeOn: to.nodeId });
      this.config.log.warn({ shard: id, node: to.nodeId }, `shard ${id} rolled forward to node ${to.nodeId}`);
      return {
        note: `rolled forward: ${why}; node ${to.nodeId} refused to be set back to Secondary (${describeFailure(demoteError)}) and keeps the shard AttachedMulti with generation ${committed}; it is made AttachedSingle when it answers${retriedNote}`,
      };
    }

    // Roll back: the origin, AttachedMulti while the destination may still be attached.
    const backMode: LocationConfigMode = dest === 'maybe' ? 'AttachedMulti' : 'AttachedSingle';
    shard.generation += 1;
    this.persist();
    const back = shard.generation;
    let originError: unknown = null;
    try {
      await this.putLocation(from, shard, backMode, back);
    } catch (e) {
      originError = e;
    }
    if (originError === null) {
      this.config.log.warn({ shard: id, node: from.nodeId, generation: back }, `shard ${id} rolled back to node ${from.nodeId}`);
      let tail = '';
      if (backMode === 'AttachedMulti') {
        this.unsettle(id, new Set([to.nodeId, from.nodeId]), { attachedAs: 'AttachedMulti', generationMayBeOn: from.nodeId });
        tail = `; node ${to.nodeId} did not confirm it is no longer attached (${describeFailure(demoteError)}): it is set Secondary, and node ${from.nodeId} AttachedSingle, when it answers`;
      }
      throw new BackendError(
        code === 'NotFound' ? 'Conflict' : code,
        `${why}; rolled back to node ${from.nodeId}: re-attached ${backMode} with generation ${back}${tail}${retriedNote}`,
        { kind: 'shard', id },
      );
    }

    // Roll forward: the destination, AttachedMulti while the origin may have taken the shard after all.
    const originMayBeAttached = !refused(originError);
    const forwardMode: LocationConfigMode = originMayBeAttached ? 'AttachedMulti' : 'AttachedSingle';
    shard.generation += 1;
    this.persist();
    const forward = shard.generation;
    try {
      await this.putLocation(to, shard, forwardMode, forward);
    } catch (destError) {
      const pending = new Set([from.nodeId]);
      if (dest === 'maybe' || !refused(destError)) pending.add(to.nodeId);
      this.unsettle(id, pending, { attachedAs: null, generationMayBeOn: refused(destError) ? null : to.nodeId });
      this.config.log.warn({ shard: id, err: destError }, `shard ${id}: neither node ${from.nodeId} nor node ${to.nodeId} took the attachment`);
      throw new BackendError(
        'Unavailable',
        `${why}; not rolled back: node ${from.nodeId} refused the shard (${describeFailure(originError)}); not rolled forward: node ${to.nodeId} refused it too (${describeFailure(destError)}); the shard stays assigned to node ${from.nodeId} (generation ${shard.generation} or newer) and is re-attached when the nodes answer again${retriedNote}`,
        { kind: 'shard', id },
      );
    }
    this.setRoles(shard, to.nodeId, from.nodeId);
    const pending = new Set<string>();
    // The origin is left AttachedStale (or unknown): it is set Secondary when it answers.
    if (!progress.originSecondary || originMayBeAttached) pending.add(from.nodeId);
    if (forwardMode === 'AttachedMulti') pending.add(to.nodeId);
    if (pending.size) this.unsettle(id, pending, { attachedAs: forwardMode, generationMayBeOn: to.nodeId });
    this.config.log.warn({ shard: id, node: to.nodeId }, `shard ${id} rolled forward to node ${to.nodeId}`);
    return {
      note: `rolled forward: ${why}; rollback to node ${from.nodeId} failed (${describeFailure(originError)}); node ${to.nodeId} attached ${forwardMode} with generation ${forward}${retriedNote}`,
    };
  }

  private setRoles(shard: ShardIntent, attached: string, secondary: string): void {
    shard.attachedNodeId = attached;
    shard.secondaryNodeIds = [...shard.secondaryNodeIds.filter((n) => n !== attached && n !== secondary), secondary].sort(compareNodeIds);
    this.persist();
    this.emit({ type: 'shardChanged', shard: this.toShard(shard) });
  }

  /** One location change; resolves with the attempts it took and why earlier ones failed. */
  private async putLocation(
    node: NodeRuntime,
    shard: ShardIntent,
    mode: LocationConfigMode,
    generation: number | null,
  ): Promise<{ attempts: number; failures: string[] }> {
    const body: LocationConfig = {
      mode,
      generation,
      secondary_conf: mode === 'Secondary' ? { warm: true } : null,
      shard_number: shard.shardNumber,
      shard_count: shard.shardCount,
      shard_stripe_size: shard.stripeSize,
      tenant_conf: {},
    };
    const { attempts, failures } = await this.http.request(node, 'PUT', `/v1/tenant/${shard.id}/location_config`, { body, check: checkLocationConfigResponse });
    return { attempts, failures };
  }

  /** `POST …/secondary/download?wait_ms=`: 200 = done, 202 = not yet; bounded by `downloadWaitMs`. */
  private async waitForDownload(node: NodeRuntime, shardId: string, onRetried: (r: { attempts: number; failures: string[] }) => void): Promise<void> {
    const { clock, downloadWaitMs, requestTimeoutMs } = this.config;
    const deadline = clock.now() + downloadWaitMs;
    for (;;) {
      const left = Math.max(0, deadline - clock.now());
      const { status, json, attempts, failures } = await this.http.request<SecondaryProgress>(
        node,
        'POST',
        `/v1/tenant/${shardId}/secondary/download?wait_ms=${left}`,
        {
          okStatuses: [200, 202],
          check: checkSecondaryProgress,
          timeoutMs: requestTimeoutMs + left,
        },
      );
      if (attempts > 1) onRetried({ attempts, failures });
      if (status === 200) return;
      if (clock.now() >= deadline) {
        throw new BackendError(
          'Transient',
          `the secondary on node ${node.nodeId} had not finished downloading after ${downloadWaitMs} ms (${json.bytes_downloaded} of ${json.bytes_total} bytes)`,
          { kind: 'shard', id: shardId },
        );
      }
      await clock.sleep(Math.min(50, left));
    }
  }

  // ---------------------------------------------------------------- upcalls

  /** `POST /upcall/v1/re-attach`: null for an unknown node (the listener answers 404). */
  reAttach(request: ReAttachRequest): ReAttachResponse | null {
    const nodeId = String(request.node_id);
    const node = this.nodes.get(nodeId);
    if (!node) return null;
    this.http.abortNode(nodeId);
    const tenants: ReAttachResponse['tenants'] = [];
    for (const shard of [...this.shards.values()].sort((a, b) => byId(a.id, b.id))) {
      const m = this.migrations.get(shard.id);
      const u = this.unsettled.get(shard.id);
      if (shard.attachedNodeId === nodeId) {
        if (m?.phase === 'committed') {
          // The new generation is already the destination's: the migration decides where the shard ends.
          tenants.push({ id: shard.id, gen: null, mode: 'Secondary' });
        } else {
          shard.generation += 1;
          if (m) m.superseded = true;
          // While another node of an unsettled shard is unconfirmed, AttachedMulti (resync upgrades it).
          const others = u ? [...u.pending].some((n) => n !== nodeId) : false;
          const mode: LocationConfigMode = others ? 'AttachedMulti' : 'AttachedSingle';
          if (u) {
            u.attachedAs = mode;
            u.generationMayBeOn = nodeId;
            if (!others) u.pending.delete(nodeId);
          }
          tenants.push({ id: shard.id, gen: shard.generation, mode });
        }
      } else if (shard.secondaryNodeIds.includes(nodeId)) {
        tenants.push({ id: shard.id, gen: null, mode: 'Secondary' });
        if (u) {
          u.pending.delete(nodeId);
          if (u.generationMayBeOn === nodeId) u.generationMayBeOn = null;
        }
      }
      if (u && !u.pending.size) this.unsettled.delete(shard.id);
    }
    this.persist();
    const now = this.config.clock.now();
    node.lastOkAt = now;
    node.reattachedAt = now;
    this.config.log.info({ node: nodeId, shards: tenants.length }, `pageserver ${nodeId} re-attached with ${tenants.length} shard location(s)`);
    if (node.availability !== 'WARMING_UP') {
      node.availability = 'WARMING_UP';
      this.emit({ type: 'nodeChanged', node: this.toNode(node) });
    }
    this.emit({ type: 'nodeReattached', nodeId });
    return { tenants };
  }

  /**
   * `POST /upcall/v1/validate`: a generation is valid only if it is the one last issued for
   * the shard. Older ones are stale; newer ones were never issued by this state (it was
   * lost or rolled back), so they are refused as well. Unknown shards are invalid.
   */
  validate(request: ValidateRequest): ValidateResponse {
    return {
      tenants: request.tenants.map((t) => ({ id: t.id, valid: this.shards.get(t.id)?.generation === t.gen })),
    };
  }

  // ---------------------------------------------------------------- lifecycle

  private assertOpen(): void {
    if (this.closed) throw new BackendError('Unavailable', 'the pageserver backend is closed');
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.cancelHeartbeat?.();
    this.http.close();
    await Promise.allSettled([...this.migrations.values()].map((m) => m.promise));
    this.events.clear();
  }
}
