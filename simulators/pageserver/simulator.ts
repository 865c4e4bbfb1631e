import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SafetyChecker } from './safety.ts';
import { parseShardId } from './shard-id.ts';

/**
 * One simulated Neon pageserver: a real HTTP server on 127.0.0.1 (port 0) that implements
 * the endpoints Lockkeeper uses, with Neon's JSON field names:
 *
 * - `GET /v1/location_config` → `{tenant_shards: [[tenant_shard_id, LocationConfig|null]]}`
 * - `PUT /v1/tenant/:tenant_shard_id/location_config` (LocationConfig, unknown fields refused)
 *   → `{shards: [{shard_id, node_id}], stripe_size}`
 * - `POST /v1/tenant/:id/secondary/download?wait_ms=` → 200 done / 202 not yet, SecondaryProgress
 * - `GET /v1/tenant/:id/secondary/status` → SecondaryProgress
 * - `GET /v1/utilization` → PageserverUtilization
 *
 * Strict as Neon is: an unknown mode or field is 400; an attach without a generation, or
 * with one lower than the highest this pageserver has seen for the shard, is 400
 * ("Generation … is less than existing …", as Neon's `upsert_location` answers). Errors use
 * Neon's `{"msg": …}` body. Secondaries download at `downloadBytesPerSecond` (wall clock).
 * `restart()` calls the controller's re-attach upcall (with `controllerToken` as bearer
 * token, like Neon's `control_plane_api_token`) and applies its answer.
 */

export const MODES = ['AttachedSingle', 'AttachedMulti', 'AttachedStale', 'Secondary', 'Detached'] as const;
export type Mode = (typeof MODES)[number];
const ATTACHED: readonly string[] = ['AttachedSingle', 'AttachedMulti', 'AttachedStale'];
const LOCATION_FIELDS = new Set(['mode', 'generation', 'secondary_conf', 'shard_number', 'shard_count', 'shard_stripe_size', 'tenant_conf']);

interface Location {
  mode: Exclude<Mode, 'Detached'>;
  generation: number | null;
  warm: boolean;
  shardNumber: number;
  shardCount: number;
  stripeSize: number;
  tenantConf: Record<string, unknown>;
  bytesTotal: number;
  /** Download progress at `at` (wall clock ms). */
  bytesDownloadedAt: number;
  at: number;
  heatmapMtime: string | null;
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

export interface SeedLocation {
  mode: Exclude<Mode, 'Detached'>;
  generation?: number | null;
  bytesTotal?: number;
  /** Secondaries: how much is downloaded (default: all). */
  bytesDownloaded?: number;
  /** Secondaries: false = no heatmap yet (lag unknown). */
  heatmap?: boolean;
}

export interface PageserverSimOptions {
  nodeId: number;
  safety: SafetyChecker;
  authToken?: string;
  downloadBytesPerSecond?: number;
}

export class PageserverSim {
  readonly nodeId: number;
  url = '';
  /** The controller's upcall base URL (for `restart`). */
  controllerUrl = '';
  /** Sent as `Authorization: Bearer …` on upcalls, as Neon's `control_plane_api_token`. */
  controllerToken: string | undefined;
  /** `METHOD /path` of every request received, in order. */
  readonly requests: string[] = [];
  private readonly server: Server;
  private readonly locations = new Map<string, Location>();
  private readonly highestSeen = new Map<string, number>();
  private readonly faults: Fault[] = [];
  private readonly held = new Set<ServerResponse>();
  /** Responses whose answer is lost (`lostAnswer`): the request is applied, nothing is sent. */
  private readonly muted = new WeakSet<ServerResponse>();
  private answering = true;
  /** Bumped by every restart: requests received before it are never applied. */
  private epoch = 0;
  /** Called with each accepted `PUT …/location_config` body, before it is applied. */
  onPut: ((shardId: string, body: Record<string, unknown>) => void) | undefined;
  private latencyMs = 0;
  private downloadBytesPerSecond: number;

  constructor(private readonly options: PageserverSimOptions) {
    this.nodeId = options.nodeId;
    this.downloadBytesPerSecond = options.downloadBytesPerSecond ?? Infinity;
    this.server = createServer((req, res) => void this.handle(req, res));
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
      stripeSize: shard.shardCount ? 32768 : 0,
      tenantConf: {},
      bytesTotal: total,
      bytesDownloadedAt: seed.mode === 'Secondary' ? Math.min(total, seed.bytesDownloaded ?? total) : total,
      at: Date.now(),
      heatmapMtime: seed.heatmap === false ? null : new Date().toISOString(),
    };
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
    const now = Date.now();
    for (const l of this.locations.values()) {
      l.bytesDownloadedAt = this.downloaded(l, now);
      l.at = now;
    }
    this.downloadBytesPerSecond = bytesPerSecond;
  }

  /** Sets a secondary's progress (and gives it a heatmap). */
  setSecondaryProgress(shardId: string, bytesDownloaded: number, bytesTotal?: number): void {
    const l = this.locations.get(shardId);
    if (!l) throw new Error(`node ${this.nodeId} holds no location of ${shardId}`);
    if (bytesTotal !== undefined) l.bytesTotal = bytesTotal;
    l.bytesDownloadedAt = Math.min(bytesDownloaded, l.bytesTotal);
    l.at = Date.now();
    l.heatmapMtime ??= new Date().toISOString();
  }

  /** Delay before each `PUT …/location_config` is handled (slow cut-overs). */
  setLatency(ms: number): void {
    this.latencyMs = ms;
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
  }

  resume(): void {
    this.dropHeld();
    this.answering = true;
  }

  /**
   * The pageserver process restarts: requests in flight are lost, it is down for `downMs`,
   * then it calls the controller's `POST /upcall/v1/re-attach` and applies the answer
   * (locations not named are detached) before it answers again.
   */
  async restart({ downMs = 0 }: { downMs?: number } = {}): Promise<void> {
    this.epoch++;
    this.answering = false;
    this.dropHeld();
    if (downMs) await new Promise((r) => setTimeout(r, downMs));
    const res = await fetch(`${this.controllerUrl}/upcall/v1/re-attach`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(this.controllerToken ? { authorization: `Bearer ${this.controllerToken}` } : {}) },
      body: JSON.stringify({ node_id: this.nodeId }),
    });
    const body = (await res.json()) as { tenants?: { id: string; gen: number | null; mode: Mode }[]; msg?: string };
    if (res.status !== 200 || !body.tenants) throw new Error(`re-attach of node ${this.nodeId} answered ${res.status}: ${JSON.stringify(body)}`);
    const named = new Set(body.tenants.map((t) => t.id));
    for (const id of [...this.locations.keys()]) if (!named.has(id)) this.set(id, null);
    for (const t of body.tenants) {
      const shard = parseShardId(t.id);
      if (!shard) throw new Error(`re-attach named a bad id ${t.id}`);
      const prev = this.locations.get(t.id);
      const base: Location = prev ?? {
        mode: 'Secondary',
        generation: null,
        warm: true,
        shardNumber: shard.shardNumber,
        shardCount: shard.shardCount,
        stripeSize: shard.shardCount ? 32768 : 0,
        tenantConf: {},
        bytesTotal: 1024 * 1024,
        bytesDownloadedAt: 0,
        at: Date.now(),
        heatmapMtime: null,
      };
      if (ATTACHED.includes(t.mode)) {
        if (t.gen === null || t.gen < (this.highestSeen.get(t.id) ?? 0)) {
          this.options.safety.violations.push(`node ${this.nodeId}: re-attach gave shard ${t.id} generation ${t.gen}, below ${this.highestSeen.get(t.id)}`);
          continue;
        }
        this.highestSeen.set(t.id, t.gen);
        this.options.safety.issue(t.id, t.gen);
        this.set(t.id, { ...base, mode: t.mode as Location['mode'], generation: t.gen });
      } else if (t.mode === 'Secondary') {
        this.set(t.id, {
          ...base,
          mode: 'Secondary',
          generation: null,
          warm: true,
          bytesDownloadedAt: ATTACHED.includes(base.mode) ? base.bytesTotal : this.downloaded(base, Date.now()),
          at: Date.now(),
        });
      } else {
        this.set(t.id, null);
      }
    }
    this.answering = true;
  }

  // ------------------------------------------------------------ internals

  private set(id: string, loc: Location | null): void {
    if (loc) this.locations.set(id, loc);
    else this.locations.delete(id);
    this.options.safety.record(String(this.nodeId), id, loc ? { mode: loc.mode, generation: loc.generation } : null);
  }

  private downloaded(l: Location, now: number): number {
    if (l.mode !== 'Secondary') return l.bytesTotal;
    const rate = this.downloadBytesPerSecond;
    if (rate === Infinity) return l.bytesTotal;
    return Math.min(l.bytesTotal, Math.floor(l.bytesDownloadedAt + (rate * Math.max(0, now - l.at)) / 1000));
  }

  private progress(l: Location) {
    const downloaded = this.downloaded(l, Date.now());
    const layersTotal = Math.max(1, Math.ceil(l.bytesTotal / 65536));
    return {
      heatmap_mtime: l.heatmapMtime,
      layers_downloaded: Math.floor((layersTotal * downloaded) / Math.max(1, l.bytesTotal)),
      layers_total: layersTotal,
      bytes_downloaded: downloaded,
      bytes_total: l.bytesTotal,
    };
  }

  private dropHeld(): void {
    for (const res of this.held) res.socket?.destroy();
    this.held.clear();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://sim');
    const method = req.method ?? 'GET';
    this.requests.push(`${method} ${url.pathname}`);
    let raw = '';
    for await (const chunk of req) raw += chunk;
    if (!this.answering) {
      this.held.add(res);
      return;
    }
    const fault = this.faults.find(
      (f) => (!f.method || f.method === method) && (!f.path || f.path.test(url.pathname)) && (f.times === undefined || f.times > 0),
    );
    if (fault && fault.skip) fault.skip--;
    else if (fault) {
      if (fault.times !== undefined) fault.times--;
      if (fault.kind === 'timeout') {
        this.held.add(res);
        return;
      }
      if (fault.kind === 'lostAnswer') {
        this.muted.add(res);
        this.held.add(res);
        await this.route(method, url, raw, res).catch(() => {});
        return;
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
    try {
      await this.route(method, url, raw, res);
    } catch (e) {
      this.reply(res, 500, { msg: (e as Error).message });
    }
  }

  private reply(res: ServerResponse, status: number, body: unknown): void {
    if (res.writableEnded || res.destroyed || this.muted.has(res)) return;
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  }

  private async route(method: string, url: URL, raw: string, res: ServerResponse): Promise<void> {
    const path = url.pathname;
    if (method === 'GET' && path === '/v1/utilization') {
      return this.reply(res, 200, {
        disk_usage_bytes: 1 << 30,
        free_space_bytes: 9 << 30,
        disk_wanted_bytes: 1 << 30,
        disk_capacity_bytes: 10 << 30,
        shard_count: this.locations.size,
        max_shard_count: 20000,
        utilization_score: this.locations.size,
        captured_at: new Date().toISOString(),
      });
    }
    if (method === 'GET' && path === '/v1/location_config') {
      return this.reply(res, 200, {
        tenant_shards: [...this.locations].map(([id, l]) => [
          id,
          {
            mode: l.mode,
            generation: l.generation,
            secondary_conf: l.mode === 'Secondary' ? { warm: l.warm } : null,
            shard_number: l.shardNumber,
            shard_count: l.shardCount,
            shard_stripe_size: l.stripeSize,
            tenant_conf: l.tenantConf,
          },
        ]),
      });
    }
    const m = /^\/v1\/tenant\/([^/]+)\/(location_config|secondary\/download|secondary\/status)$/.exec(path);
    if (!m) return this.reply(res, 404, { msg: `Not Found: ${method} ${path}` });
    const shardId = decodeURIComponent(m[1]!);
    const shard = parseShardId(shardId);
    if (!shard) return this.reply(res, 400, { msg: `Bad request: invalid tenant shard id ${shardId}` });
    if (m[2] === 'location_config' && method === 'PUT') return this.putLocation(shardId, shard, raw, res);
    const loc = this.locations.get(shardId);
    if (!loc || loc.mode !== 'Secondary') return this.reply(res, 404, { msg: `Not Found: no secondary location of tenant shard ${shardId}` });
    if (m[2] === 'secondary/status' && method === 'GET') return this.reply(res, 200, this.progress(loc));
    if (m[2] === 'secondary/download' && method === 'POST') {
      const waitMs = Number(url.searchParams.get('wait_ms') ?? 0);
      const until = Date.now() + (Number.isFinite(waitMs) ? waitMs : 0);
      for (;;) {
        const current = this.locations.get(shardId);
        if (!current || current.mode !== 'Secondary') return this.reply(res, 404, { msg: `Not Found: tenant shard ${shardId} is no longer secondary` });
        const p = this.progress(current);
        if (p.heatmap_mtime !== null && p.bytes_downloaded >= p.bytes_total) return this.reply(res, 200, p);
        if (Date.now() >= until) return this.reply(res, 202, p);
        await new Promise((r) => setTimeout(r, Math.min(20, until - Date.now())));
      }
    }
    return this.reply(res, 405, { msg: `Method not allowed: ${method} ${path}` });
  }

  private async putLocation(shardId: string, shard: { shardNumber: number; shardCount: number }, raw: string, res: ServerResponse): Promise<void> {
    const epoch = this.epoch;
    if (this.latencyMs) await new Promise((r) => setTimeout(r, this.latencyMs));
    if (epoch !== this.epoch || !this.answering) {
      // The process restarted (or stopped answering) meanwhile: the request is lost.
      res.socket?.destroy();
      return;
    }
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
    this.onPut?.(shardId, body);
    const prev = this.locations.get(shardId);
    if (mode === 'Detached') {
      this.set(shardId, null);
      return this.reply(res, 200, { shards: [], stripe_size: null });
    }
    const now = Date.now();
    const base: Location = prev ?? {
      mode: 'Secondary',
      generation: null,
      warm: false,
      shardNumber: shard.shardNumber,
      shardCount: shard.shardCount,
      stripeSize: Number(body.shard_stripe_size ?? 0),
      tenantConf: {},
      bytesTotal: 1024 * 1024,
      bytesDownloadedAt: 0,
      at: now,
      heatmapMtime: null,
    };
    if (mode === 'Secondary') {
      const warm = Boolean((body.secondary_conf as { warm?: boolean } | null)?.warm);
      const bytes = prev && ATTACHED.includes(prev.mode) ? prev.bytesTotal : this.downloaded(base, now);
      this.set(shardId, {
        ...base,
        mode,
        generation: null,
        warm,
        bytesDownloadedAt: bytes,
        at: now,
        heatmapMtime: base.heatmapMtime ?? new Date(now).toISOString(),
      });
    } else {
      const generation = body.generation;
      if (typeof generation !== 'number' || !Number.isInteger(generation)) return this.reply(res, 400, { msg: `Bad request: ${mode} needs a generation` });
      const highest = this.highestSeen.get(shardId) ?? 0;
      if (generation < highest) return this.reply(res, 400, { msg: `Bad request: Generation ${generation} is less than existing ${highest}` });
      this.highestSeen.set(shardId, generation);
      this.options.safety.issue(shardId, generation);
      this.set(shardId, { ...base, mode, generation, warm: false, bytesDownloadedAt: base.bytesTotal, at: now });
    }
    this.reply(res, 200, { shards: [{ shard_id: shardId, node_id: this.nodeId }], stripe_size: shard.shardCount > 1 ? base.stripeSize : null });
  }
}
