import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isObject } from './http-client.ts';
import type { ReAttachRequest, ReAttachResponse, ValidateRequest, ValidateResponse } from './wire.ts';

/** An upcall's answer: Neon's body, or `{msg}` with an error status. */
export type UpcallAnswer<T> = { status: 200; body: T } | { status: number; body: { msg: string } };

export interface UpcallHandlers {
  reAttach(request: ReAttachRequest, caller: string): Promise<UpcallAnswer<ReAttachResponse>>;
  validate(request: ValidateRequest, caller: string): Promise<ValidateResponse>;
  /** neon:L10: an upcall refused before its handler (no or a wrong token). */
  refused?(kind: 'RE_ATTACH' | 'VALIDATE', caller: string, status: number, why: string): void;
}

/** `ip:port` of the caller as the listener saw it. */
const callerOf = (req: IncomingMessage) => `${req.socket.remoteAddress ?? 'unknown'}:${req.socket.remotePort ?? 0}`;

const MAX_BODY = 1024 * 1024;

const digest = (token: string) => createHash('sha256').update(token, 'utf8').digest();

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) throw new Error('request body too large');
    chunks.push(chunk as Buffer);
  }
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

/**
 * The controller side of Neon's pageserver upcalls (`control_plane_api`): a pageserver
 * pointed at `http://host:port/upcall/v1/` re-attaches and validates generations here.
 * Errors use Neon's `{"msg": …}` body.
 */
export class UpcallServer {
  private readonly server: Server;
  url = '';

  private readonly tokenDigest: Buffer | null;

  private readonly mayAct: () => boolean;

  /**
   * With `token`, every upcall must carry `Authorization: Bearer <token>` (Neon's `control_plane_api_token`).
   * With `mayAct`, a replica that does not lead answers 503 (ha:L8): the pageserver retries, and reaches the leader.
   */
  constructor(
    private readonly handlers: UpcallHandlers,
    options: { token?: string; mayAct?: () => boolean } = {},
  ) {
    this.tokenDigest = options.token ? digest(options.token) : null;
    this.mayAct = options.mayAct ?? (() => true);
    this.server = createServer((req, res) => void this.handle(req, res));
  }

  /** Null when the request may pass, else why not. */
  private refusal(req: IncomingMessage): string | null {
    if (!this.tokenDigest) return null;
    const header = req.headers.authorization;
    if (!header) return 'missing Authorization header: upcalls need "Authorization: Bearer <control_plane_api_token>"';
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!m) return 'malformed Authorization header: expected "Bearer <token>"';
    // Digests of equal length: the comparison takes the same time whatever the token's length.
    return timingSafeEqual(digest(m[1]!), this.tokenDigest) ? null : 'invalid token in the Authorization header';
  }

  async listen(port: number, host: string): Promise<string> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    const address = this.server.address() as AddressInfo;
    const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    this.url = `http://${shown}:${address.port}`;
    return this.url;
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    const route = path === '/upcall/v1/re-attach' ? 'reAttach' : path === '/upcall/v1/validate' ? 'validate' : null;
    if (!route) return send(res, 404, { msg: `no upcall at ${path}` });
    const refusal = this.refusal(req);
    const caller = callerOf(req);
    if (refusal) {
      req.resume();
      this.handlers.refused?.(route === 'reAttach' ? 'RE_ATTACH' : 'VALIDATE', caller, 401, refusal);
      return send(res, 401, { msg: `Unauthorized: ${refusal}` });
    }
    if (req.method !== 'POST') return send(res, 405, { msg: `${path} takes POST` });
    if (!this.mayAct()) {
      req.resume();
      return send(res, 503, { msg: `Service Unavailable: this storage controller is a stand-by, not the leader; retry (ha:L8)` });
    }
    let body: unknown;
    try {
      body = await readJson(req);
    } catch (e) {
      return send(res, 400, { msg: `${path}: request body is not JSON (${(e as Error).message})` });
    }
    if (route === 'reAttach') {
      if (!isObject(body) || typeof body.node_id !== 'number' || !Number.isInteger(body.node_id)) {
        return send(res, 400, { msg: 're-attach: expected {"node_id": <integer>}' });
      }
      if (body.register !== undefined && body.register !== null && !isObject(body.register)) {
        return send(res, 400, { msg: 're-attach: "register" must be an object' });
      }
      try {
        const answer = await this.handlers.reAttach(body as unknown as ReAttachRequest, caller);
        return send(res, answer.status, answer.body);
      } catch (e) {
        return send(res, 500, { msg: `re-attach failed: ${e instanceof Error ? e.message : String(e)}` });
      }
    }
    const tenants = isObject(body) ? body.tenants : undefined;
    if (!Array.isArray(tenants) || !tenants.every((t) => isObject(t) && typeof t.id === 'string' && typeof t.gen === 'number')) {
      return send(res, 400, { msg: 'validate: expected {"tenants": [{"id": …, "gen": <integer>}]}' });
    }
    try {
      send(res, 200, await this.handlers.validate(body as unknown as ValidateRequest, caller));
    } catch (e) {
      send(res, 503, { msg: `validate failed: ${e instanceof Error ? e.message : String(e)}` });
    }
  }
}
