import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { wallClock, Waits, type SimClock } from '../common/clock.ts';
import { parseBody, REQUESTS_PATH, RequestLog, senderOf, type LoggedRequest } from '../common/request-log.ts';
import { humantimeMs, RemoteHeatmaps } from './heatmaps.ts';
import type { LocationConfigMeter } from './meter.ts';
import { SafetyChecker } from './safety.ts';
import { parseShardId } from './shard-id.ts';
import { formatLsn, parseLsn, WalStreams } from './wal.ts';

/**
 * One simulated Neon pageserver: a real HTTP server on 127.0.0.1 (port 0) that implements
 * the endpoints Lockkeeper uses, with Neon's JSON field names:
 *
 * - `GET /v1/location_config` → `{tenant_shards: [[tenant_shard_id, LocationConfig|null]]}`
 * - `GET /v1/location_config/:tenant_shard_id` → LocationConfig (404 when absent)
 * - `PUT /v1/tenant/:tenant_shard_id/location_config[?flush_ms=&lazy=]` (LocationConfig, unknown fields refused)
 *   → `{shards: [{shard_id, node_id}], stripe_size}`
 * - `GET /v1/tenant/:id/timeline` → `[{timeline_id, last_record_lsn, …}]` (attached locations only)
 * - `POST /v1/tenant/:id/wait_lsn` `{"<timeline_id>": "<lsn>", …, "timeout": {secs, nanos}}` → 200 / 202 / 404
 * - `POST /v1/tenant/:id/secondary/download?wait_ms=` → 200 done / 202 not yet, SecondaryProgress
 * - `GET /v1/tenant/:id/secondary/status` → SecondaryProgress
 * - `GET /v1/utilization` → PageserverUtilization
 *
 * Strict as Neon is (simulators/README.md lists every refusal). Errors use Neon's
 * `{"msg": …}` body. Time is the `clock` option's (the wall clock by default): long polls,
 * latencies, downloads and WAL catch-up move only with it. `boot()` (and `restart()`) call
 * the controller's re-attach upcall — with `register` built from `metadata` when given
 * (neon:L2) — and apply its answer.
 */

/** Resolves when the exchange is over: answered, or the caller closed the connection. */
/** The simulator's own route (not Neon's): `PUT {"held": true|false}` holds or lets through every `PUT …/location_config` (a test's pause); `GET` answers `{held, waiting}`, how many wait there now. */
export const LOCATION_CONFIG_HOLD_PATH = '/simulator/v1/location-config-hold';

const closed = (res: ServerResponse) =>
  new Promise<void>((resolve) => (res.destroyed || res.writableFinished ? resolve() : res.once('close', () => resolve())));

export const MODES = ['AttachedSingle', 'AttachedMulti', 'AttachedStale', 'Secondary', 'Detached'] as const;
export type Mode = (typeof MODES)[number];
const ATTACHED: readonly string[] = ['AttachedSingle', 'AttachedMulti', 'AttachedStale'];
const LOCATION_FIELDS = new Set(['mode', 'generation', 'secondary_conf', 'shard_number', 'shard_count', 'shard_stripe_size', 'tenant_conf']);
const TIMELINE_ID = /^[0-9a-f]{32}$/;

interface Location {
  mode: Exclude<Mode, 'Detached'>;
  generation: number | null;
  warm: boolean;
  shardNumber: number;
  shardCount: number;
  stripeSize: number;
  tenantConf: Record<string, unknown>;
  bytesTotal: number;
  /** Download progress at `at` (clock ms). */
  bytesDownloadedAt: number;
  at: number;
  /** Secondaries: when the heatmap it holds was uploaded (null: none yet). */
  heatmapAt: number | null;
  /** Secondaries: it follows the uploads made after this time (when it had no heatmap yet). */
  followsFrom: number;
  /** An attached location that has not caught up yet: its LSNs stay here until `until`. */
  lagging: { lsns: Map<string, number>; until: number } | null;
}

/**
 * `timeout`: the request is held unanswered and not applied; `lostAnswer`: it is applied,
 * then held unanswered (the pageserver did it, the caller cannot know).
 */
export type FaultKind = { status: number } | 'timeout' | 'lostAnswer' | 'malformed';

export interface Fault {
  method?: string;
  /** Matched against the path (without query). */
  path?: RegExp;
  kind: FaultKind;
  /** How many matching requests it hits (default: all until cleared). */
  times?: number;
  /** Lets this many matching requests through first. */
  skip?: number;
}

/** Seeded random faults on every request (a fault campaign): transient failures and latency spikes. */
export interface Chaos {
  /** A seeded random number in [0, 1). */
  random: () => number;
  /** Share of requests answered 503 at once: a transient failure, which Neon's callers retry. */
  failureRate: number;
  /** Share of `PUT …/location_config` that take `spikeFactor` times the set latency. */
  spikeRate: number;
  spikeFactor: number;
  /** Told of each fault injected (a campaign counts them). */
  onFault?: (kind: 'failure' | 'spike') => void;
}

export interface SeedLocation {
  mode: Exclude<Mode, 'Detached'>;
  generation?: number | null;
  bytesTotal?: number;
  /** Secondaries: how much is downloaded (default: all). */
  bytesDownloaded?: number;
  /** Secondaries: false = no heatmap yet (lag unknown). */
  heatmap?: boolean;
  /** The location's tenant config (default `{}`). */
  tenantConf?: Record<string, unknown>;
  /** Default: 32768 for a sharded tenant, 0 otherwise. */
  stripeSize?: number;
}

/** What a pageserver's `metadata.json` holds (Neon `pageserver/src/bin/pageserver.rs`), from which its re-attach `register` is built. */
export interface PageserverMetadata {
  postgres_host: string;
  postgres_port: number;
  http_host: string;
  http_port: number;
  https_port?: number | null;
  grpc_host?: string | null;
  grpc_port?: number | null;
  availability_zone_id: string;
}

/** Told of each request to one of Neon's routes as it arrives, and of each answer sent (tests check them against Neon's schemas). */
export interface ExchangeObserver {
  request(entry: LoggedRequest): void;
  answer(entry: LoggedRequest, status: number, body: unknown): void;
}

export interface PageserverSimOptions {
  nodeId: number;
  safety: SafetyChecker;
  authToken?: string;
  downloadBytesPerSecond?: number;
  clock?: SimClock;
  /** Shared with the other simulators of a test, so that the order of calls across them is kept. */
  log?: RequestLog;
  /** Shared WAL of the tenants (the safekeepers' view). */
  wal?: WalStreams;
  /** With it, re-attach upcalls carry `register` (self-registration, neon:L2). */
  metadata?: PageserverMetadata;
  /** Shared heatmaps in remote storage (the fleet's). */
  heatmaps?: RemoteHeatmaps;
  /**
   * How long a shard attached here `AttachedMulti` on an empty or secondary slot (a live
   * migration's destination, neon:C5) stays behind the WAL head, in ms of the clock: a
   * rehearsal's drawn cut-over duration. Asked once per such attach; `holdCatchUp` wins over
   * it. Absent: caught up at once.
   */
  catchUpMs?: (shardId: string, nodeId: number) => number | undefined;
  /** Shared with the other simulators of a fleet: `PUT …/location_config` requests in flight across them. */
  meter?: LocationConfigMeter;
}

/** The reads whose answers the log keeps: a shard's timeline list (neon:C2, neon:C6) and one location's config (neon:C7's origin check). */
const KEPT_ANSWERS = /^\/v1\/(tenant\/[^/]+\/timeline|location_config\/[^/]+)$/;

export class PageserverSim {
  readonly nodeId: number;
  url = '';
  /** The controller's upcall base URL (for `boot` and `restart`). */
  controllerUrl = '';
  /** Sent as `Authorization: Bearer …` on upcalls, as Neon's `control_plane_api_token`. */
  controllerToken: string | undefined;
  /** `METHOD /path` of every request received, in order. */
  readonly requests: string[] = [];
  readonly log: RequestLog;
  readonly wal: WalStreams;
  readonly heatmaps: RemoteHeatmaps;
  metadata: PageserverMetadata | undefined;
  private readonly clock: SimClock;
  private readonly waits = new Waits();
  private readonly server: Server;
  private readonly locations = new Map<string, Location>();
  private readonly highestSeen = new Map<string, number>();
  /** Per shard: how long a location attached here next stays behind the WAL head. */
  private readonly catchUpHolds = new Map<string, number>();
  /** Per shard: timelines deleted here. */
  private readonly droppedTimelines = new Map<string, Set<string>>();
  private readonly faults: Fault[] = [];
  private readonly held = new Set<ServerResponse>();
  /** Each request's entry in the log, for its answer. */
  private readonly logged = new WeakMap<ServerResponse, LoggedRequest>();
  /** Responses whose answer is lost (`lostAnswer`): the request is applied, nothing is sent. */
  private readonly muted = new WeakSet<ServerResponse>();
  private answering = true;
  private releaseHeld: () => void = () => {};
  private heldReleased: Promise<void> = new Promise((resolve) => (this.releaseHeld = resolve));
  /** Bumped by every restart: requests received before it are never applied. */
  private epoch = 0;
  /** Called with each accepted `PUT …/location_config` body, before it is applied. */
  onPut: ((shardId: string, body: Record<string, unknown>) => void) | undefined;
  private latencyMs = 0;
  private chaos: Chaos | null = null;
  /** While set, `PUT …/location_config` requests wait here, before they arrive (holdLocationConfigs). */
  private configHold: { released: Promise<void>; release: () => void } | null = null;
  /** `PUT …/location_config` requests waiting at the hold now. */
  heldLocationConfigs = 0;
  private downloadBytesPerSecond: number;

  /** Called with every simulator as it is made (tests attach schema checks here). */
  static instrument: ((sim: PageserverSim) => void) | null = null;
  observer: ExchangeObserver | undefined;

  constructor(private readonly options: PageserverSimOptions) {
    this.nodeId = options.nodeId;
    this.clock = options.clock ?? wallClock;
    this.log = options.log ?? new RequestLog();
    this.wal = options.wal ?? new WalStreams();
    this.heatmaps = options.heatmaps ?? new RemoteHeatmaps();
    this.metadata = options.metadata;
    this.downloadBytesPerSecond = options.downloadBytesPerSecond ?? Infinity;
    this.server = createServer((req, res) => void this.handle(req, res));
    PageserverSim.instrument?.(this);
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    this.dropHeld();
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }

  /** Requests waiting on the clock or held unanswered: nothing happens to them until time moves or a test acts. */
  get waiting(): number {
    return this.waits.pending;
  }

  /** Re-attach upcalls this pageserver has sent and not yet had answered. */
  get upcallsInFlight(): number {
    return this.upcalls;
  }

  private upcalls = 0;

  // ------------------------------------------------------------ test controls

  seed(shardId: string, seed: SeedLocation): void {
    const shard = parseShardId(shardId);
    if (!shard) throw new Error(`not a tenant shard id: ${shardId}`);
    const total = seed.bytesTotal ?? 1024 * 1024;
    const loc: Location = {
      mode: seed.mode,
      generation: seed.generation ?? null,
      warm: seed.mode === 'Secondary',
      shardNumber: shard.shardNumber,
      shardCount: shard.shardCount,
      stripeSize: seed.stripeSize ?? (shard.shardCount ? 32768 : 0),
      tenantConf: structuredClone(seed.tenantConf ?? {}),
      bytesTotal: total,
      bytesDownloadedAt: seed.mode === 'Secondary' ? Math.min(total, seed.bytesDownloaded ?? total) : total,
      at: this.clock.now(),
      heatmapAt: seed.mode === 'Secondary' && seed.heatmap !== false ? this.clock.now() : null,
      followsFrom: this.clock.now(),
      lagging: null,
    };
    // An attached location found running has uploaded its heatmap.
    if (seed.mode !== 'Secondary') this.heatmaps.upload(shardId, this.clock.now());
    if (loc.generation !== null) {
      this.highestSeen.set(shardId, Math.max(this.highestSeen.get(shardId) ?? 0, loc.generation));
      this.options.safety.issue(shardId, loc.generation);
    }
    this.set(shardId, loc);
  }

  /** The pageserver's own view: mode and generation per shard. */
  view(): Record<string, { mode: Mode; generation: number | null }> {
    const out: Record<string, { mode: Mode; generation: number | null }> = {};
    for (const [id, l] of [...this.locations].sort(([a], [b]) => (a < b ? -1 : 1))) out[id] = { mode: l.mode, generation: l.generation };
    return out;
  }

  /** The tenant config this pageserver holds for the shard (what the last `location_config` body said), or null when it holds nothing. */
  tenantConf(shardId: string): Record<string, unknown> | null {
    const l = this.locations.get(shardId);
    return l ? structuredClone(l.tenantConf) : null;
  }

  location(shardId: string): { mode: Mode; generation: number | null; warm: boolean } | null {
    const l = this.locations.get(shardId);
    return l ? { mode: l.mode, generation: l.generation, warm: l.warm } : null;
  }

  /** Shards attached here (any Attached* mode). */
  attached(): string[] {
    return [...this.locations]
      .filter(([, l]) => ATTACHED.includes(l.mode))
      .map(([id]) => id)
      .sort();
  }

  setDownloadRate(bytesPerSecond: number): void {
    const now = this.clock.now();
    for (const [id, l] of this.locations) {
      this.followHeatmaps(id, l, now);
      l.bytesDownloadedAt = this.downloaded(l, now);
      l.at = now;
    }
    this.downloadBytesPerSecond = bytesPerSecond;
  }

  /** Sets a secondary's progress (and gives it a heatmap). */
  setSecondaryProgress(shardId: string, bytesDownloaded: number, bytesTotal?: number): void {
    const l = this.locations.get(shardId);
    if (!l) throw new Error(`node ${this.nodeId} holds no location of ${shardId}`);
    this.followHeatmaps(shardId, l, this.clock.now());
    if (bytesTotal !== undefined) l.bytesTotal = bytesTotal;
    l.bytesDownloadedAt = Math.min(bytesDownloaded, l.bytesTotal);
    l.at = this.clock.now();
    l.heatmapAt ??= this.clock.now();
  }

  /**
   * The next time the shard is attached here it stays behind the WAL head for `ms` of the
   * clock (it is still replaying WAL), then follows the head (neon:C6).
   */
  holdCatchUp(shardId: string, ms: number): void {
    this.catchUpHolds.set(shardId, ms);
  }

  /** The shard attached here has caught up with the WAL now (ends a `holdCatchUp` early). */
  endCatchUp(shardId: string): void {
    const l = this.locations.get(shardId);
    if (l?.lagging) l.lagging = { ...l.lagging, until: this.clock.now() };
    this.catchUpHolds.delete(shardId);
  }

  /** The timeline is deleted on this pageserver (it no longer lists it). */
  dropTimeline(shardId: string, timelineId: string): void {
    const set = this.droppedTimelines.get(shardId) ?? new Set<string>();
    set.add(timelineId);
    this.droppedTimelines.set(shardId, set);
  }

  /** Per timeline, the last record LSN this pageserver has for an attached shard; null when it is not attached here. */
  lsns(shardId: string): Record<string, string> | null {
    const l = this.locations.get(shardId);
    if (!l || !ATTACHED.includes(l.mode)) return null;
    return Object.fromEntries([...this.timelineLsns(shardId, l)].map(([id, lsn]) => [id, formatLsn(lsn)]));
  }

  /** Delay before each `PUT …/location_config` is handled (slow cut-overs), on the clock. */
  setLatency(ms: number): void {
    this.latencyMs = ms;
  }

  /**
   * Holds every `PUT …/location_config` from now on as a slow network would, before it reaches
   * the pageserver: not logged, not applied, until `held` is false again. One whose sender has
   * gone by then (a killed gateway) never arrives. Other requests (heartbeats, reads) go on.
   */
  holdLocationConfigs(held: boolean): void {
    if (held && !this.configHold) {
      let release = () => {};
      const released = new Promise<void>((resolve) => (release = resolve));
      this.configHold = { released, release };
    } else if (!held && this.configHold) {
      this.configHold.release();
      this.configHold = null;
    }
  }

  /** Random faults on every request from now on (null: none). */
  setChaos(chaos: Chaos | null): void {
    this.chaos = chaos;
  }

  inject(fault: Fault): void {
    this.faults.push({ ...fault });
  }

  clearFaults(): void {
    this.faults.length = 0;
  }

  /** Requests are accepted but never answered (until `resume`, which drops them unanswered). */
  stopAnswering(): void {
    this.answering = false;
    this.options.safety.setReachable(String(this.nodeId), false);
  }

  resume(): void {
    this.dropHeld();
    this.answering = true;
    this.options.safety.setReachable(String(this.nodeId), true);
  }

  /**
   * The pageserver process restarts: requests in flight are lost, it is down for `downMs`
   * of the clock, then it boots (`boot`) before it answers again.
   */
  async restart({ downMs = 0, retryEveryMs }: { downMs?: number; retryEveryMs?: number } = {}): Promise<void> {
    this.epoch++;
    this.answering = false;
    this.options.safety.setReachable(String(this.nodeId), false);
    this.dropHeld();
    if (downMs) await this.waits.sleep(this.clock, downMs);
    await this.boot(retryEveryMs === undefined ? {} : { retryEveryMs });
  }

  /**
   * Start-up: `POST <controller>/upcall/v1/re-attach` with `{node_id, register?}` and the
   * answer applied (locations not named are detached, neon:H6), then it answers requests.
   * Neon's pageserver retries the upcall until it succeeds and serves nothing meanwhile:
   * with `retryEveryMs` this does so on the clock; without, a refusal rejects.
   */
  async boot({ retryEveryMs }: { retryEveryMs?: number } = {}): Promise<void> {
    this.answering = false;
    this.options.safety.setReachable(String(this.nodeId), false);
    for (;;) {
      try {
        await this.reAttach();
        break;
      } catch (e) {
        if (retryEveryMs === undefined) throw e;
        await this.waits.sleep(this.clock, retryEveryMs);
      }
    }
    this.answering = true;
    this.options.safety.setReachable(String(this.nodeId), true);
  }

  // ------------------------------------------------------------ internals

  private async reAttach(): Promise<void> {
    const m = this.metadata;
    const register = m && {
      listen_pg_addr: m.postgres_host,
      listen_pg_port: m.postgres_port,
      listen_http_addr: m.http_host,
      listen_http_port: m.http_port,
      listen_https_port: m.https_port ?? null,
      listen_grpc_addr: m.grpc_host ?? null,
      listen_grpc_port: m.grpc_port ?? null,
      availability_zone_id: m.availability_zone_id,
    };
    this.upcalls++;
    let res: Response;
    let body: { tenants?: { id: string; gen: number | null; mode: Mode }[]; msg?: string };
    try {
      res = await fetch(`${this.controllerUrl}/upcall/v1/re-attach`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(this.controllerToken ? { authorization: `Bearer ${this.controllerToken}` } : {}) },
        body: JSON.stringify({ node_id: this.nodeId, ...(register && { register }) }),
      });
      body = (await res.json()) as typeof body;
    } finally {
      this.upcalls--;
    }
    if (res.status !== 200 || !body.tenants) throw new Error(`re-attach of node ${this.nodeId} answered ${res.status}: ${JSON.stringify(body)}`);
    const named = new Set(body.tenants.map((t) => t.id));
    for (const id of [...this.locations.keys()]) if (!named.has(id)) this.set(id, null);
    for (const t of body.tenants) {
      const shard = parseShardId(t.id);
      if (!shard) throw new Error(`re-attach named a bad id ${t.id}`);
      const prev = this.locations.get(t.id);
      const base: Location = prev ?? this.emptyLocation(shard, 0);
      if (ATTACHED.includes(t.mode)) {
        if (t.gen === null || t.gen < (this.highestSeen.get(t.id) ?? 0)) {
          this.options.safety.violations.push(`node ${this.nodeId}: re-attach gave shard ${t.id} generation ${t.gen}, below ${this.highestSeen.get(t.id)}`);
          continue;
        }
        this.highestSeen.set(t.id, t.gen);
        this.options.safety.issue(t.id, t.gen);
        this.set(t.id, { ...base, mode: t.mode as Location['mode'], generation: t.gen, lagging: null });
      } else if (t.mode === 'Secondary') {
        this.set(t.id, {
          ...base,
          mode: 'Secondary',
          generation: null,
          warm: true,
          ...this.asSecondary(t.id, base, prev, this.clock.now()),
          lagging: null,
        });
      } else {
        this.set(t.id, null);
      }
    }
  }

  private emptyLocation(shard: { shardNumber: number; shardCount: number }, stripeSize: number): Location {
    return {
      mode: 'Secondary',
      generation: null,
      warm: false,
      shardNumber: shard.shardNumber,
      shardCount: shard.shardCount,
      stripeSize,
      tenantConf: {},
      bytesTotal: 1024 * 1024,
      bytesDownloadedAt: 0,
      at: this.clock.now(),
      heatmapAt: null,
      followsFrom: this.clock.now(),
      lagging: null,
    };
  }

  /**
   * The download state of a location becoming (or staying) Secondary: an attached one keeps
   * its layers and its own latest heatmap; a new one takes the newest heatmap uploaded so far
   * and downloads its layers; an existing secondary keeps what it had.
   */
  private asSecondary(shardId: string, base: Location, prev: Location | undefined, now: number) {
    if (prev && ATTACHED.includes(prev.mode)) return { bytesDownloadedAt: prev.bytesTotal, at: now, heatmapAt: now, followsFrom: now };
    if (prev) {
      this.followHeatmaps(shardId, prev, now);
      return { bytesDownloadedAt: this.downloaded(prev, now), at: now, heatmapAt: prev.heatmapAt, followsFrom: prev.followsFrom };
    }
    return { bytesDownloadedAt: this.downloaded(base, now), at: now, heatmapAt: this.heatmaps.latest(shardId, now), followsFrom: now };
  }

  /**
   * A secondary picks up each heatmap uploaded since the one it holds (Neon's secondary
   * downloader): the layers rewritten in between are downloaded again, at the download rate.
   */
  private followHeatmaps(shardId: string, l: Location, now: number): void {
    if (l.mode !== 'Secondary') return;
    for (const h of this.heatmaps.uploadsBetween(shardId, l.heatmapAt ?? l.followsFrom, now)) {
      const rewritten = l.heatmapAt === null ? 0 : Math.min(l.bytesTotal, this.heatmaps.churnBetween(l.heatmapAt, h));
      l.bytesDownloadedAt = Math.max(0, this.downloaded(l, h) - rewritten);
      l.at = h;
      l.heatmapAt = h;
    }
  }

  private set(id: string, loc: Location | null): void {
    if (loc) this.locations.set(id, loc);
    else this.locations.delete(id);
    // Neon's heatmap uploader (pageserver/src/tenant/secondary/heatmap_uploader.rs): attached
    // locations upload every heatmap_period while it is above zero; stale attachments never.
    const uploads = loc && (loc.mode === 'AttachedSingle' || loc.mode === 'AttachedMulti');
    this.heatmaps.schedule(id, this.nodeId, uploads ? humantimeMs(loc.tenantConf.heatmap_period) : null, this.clock.now());
    this.options.safety.record(String(this.nodeId), id, loc ? { mode: loc.mode, generation: loc.generation } : null);
  }

  private downloaded(l: Location, now: number): number {
    if (l.mode !== 'Secondary') return l.bytesTotal;
    const rate = this.downloadBytesPerSecond;
    if (rate === Infinity) return l.bytesTotal;
    return Math.min(l.bytesTotal, Math.floor(l.bytesDownloadedAt + (rate * Math.max(0, now - l.at)) / 1000));
  }

  /** When the secondary will have downloaded everything (Infinity: never, at this rate). */
  private downloadDoneAt(l: Location, now: number): number {
    const left = l.bytesTotal - this.downloaded(l, now);
    if (left <= 0) return now;
    const rate = this.downloadBytesPerSecond;
    return rate > 0 ? now + Math.ceil((left * 1000) / rate) : Infinity;
  }

  private progress(shardId: string, l: Location) {
    this.followHeatmaps(shardId, l, this.clock.now());
    const downloaded = this.downloaded(l, this.clock.now());
    const layersTotal = Math.max(1, Math.ceil(l.bytesTotal / 65536));
    return {
      heatmap_mtime: l.heatmapAt === null ? null : new Date(l.heatmapAt).toISOString(),
      layers_downloaded: Math.floor((layersTotal * downloaded) / Math.max(1, l.bytesTotal)),
      layers_total: layersTotal,
      bytes_downloaded: downloaded,
      bytes_total: l.bytesTotal,
    };
  }

  /** The timelines an attached location lists, with their last record LSNs. */
  private timelineLsns(shardId: string, l: Location): Map<string, number> {
    const dropped = this.droppedTimelines.get(shardId);
    const out = new Map<string, number>();
    const behind = l.lagging && this.clock.now() < l.lagging.until ? l.lagging : null;
    for (const [id, head] of this.wal.timelines(shardId)) {
      if (dropped?.has(id)) continue;
      out.set(id, behind ? Math.min(head, behind.lsns.get(id) ?? head) : head);
    }
    return out;
  }

  private dropHeld(): void {
    for (const res of this.held) res.socket?.destroy();
    this.held.clear();
    this.releaseHeld();
    this.heldReleased = new Promise((resolve) => (this.releaseHeld = resolve));
  }

  /** Keeps the request unanswered until `dropHeld` or until the caller gives up; counted as waiting meanwhile. */
  private async hold(res: ServerResponse): Promise<void> {
    this.held.add(res);
    await this.waits.hold(Promise.race([this.heldReleased, closed(res)]));
    this.held.delete(res);
  }

  /** Sleeps on the clock while handling `res`; a caller that gave up ends the wait. */
  private setHold(method: string, raw: string, res: ServerResponse): void {
    // A test waits for a request to be held (one in flight from the gateway) before it acts.
    if (method === 'GET') return this.reply(res, 200, { held: this.configHold !== null, waiting: this.heldLocationConfigs });
    if (method !== 'PUT') return this.reply(res, 405, { msg: `Method ${method} not allowed on ${LOCATION_CONFIG_HOLD_PATH}` });
    const held = (parseBody(raw) as { held?: unknown } | null)?.held;
    if (typeof held !== 'boolean') return this.reply(res, 400, { msg: 'Bad request: expected {"held": true|false}' });
    this.holdLocationConfigs(held);
    this.reply(res, 200, { held });
  }

  private sleepFor(res: ServerResponse, ms: number): Promise<void> {
    return this.waits.sleep(this.clock, ms, closed(res));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://sim');
    const method = req.method ?? 'GET';
    if (url.pathname === REQUESTS_PATH && method === 'GET') return this.reply(res, 200, { items: this.log.entries });
    let raw = '';
    for await (const chunk of req) raw += chunk;
    if (url.pathname === LOCATION_CONFIG_HOLD_PATH) return this.setHold(method, raw, res);
    while (this.configHold && method === 'PUT' && url.pathname.endsWith('/location_config')) {
      this.heldLocationConfigs++;
      await Promise.race([this.configHold.released, closed(res)]);
      this.heldLocationConfigs--;
      if (res.destroyed) return;
    }
    this.requests.push(`${method} ${url.pathname}`);
    const entry = this.log.record({
      source: `node ${this.nodeId}`,
      method,
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      body: parseBody(raw),
      at: this.clock.now(),
      ...senderOf(req.headers),
    });
    this.logged.set(res, entry);
    this.observer?.request(entry);
    const meter = this.options.meter;
    if (meter && method === 'PUT' && url.pathname.endsWith('/location_config')) {
      meter.arrived();
      res.once('close', () => meter.left());
    }
    if (!this.answering) return this.hold(res);
    const fault = this.faults.find(
      (f) => (!f.method || f.method === method) && (!f.path || f.path.test(url.pathname)) && (f.times === undefined || f.times > 0),
    );
    if (fault && fault.skip) fault.skip--;
    else if (fault) {
      if (fault.times !== undefined) fault.times--;
      if (fault.kind === 'timeout') return this.hold(res);
      if (fault.kind === 'lostAnswer') {
        this.muted.add(res);
        await this.route(method, url, raw, res).catch(() => {});
        return this.hold(res);
      }
      if (fault.kind === 'malformed') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"tenant_shards": [oops');
        return;
      }
      return this.reply(res, fault.kind.status, { msg: `injected fault ${fault.kind.status}` });
    }
    if (this.options.authToken && req.headers.authorization !== `Bearer ${this.options.authToken}`) {
      return this.reply(res, 401, { msg: 'Unauthorized: missing or bad token' });
    }
    if (this.chaos && this.chaos.random() < this.chaos.failureRate) {
      this.chaos.onFault?.('failure');
      return this.reply(res, 503, { msg: 'injected transient failure' });
    }
    try {
      await this.route(method, url, raw, res);
    } catch (e) {
      this.reply(res, 500, { msg: (e as Error).message });
    }
  }

  private reply(res: ServerResponse, status: number, body: unknown): void {
    if (res.writableEnded || res.destroyed || this.muted.has(res)) return;
    const entry = this.logged.get(res);
    if (entry) {
      this.log.answered(entry, status, entry.method === 'GET' && KEPT_ANSWERS.test(entry.path) ? body : undefined);
      this.observer?.answer(entry, status, body);
      const meter = this.options.meter;
      if (meter?.onAnswered && entry.method === 'PUT' && status < 300) {
        const put = /^\/v1\/tenant\/([^/]+)\/location_config$/.exec(entry.path);
        if (put) meter.onAnswered(put[1]!, this.nodeId, String((entry.body as { mode?: unknown } | null)?.mode), this.clock.now());
      }
    }
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  }

  private locationConfigOf(l: Location) {
    return {
      mode: l.mode,
      generation: l.generation,
      secondary_conf: l.mode === 'Secondary' ? { warm: l.warm } : null,
      shard_number: l.shardNumber,
      shard_count: l.shardCount,
      shard_stripe_size: l.stripeSize,
      tenant_conf: l.tenantConf,
    };
  }

  private async route(method: string, url: URL, raw: string, res: ServerResponse): Promise<void> {
    const path = url.pathname;
    if (method === 'GET' && path === '/v1/utilization') {
      return this.reply(res, 200, {
        disk_usage_bytes: 1 << 30,
        free_space_bytes: 9 << 30,
        disk_wanted_bytes: 1 << 30,
        disk_usable_pct: 100,
        shard_count: this.locations.size,
        max_shard_count: 20000,
        utilization_score: this.locations.size,
        captured_at: new Date(this.clock.now()).toISOString(),
      });
    }
    if (method === 'GET' && path === '/v1/location_config') {
      return this.reply(res, 200, { tenant_shards: [...this.locations].map(([id, l]) => [id, this.locationConfigOf(l)]) });
    }
    const one = /^\/v1\/location_config\/([^/]+)$/.exec(path);
    if (one && method === 'GET') {
      const shardId = decodeURIComponent(one[1]!);
      if (!parseShardId(shardId)) return this.reply(res, 400, { msg: `Bad request: invalid tenant shard id ${shardId}` });
      const l = this.locations.get(shardId);
      if (!l) return this.reply(res, 404, { msg: 'NotFound: Tenant shard not found' });
      return this.reply(res, 200, this.locationConfigOf(l));
    }
    const m = /^\/v1\/tenant\/([^/]+)\/(location_config|secondary\/download|secondary\/status|timeline|wait_lsn|heatmap_upload)$/.exec(path);
    if (!m) return this.reply(res, 404, { msg: `Not Found: ${method} ${path}` });
    const shardId = decodeURIComponent(m[1]!);
    const shard = parseShardId(shardId);
    if (!shard) return this.reply(res, 400, { msg: `Bad request: invalid tenant shard id ${shardId}` });
    if (m[2] === 'location_config' && method === 'PUT') return this.putLocation(shardId, shard, url, raw, res);
    if (m[2] === 'timeline' && method === 'GET') return this.listTimelines(shardId, res);
    if (m[2] === 'wait_lsn' && method === 'POST') return this.waitLsn(shardId, raw, res);
    if (m[2] === 'heatmap_upload' && method === 'POST') return this.uploadHeatmap(shardId, res);
    if (m[2] === 'timeline' || m[2] === 'wait_lsn' || m[2] === 'location_config' || m[2] === 'heatmap_upload')
      return this.reply(res, 405, { msg: `Method not allowed: ${method} ${path}` });
    const loc = this.locations.get(shardId);
    if (!loc || loc.mode !== 'Secondary') return this.reply(res, 404, { msg: `Not Found: no secondary location of tenant shard ${shardId}` });
    if (m[2] === 'secondary/status' && method === 'GET') return this.reply(res, 200, this.progress(shardId, loc));
    if (m[2] === 'secondary/download' && method === 'POST') return this.download(shardId, url, res);
    return this.reply(res, 405, { msg: `Method not allowed: ${method} ${path}` });
  }

  private async download(shardId: string, url: URL, res: ServerResponse): Promise<void> {
    const waitMs = Number(url.searchParams.get('wait_ms') ?? 0);
    const until = this.clock.now() + (Number.isFinite(waitMs) ? Math.max(0, waitMs) : 0);
    for (;;) {
      const current = this.locations.get(shardId);
      if (!current || current.mode !== 'Secondary') return this.reply(res, 404, { msg: `Not Found: tenant shard ${shardId} is no longer secondary` });
      const now = this.clock.now();
      const p = this.progress(shardId, current);
      if (p.heatmap_mtime !== null && p.bytes_downloaded >= p.bytes_total) return this.reply(res, 200, p);
      if (now >= until) return this.reply(res, 202, p);
      const doneAt = p.heatmap_mtime === null ? Infinity : this.downloadDoneAt(current, now);
      // A heatmap uploaded meanwhile changes what is left to download.
      const upload = this.heatmaps.uploadsBetween(shardId, now, Math.min(until, doneAt))[0];
      await this.sleepFor(res, Math.min(until, doneAt, upload ?? Infinity) - now);
      if (res.destroyed) return;
    }
  }

  /** Neon's `secondary_upload_handler`: an attached location uploads its heatmap now (whatever heatmap_period says); 200 with a null body. */
  private uploadHeatmap(shardId: string, res: ServerResponse): void {
    const l = this.locations.get(shardId);
    if (!l || !ATTACHED.includes(l.mode)) return this.reply(res, 404, { msg: `NotFound: Tenant shard ${shardId} is not attached here` });
    this.heatmaps.upload(shardId, this.clock.now());
    this.reply(res, 200, null);
  }

  private listTimelines(shardId: string, res: ServerResponse): void {
    const l = this.locations.get(shardId);
    if (!l || !ATTACHED.includes(l.mode)) return this.reply(res, 404, { msg: `NotFound: Tenant ${shardId} not found` });
    const tenantId = shardId.slice(0, 32);
    this.reply(
      res,
      200,
      [...this.timelineLsns(shardId, l)].map(([timelineId, lsn]) => ({
        tenant_id: tenantId,
        timeline_id: timelineId,
        last_record_lsn: formatLsn(lsn),
        disk_consistent_lsn: formatLsn(lsn),
        state: 'Active',
        // No GC in the simulator: every LSN since the timeline's start is readable.
        min_readable_lsn: formatLsn(0),
      })),
    );
  }

  /** Neon's `wait_lsn_handler`: 404 when not attached here or none of the timelines exist; else waits up to `timeout`: 200 all caught up, 202 not yet. */
  private async waitLsn(shardId: string, raw: string, res: ServerResponse): Promise<void> {
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(raw) as Record<string, unknown>;
    } catch (e) {
      return this.reply(res, 400, { msg: `Bad request: body is not JSON: ${(e as Error).message}` });
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      return this.reply(res, 400, { msg: 'Bad request: expected a TenantWaitLsnRequest object' });
    const timeout = body.timeout as { secs?: unknown; nanos?: unknown } | undefined;
    if (typeof timeout !== 'object' || timeout === null || !Number.isInteger(timeout.secs) || !Number.isInteger(timeout.nanos))
      return this.reply(res, 400, { msg: 'Bad request: missing field `timeout` ({"secs": …, "nanos": …})' });
    const wanted = new Map<string, number>();
    for (const [key, value] of Object.entries(body)) {
      if (key === 'timeout') continue;
      const lsn = parseLsn(value);
      if (!TIMELINE_ID.test(key) || lsn === null)
        return this.reply(res, 400, { msg: `Bad request: invalid timeline entry ${JSON.stringify(key)}: ${JSON.stringify(value)}` });
      wanted.set(key, lsn);
    }
    const l = this.locations.get(shardId);
    if (!l || !ATTACHED.includes(l.mode)) return this.reply(res, 404, { msg: `NotFound: Tenant shard ${shardId} is not attached here` });
    const until = this.clock.now() + (timeout.secs as number) * 1000 + Math.floor((timeout.nanos as number) / 1e6);
    for (;;) {
      const current = this.locations.get(shardId);
      if (!current || !ATTACHED.includes(current.mode)) return this.reply(res, 404, { msg: `NotFound: Tenant shard ${shardId} is not attached here` });
      const have = this.timelineLsns(shardId, current);
      const relevant = [...wanted].filter(([id]) => have.has(id));
      if (!relevant.length) return this.reply(res, 404, null);
      if (relevant.every(([id, lsn]) => have.get(id)! >= lsn)) return this.reply(res, 200, null);
      const now = this.clock.now();
      if (now >= until) return this.reply(res, 202, null);
      const next = current.lagging ? Math.min(current.lagging.until, until) : until;
      await this.sleepFor(res, Math.max(1, next - now));
      if (res.destroyed) return;
    }
  }

  private async putLocation(shardId: string, shard: { shardNumber: number; shardCount: number }, url: URL, raw: string, res: ServerResponse): Promise<void> {
    const epoch = this.epoch;
    const spike = this.chaos !== null && this.chaos.random() < this.chaos.spikeRate;
    if (spike) this.chaos?.onFault?.('spike');
    const latencyMs = spike ? this.latencyMs * (this.chaos?.spikeFactor ?? 1) : this.latencyMs;
    if (latencyMs) await this.sleepFor(res, latencyMs);
    if (epoch !== this.epoch || !this.answering) {
      // The process restarted (or stopped answering) meanwhile: the request is lost.
      res.socket?.destroy();
      return;
    }
    const flushMs = url.searchParams.get('flush_ms');
    if (flushMs !== null && !/^[0-9]+$/.test(flushMs)) return this.reply(res, 400, { msg: `Bad request: invalid flush_ms ${JSON.stringify(flushMs)}` });
    const lazy = url.searchParams.get('lazy');
    if (lazy !== null && lazy !== 'true' && lazy !== 'false') return this.reply(res, 400, { msg: `Bad request: invalid lazy ${JSON.stringify(lazy)}` });
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(raw) as Record<string, unknown>;
    } catch (e) {
      return this.reply(res, 400, { msg: `Bad request: body is not JSON: ${(e as Error).message}` });
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return this.reply(res, 400, { msg: 'Bad request: expected a LocationConfig object' });
    const unknown = Object.keys(body).filter((k) => !LOCATION_FIELDS.has(k));
    if (unknown.length) return this.reply(res, 400, { msg: `Bad request: unknown field \`${unknown[0]}\`` });
    if (!MODES.includes(body.mode as Mode))
      return this.reply(res, 400, { msg: `Bad request: unknown variant \`${String(body.mode)}\`, expected one of ${MODES.join(', ')}` });
    if (typeof body.tenant_conf !== 'object' || body.tenant_conf === null) return this.reply(res, 400, { msg: 'Bad request: missing field `tenant_conf`' });
    const mode = body.mode as Mode;
    const prev = this.locations.get(shardId);
    if (mode === 'AttachedStale' && !(prev && ATTACHED.includes(prev.mode)))
      return this.reply(res, 400, { msg: `Bad request: AttachedStale for tenant shard ${shardId}, which is not attached here` });
    this.onPut?.(shardId, body);
    // A flush uploads the heatmap once, whatever heatmap_period says. Neon flushes only on a
    // move to AttachedStale (pageserver/src/tenant/mgr.rs, upsert_location) and ignores it elsewhere.
    if (flushMs !== null && mode === 'AttachedStale' && prev && ATTACHED.includes(prev.mode)) this.heatmaps.upload(shardId, this.clock.now());
    if (mode === 'Detached') {
      this.set(shardId, null);
      return this.reply(res, 200, { shards: [], stripe_size: null });
    }
    const now = this.clock.now();
    // A pageserver applies the body's tenant_conf as the tenant's whole config (it replaces, never merges).
    const base: Location = {
      ...(prev ?? this.emptyLocation(shard, Number(body.shard_stripe_size ?? 0))),
      tenantConf: structuredClone(body.tenant_conf as Record<string, unknown>),
    };
    if (mode === 'Secondary') {
      const warm = Boolean((body.secondary_conf as { warm?: boolean } | null)?.warm);
      this.set(shardId, { ...base, mode, generation: null, warm, ...this.asSecondary(shardId, base, prev, now), lagging: null });
    } else {
      const generation = body.generation;
      if (typeof generation !== 'number' || !Number.isInteger(generation)) return this.reply(res, 400, { msg: `Bad request: ${mode} needs a generation` });
      const highest = this.highestSeen.get(shardId) ?? 0;
      if (generation < highest) return this.reply(res, 400, { msg: `Bad request: Generation ${generation} is less than existing ${highest}` });
      this.highestSeen.set(shardId, generation);
      this.options.safety.issue(shardId, generation);
      let lagging = prev && ATTACHED.includes(prev.mode) ? prev.lagging : null;
      const hold =
        this.catchUpHolds.get(shardId) ??
        (mode === 'AttachedMulti' && !(prev && ATTACHED.includes(prev.mode)) ? this.options.catchUpMs?.(shardId, this.nodeId) : undefined);
      if (!(prev && ATTACHED.includes(prev.mode)) && hold !== undefined) {
        // Freshly attached and still replaying WAL: one byte behind every head until the hold ends.
        this.catchUpHolds.delete(shardId);
        lagging = { lsns: new Map([...this.wal.timelines(shardId)].map(([id, head]) => [id, head - 1])), until: now + hold };
      }
      this.set(shardId, { ...base, mode, generation, warm: false, bytesDownloadedAt: base.bytesTotal, at: now, lagging });
    }
    this.reply(res, 200, { shards: [{ shard_id: shardId, node_id: this.nodeId }], stripe_size: shard.shardCount > 1 ? base.stripeSize : null });
  }
}
