/**
 * A REST facade compatible with Neon's storage controller (spec storage-drain-fill.md §9
 * and neon-parity.md), so that Neon's tooling (storcon_cli, the regression tests' client,
 * runbooks using curl) can drive Lockkeeper unchanged. The routes are in
 * `neon-node-routes.ts` (nodes, drain, fill, config, registration, delete, tombstones) and
 * `neon-tenant-routes.ts` (per-shard controls); this module matches, authorizes, audits
 * and renders them.
 *
 * Errors carry Neon's body `{"msg": "..."}` with its status and prefix (neon:E5).
 * Unexpected faults are masked as 500 `{"msg": "internal error"}` (and logged).
 *
 * Every PUT / POST / DELETE on a known route is recorded through `audited`, including the
 * ones refused, with the actor (the token's name from `authorize`, else the option
 * `actor`, default `rest`) and the reason from `?reason=` or the `X-Lockkeeper-Reason`
 * header (the query parameter wins when both are given).
 *
 * Access (option `authorize`, the server's token check): GETs need viewer, drain / fill
 * PUT and DELETE need operator, everything else that changes state admin. Without a token
 * 401, with a too-weak one 403; refusals at the door are not audited.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { BackendError } from '../cluster/errors.ts';
import { DatabaseUnavailableError, LockkeeperError } from '../domain/errors.ts';
import { audited } from '../operations/core/audited.ts';
import type { RequestMeta } from '../domain/operations.ts';
import { headerOf, HttpError, PayloadTooLargeError, readBody, sendJson } from './http-io.ts';
import { backendStatus, neonMessage, NeonRefusal, statusOf } from './neon-errors.ts';
import { nodeRoutes } from './neon-node-routes.ts';
import { nodeIdOfNeon, parseNodeIdSegment } from './neon-shapes.ts';
import type { Call, NeonFacadeDeps, Reply } from './neon-route.ts';
import { tenantRoutes } from './neon-tenant-routes.ts';

export type { NeonFacadeDeps } from './neon-route.ts';

/** Handles requests under `/control/v1/`, `/debug/v1/` and `/v1/tenant/` (neon:W10); resolves false (leaving `res` untouched) for any other path. Never rejects. */
export type NeonFacadeHandler = (req: IncomingMessage, res: ServerResponse) => Promise<boolean>;

const PREFIXES = ['/control/v1', '/debug/v1', '/v1/tenant'];
const REASON_HEADER = 'x-lockkeeper-reason';

/** A route's segments matched against the path's: null when they differ, else the parameters. */
function matchPattern(pattern: string[], segments: string[]): Record<string, string> | null {
  if (pattern.length !== segments.length) return null;
  const params: Record<string, string> = {};
  for (const [i, p] of pattern.entries()) {
    const s = segments[i]!;
    if (p.startsWith(':')) {
      if (s === '') return null;
      params[p.slice(1)] = s;
    } else if (p !== s) return null;
  }
  return params;
}

export function createNeonFacade(deps: NeonFacadeDeps): NeonFacadeHandler {
  const actor = deps.actor ?? 'rest';
  const { maxBodyBytes } = deps;
  const routes = [...nodeRoutes(deps), ...tenantRoutes(deps)].map((r) => ({ ...r, segments: r.pattern.split('/').slice(1) }));

  return async function handle(req, res) {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (!PREFIXES.some((p) => url.pathname === p || url.pathname.startsWith(`${p}/`))) return false;
    try {
      const reply = await dispatch(req, url);
      sendJson(res, reply.status, reply.body);
    } catch (error) {
      fail(res, error);
    }
    return true;
  };

  async function dispatch(req: IncomingMessage, url: URL): Promise<Reply> {
    const segments = url.pathname.split('/').slice(1);
    const method = req.method ?? 'GET';
    let route: (typeof routes)[number] | undefined;
    let params: Record<string, string> | null = null;
    for (const r of routes) {
      if ((params = matchPattern(r.segments, segments))) {
        route = r;
        break;
      }
    }
    if (!route || !params) {
      await discardBody(req);
      throw new HttpError(404, `no route ${method} ${url.pathname}`);
    }
    const run = Object.hasOwn(route.methods, method) ? route.methods[method] : undefined;
    if (!run) {
      await discardBody(req);
      throw new HttpError(405, `method ${method} not allowed on ${route.pattern}`, { allow: Object.keys(route.methods).join(', ') });
    }
    let caller = actor;
    if (deps.authorize) {
      const needed = route.scopes?.[method] ?? (method === 'GET' ? 'viewer' : 'admin');
      try {
        caller = (await deps.authorize(req, needed, method !== 'GET')).actor;
      } catch (e) {
        await discardBody(req);
        throw e;
      }
    }
    for (const [name, value] of Object.entries(params)) {
      if (name === 'node_id') {
        const id = parseNodeIdSegment(value);
        if (id === null) {
          await discardBody(req);
          throw new HttpError(400, `node_id ${JSON.stringify(decodeSegment(value))} is not a non-negative integer`);
        }
        params[name] = nodeIdOfNeon(id, deps.backend.nodeAliases);
      } else params[name] = decodeSegment(value);
    }
    const meta: RequestMeta = { actor: caller, reason: reasonOf(req, url) };
    const call = (body: Buffer): Call => ({ params: params!, query: url.searchParams, body, meta });
    if (method === 'GET') return run(call(await readBody(req, maxBodyBytes)));

    // State-changing: audited, refusals included. The body is read inside so that a 413 is
    // recorded too; `audited` serialises the arguments when the call has ended.
    const args: Record<string, unknown> = { ...params };
    const nodeId = params.node_id ?? null;
    return audited(deps, { action: `${method} ${route.pattern}`, arguments: args, nodeId, meta }, async () => {
      const body = await readBody(req, maxBodyBytes);
      if (body.length) args.body = tryJson(body);
      return run(call(body));
    });
  }

  function fail(res: ServerResponse, raw: unknown): void {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const error = deps.typedError?.(raw) ?? raw;
    // Issue 27: the database's outage, in Neon's shape, with when to try again.
    if (error instanceof DatabaseUnavailableError)
      return sendJson(res, 503, { msg: error.message }, { 'retry-after': String(DatabaseUnavailableError.RETRY_AFTER_S) });
    if (error instanceof HttpError) return sendJson(res, error.status, { msg: error.message }, error.headers);
    if (error instanceof NeonRefusal) return sendJson(res, error.status, { msg: neonMessage(error.status, error.message) });
    if (error instanceof LockkeeperError) {
      const status = statusOf(error);
      // The client may still be sending a body we refused to read: close after replying.
      const headers: Record<string, string> = error instanceof PayloadTooLargeError ? { connection: 'close' } : {};
      if (status !== 500 || error.code === 'RECONCILE_FAILED') return sendJson(res, status, { msg: neonMessage(status, error.message) }, headers);
    }
    if (error instanceof BackendError && error.code !== 'Transient') {
      const status = backendStatus(error);
      return sendJson(res, status, { msg: neonMessage(status, error.message) });
    }
    deps.log?.error({ err: error }, 'REST facade: unexpected fault');
    sendJson(res, 500, { msg: 'internal error' });
  }

  function discardBody(req: IncomingMessage): Promise<void> {
    return readBody(req, maxBodyBytes).then(
      () => undefined,
      () => undefined,
    );
  }
}

function tryJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    // Not echoed: it is unvalidated input that may hold anything.
    return { unparsableBytes: body.length };
  }
}

function reasonOf(req: IncomingMessage, url: URL): string | null {
  const fromQuery = url.searchParams.get('reason');
  if (fromQuery !== null && fromQuery.trim() !== '') return fromQuery.trim();
  const value = headerOf(req, REASON_HEADER);
  return value !== undefined && value.trim() !== '' ? value.trim() : null;
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
