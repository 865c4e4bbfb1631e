import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { wallClock, Waits, type SimClock } from '../common/clock.ts';
import { parseBody, REQUESTS_PATH, RequestLog, senderOf } from '../common/request-log.ts';

/**
 * A simulated compute control plane: the other end of Neon's `notify-attach` hook
 * (storage controller `compute_hook.rs`), where the storage controller says which
 * pageserver now serves each shard of a tenant so the Postgres computes reconnect.
 *
 * `PUT /notify-attach` with `{tenant_id, preferred_az, stripe_size, shards: [{node_id,
 * shard_number}]}`. Answers are scripted (`script`, `answerWith`; default 200), each
 * optionally after a delay on the clock; every request is recorded (`notifications`),
 * whatever it was answered. Strict: another method is 405, another path 404, a body that
 * is not exactly that shape 400, and with `token` a missing or wrong bearer token 401.
 * `GET /simulator/v1/notifications` reads the record back (a test in another process), and
 * `GET /simulator/v1/requests` the request log it shares with the pageservers.
 */

/** Where another process reads what the hook was sent (the simulator's own route, not Neon's). */
export const NOTIFICATIONS_PATH = '/simulator/v1/notifications';

export interface HookAnswer {
  status: number;
  /** Answer after this long on the clock. */
  delayMs?: number;
}

export interface NotifyShard {
  node_id: number;
  shard_number: number;
}

export interface NotifyAttachBody {
  tenant_id: string;
  preferred_az: string | null;
  stripe_size: number | null;
  shards: NotifyShard[];
}

export interface RecordedNotification {
  at: number;
  body: unknown;
  authorization: string | null;
  /** What it was answered. */
  status: number;
}

export interface ComputeHookSimOptions {
  clock?: SimClock;
  log?: RequestLog;
  /** The bearer token the storage controller must send (`control_plane_jwt_token`). */
  token?: string;
}

const FIELDS = ['tenant_id', 'preferred_az', 'stripe_size', 'shards'];

/** Why the body is not a notify-attach request, or null. */
function invalid(body: unknown): string | null {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return 'expected a JSON object';
  const b = body as Record<string, unknown>;
  const unknown = Object.keys(b).find((k) => !FIELDS.includes(k));
  if (unknown) return `unknown field \`${unknown}\``;
  const missing = FIELDS.find((k) => !(k in b));
  if (missing) return `missing field \`${missing}\``;
  if (typeof b.tenant_id !== 'string' || !/^[0-9a-f]{32}$/.test(b.tenant_id)) return 'tenant_id is not a tenant id';
  if (b.preferred_az !== null && typeof b.preferred_az !== 'string') return 'preferred_az is neither null nor a string';
  if (b.stripe_size !== null && !Number.isInteger(b.stripe_size)) return 'stripe_size is neither null nor an integer';
  if (!Array.isArray(b.shards) || b.shards.length === 0) return 'shards is not a non-empty array';
  let last = -1;
  for (const s of b.shards as unknown[]) {
    if (typeof s !== 'object' || s === null) return 'a shard is not an object';
    const keys = Object.keys(s).sort().join();
    if (keys !== 'node_id,shard_number') return `a shard has fields ${keys}, expected node_id and shard_number`;
    const { node_id, shard_number } = s as Record<string, unknown>;
    if (!Number.isInteger(node_id) || !Number.isInteger(shard_number)) return 'node_id and shard_number must be integers';
    if ((shard_number as number) <= last) return 'shards are not sorted by shard_number without repeats';
    last = shard_number as number;
  }
  return null;
}

export class ComputeHookSim {
  url = '';
  readonly notifications: RecordedNotification[] = [];
  readonly log: RequestLog;
  /** Per tenant, the last body answered 2xx: what the computes now use. */
  readonly applied = new Map<string, NotifyAttachBody>();
  private readonly clock: SimClock;
  private readonly waits = new Waits();
  private readonly server: Server;
  private queue: HookAnswer[] = [];
  private answer: (body: NotifyAttachBody, n: number) => HookAnswer = () => ({ status: 200 });

  constructor(private readonly options: ComputeHookSimOptions = {}) {
    this.clock = options.clock ?? wallClock;
    this.log = options.log ?? new RequestLog();
    this.server = createServer((req, res) => void this.handle(req, res));
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }

  /** Answers the next requests in this order, then goes back to `answerWith`'s rule. */
  script(answers: HookAnswer[]): void {
    this.queue = [...answers];
  }

  /** The rule for requests the script does not cover (default: 200 at once). */
  answerWith(rule: (body: NotifyAttachBody, n: number) => HookAnswer): void {
    this.answer = rule;
  }

  get waiting(): number {
    return this.waits.pending;
  }

  /** Notifications (valid bodies only) for a tenant, in order. */
  bodiesFor(tenantId: string): NotifyAttachBody[] {
    return this.notifications.map((n) => n.body as NotifyAttachBody).filter((b) => invalid(b) === null && b.tenant_id === tenantId);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://hook');
    const method = req.method ?? 'GET';
    if (url.pathname === REQUESTS_PATH && method === 'GET') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ items: this.log.entries }));
      return;
    }
    let raw = '';
    for await (const chunk of req) raw += chunk;
    const body = parseBody(raw);
    const entry = this.log.record({
      source: 'hook',
      method,
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      body,
      at: this.clock.now(),
      ...senderOf(req.headers),
    });
    const authorization = req.headers.authorization ?? null;
    const send = (status: number, payload: unknown) => {
      this.notifications.push({ at: this.clock.now(), body, authorization, status });
      if (res.destroyed) return;
      this.log.answered(entry, status);
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(payload));
    };
    if (url.pathname === NOTIFICATIONS_PATH && method === 'GET') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ items: this.notifications }));
      return;
    }
    if (url.pathname !== '/notify-attach') return send(404, { msg: `no route ${url.pathname}` });
    if (method !== 'PUT') return send(405, { msg: `${url.pathname} takes PUT` });
    if (this.options.token && authorization !== `Bearer ${this.options.token}`) return send(401, { msg: 'Unauthorized' });
    const problem = invalid(body);
    if (problem) return send(400, { msg: `Bad request: ${problem}` });
    const request = body as NotifyAttachBody;
    const n = this.notifications.length;
    const answer = this.queue.shift() ?? this.answer(request, n);
    if (answer.delayMs) {
      await this.waits.sleep(this.clock, answer.delayMs, new Promise((resolve) => res.once('close', resolve)));
      if (res.destroyed) {
        this.notifications.push({ at: this.clock.now(), body, authorization, status: 0 });
        return;
      }
    }
    if (answer.status >= 200 && answer.status < 300) this.applied.set(request.tenant_id, request);
    send(answer.status, answer.status >= 400 ? { msg: `answered ${answer.status}` } : {});
  }
}
