/**
 * A REST facade compatible with the Neon storage controller's node API (spec
 * storage-drain-fill.md §9, summarised in docs/rules.md), so that Neon's tooling (storcon_cli, the regression tests'
 * client, runbooks using curl) can drive Lockkeeper unchanged:
 *
 *   GET    /control/v1/node                       nodes, sorted by id
 *   GET    /control/v1/node/:node_id              one node
 *   PUT    /control/v1/node/:node_id/drain        start a drain           → 202 null
 *   DELETE /control/v1/node/:node_id/drain        cancel it               → 202 null
 *   PUT    /control/v1/node/:node_id/fill         start a fill            → 202 null
 *   DELETE /control/v1/node/:node_id/fill         cancel it               → 202 null
 *   PUT    /control/v1/node/:node_id/config       set the policy          → 200 null
 *   GET    /control/v1/node/:node_id/shards       shards attached / secondary there
 *
 * Errors carry Neon's body `{"msg": "..."}` and the status of storage:S3–S5. Unexpected faults
 * are masked as 500 `{"msg": "internal error"}` (and logged when a logger is given).
 *
 * Every PUT / DELETE on a known route is recorded through `audited`, including the ones
 * refused (bad body, conflict...), with the actor (the token's name from `authorize`, else
 * the option `actor`, default `rest`) and the reason from `?reason=` or the
 * `X-Lockkeeper-Reason` header (the query parameter wins when both are given).
 *
 * Access (option `authorize`, the server's token check): GETs need viewer, drain / fill
 * PUT and DELETE need operator, `PUT …/config` needs admin (as GraphQL's configureNode).
 * Without a token 401, with a too-weak one 403 (Neon's controller answers the same for its
 * JWT scopes); refusals at the door are not audited.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ClusterBackend } from '../cluster/backend.ts';
import type { Clock } from '../cluster/clock.ts';
import { issuePath } from '../cluster/zod-issues.ts';
import {
  ConflictError,
  InvalidInputError,
  LockkeeperError,
  NotFoundError,
  OperationLimitReachedError,
  PreconditionFailedError,
  UnavailableError,
} from '../domain/errors.ts';
import { NEON_AVAILABILITY_NAMES } from '../domain/storage/policy.ts';
import type { Logger } from '../logger.ts';
import { audited } from '../operations/core/audited.ts';
import type { RemainingReader } from '../operations/core/remaining-reader.ts';
import type { StorageEngine } from '../operations/storage/engine.ts';
import type { RequestMeta } from '../domain/operations.ts';
import type { Scope } from '../auth/scopes.ts';
import type { AuditLog } from '../store/audit-log.ts';
import { headerOf, HttpError, PayloadTooLargeError, readBody, sendJson } from './http-io.ts';
import {
  compareNeonNodeIds,
  neonNodeId,
  nodeConfigureRequestSchema,
  parseNodeIdSegment,
  toNeonNode,
  toNeonSafety,
  type NeonNodeSafety,
  type NeonNodeShard,
  type NodeConfigureRequest,
} from './neon-shapes.ts';

const NEON_API_PREFIX = '/control/v1';
const REASON_HEADER = 'x-lockkeeper-reason';

export interface NeonFacadeDeps {
  storage: Pick<StorageEngine, 'startDrain' | 'cancelDrain' | 'startFill' | 'cancelFill' | 'configureNode' | 'policyOf' | 'activeOperation'>;
  backend: Pick<ClusterBackend, 'listNodes' | 'getNode' | 'listShards'>;
  audit: AuditLog;
  clock: Clock;
  /** What would lose service if a node restarted now; absent: the node objects carry no safety fields. */
  remaining?: Pick<RemainingReader, 'ofNodes'>;
  /** Recorded as the actor of every state-changing call; default `rest`. */
  actor?: string;
  /** Where unexpected faults are logged (never in the response). */
  log?: Logger;
  /** Largest accepted request body (config `limits.maxBodyBytes`). */
  maxBodyBytes: number;
  /**
   * Authenticates and authorizes a call before it runs: resolves with the actor, or throws
   * an HttpError (401, 403, 429). Absent: every caller is `actor`.
   */
  authorize?: (req: IncomingMessage, needed: Scope, changesState: boolean) => Promise<{ actor: string }>;
}

/** Handles requests under `/control/v1/`; resolves false (leaving `res` untouched) for any other path. Never rejects. */
export type NeonFacadeHandler = (req: IncomingMessage, res: ServerResponse) => Promise<boolean>;

/** Status of each typed refusal (storage:S3–S5). */
function statusOf(error: LockkeeperError): number {
  if (error instanceof NotFoundError) return 404;
  if (error instanceof ConflictError) return 409;
  if (error instanceof OperationLimitReachedError) return 412;
  if (error instanceof PreconditionFailedError) return 412;
  if (error instanceof UnavailableError) return 503;
  if (error instanceof InvalidInputError) return 400;
  if (error instanceof PayloadTooLargeError) return 413;
  return 500;
}

/** One call to a route: the parsed `:node_id` (empty for `/node`), the raw body, who and why. */
interface Call {
  nodeId: string;
  body: Buffer;
  meta: RequestMeta;
}

interface Reply {
  status: number;
  body: unknown;
}

type Action = 'drain' | 'fill';

/** A route of the node API and its handler per method. */
interface Route {
  /** Path pattern after the prefix, for messages and the audit's `action`, e.g. `/node/:node_id/drain`. */
  pattern: string;
  /** The path's segments after the prefix → null when they do not match, else the raw `:node_id` segment (null for `/node`). */
  match(segments: string[]): { nodeSegment: string | null } | null;
  methods: Record<string, (call: Call) => Promise<Reply>>;
  /** Scope per method; default: GET viewer, others operator. */
  scopes?: Record<string, Scope>;
}

const ACCEPTED: Reply = { status: 202, body: null };
const OK: Reply = { status: 200, body: null };

export function createNeonFacade(deps: NeonFacadeDeps): NeonFacadeHandler {
  const { storage, backend } = deps;
  const actor = deps.actor ?? 'rest';
  const { maxBodyBytes } = deps;

  async function requireNode(nodeId: string) {
    const node = await backend.getNode(nodeId);
    if (!node) throw new NotFoundError('node', nodeId);
    return node;
  }

  /** Lockkeeper's additions to Neon's node object (Neon's clients ignore unknown fields). */
  async function safetyOf(nodeIds: string[]): Promise<(NeonNodeSafety | undefined)[]> {
    if (!deps.remaining) return nodeIds.map(() => undefined);
    return (await deps.remaining.ofNodes(nodeIds)).map(toNeonSafety);
  }

  const operation = (action: Action): Route['methods'] => ({
    PUT: async ({ nodeId, meta }) => {
      await (action === 'drain' ? storage.startDrain(nodeId, meta) : storage.startFill(nodeId, meta));
      return ACCEPTED;
    },
    DELETE: async ({ nodeId, meta }) => {
      await (action === 'drain' ? storage.cancelDrain(nodeId, meta) : storage.cancelFill(nodeId, meta));
      return ACCEPTED;
    },
  });

  const nodeRoute = (suffix: string | null, methods: Route['methods'], scopes?: Route['scopes']): Route => ({
    pattern: `/node/:node_id${suffix ? `/${suffix}` : ''}`,
    match: (s) => (s[0] === 'node' && s.length === (suffix ? 3 : 2) && s[1] !== '' && (!suffix || s[2] === suffix) ? { nodeSegment: s[1]! } : null),
    methods,
    ...(scopes && { scopes }),
  });

  const routes: Route[] = [
    {
      pattern: '/node',
      match: (s) => (s.length === 1 && s[0] === 'node' ? { nodeSegment: null } : null),
      methods: {
        GET: async () => {
          const nodes = (await backend.listNodes()).sort((a, b) => compareNeonNodeIds(a.id, b.id));
          const safety = await safetyOf(nodes.map((n) => n.id));
          return { status: 200, body: nodes.map((n, i) => ({ ...toNeonNode(n, storage.policyOf(n.id)), ...safety[i] })) };
        },
      },
    },
    nodeRoute(null, {
      GET: async ({ nodeId }) => {
        const node = await requireNode(nodeId);
        const [safety] = await safetyOf([nodeId]);
        return { status: 200, body: { ...toNeonNode(node, storage.policyOf(nodeId)), ...safety } };
      },
    }),
    nodeRoute('drain', operation('drain')),
    nodeRoute('fill', operation('fill')),
    // Sets the policy by hand: admin, like GraphQL's configureNode.
    nodeRoute('config', { PUT: (r) => configure(r) }, { PUT: 'admin' }),
    nodeRoute('shards', {
      GET: async ({ nodeId }) => {
        await requireNode(nodeId);
        const [attached, secondary] = await Promise.all([backend.listShards({ attachedNodeId: nodeId }), backend.listShards({ secondaryNodeId: nodeId })]);
        // What we observe is what we intend: the backend reports one set of locations.
        const shards: NeonNodeShard[] = [
          ...attached.map((s) => ({ tenant_shard_id: s.id, is_observed_secondary: false, is_intended_secondary: false })),
          ...secondary.map((s) => ({ tenant_shard_id: s.id, is_observed_secondary: true, is_intended_secondary: true })),
        ].sort((a, b) => (a.tenant_shard_id < b.tenant_shard_id ? -1 : a.tenant_shard_id > b.tenant_shard_id ? 1 : 0));
        return { status: 200, body: { node_id: neonNodeId(nodeId), shards } };
      },
    }),
  ];

  /**
   * `availability` is observed (heartbeats), never commanded: it is accepted only when it
   * states the node's current availability (Neon's clients send it back unchanged), and
   * refused with 400 otherwise.
   */
  async function configure({ nodeId, body, meta }: Call): Promise<Reply> {
    const request = parseConfigureBody(body);
    if (String(request.node_id) !== nodeId) {
      throw new InvalidInputError('node_id', String(request.node_id), `node_id ${request.node_id} in the body differs from node ${nodeId} in the path`);
    }
    const node = await requireNode(nodeId);
    if (request.availability != null && request.availability !== node.availability) {
      const asked = NEON_AVAILABILITY_NAMES[request.availability];
      throw new InvalidInputError(
        'availability',
        asked,
        `availability cannot be set: it is observed from heartbeats (node ${nodeId} is ${NEON_AVAILABILITY_NAMES[node.availability]}, not ${asked})`,
      );
    }
    if (request.scheduling != null) {
      await storage.configureNode(nodeId, request.scheduling, { actor: meta.actor, reason: null });
      return OK;
    }
    // Nothing to change; still refused while an operation runs, as configureNode would be.
    const running = storage.activeOperation(nodeId);
    if (running) {
      throw new PreconditionFailedError(
        'OPERATION_RUNNING',
        `node ${nodeId} has a ${running.kind.toLowerCase()} running (operation ${running.id})`,
        running.id,
      );
    }
    return OK;
  }

  return async function handle(req, res) {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname !== NEON_API_PREFIX && !url.pathname.startsWith(`${NEON_API_PREFIX}/`)) return false;
    try {
      const reply = await dispatch(req, url);
      sendJson(res, reply.status, reply.body);
    } catch (error) {
      fail(res, error);
    }
    return true;
  };

  async function dispatch(req: IncomingMessage, url: URL): Promise<Reply> {
    const segments = url.pathname.slice(NEON_API_PREFIX.length + 1).split('/');
    const method = req.method ?? 'GET';
    let route: Route | undefined;
    let matched: { nodeSegment: string | null } | null = null;
    for (route of routes) if ((matched = route.match(segments))) break;
    if (!route || !matched) {
      await discardBody(req);
      throw new HttpError(404, `no route ${method} ${url.pathname}`);
    }
    const run = Object.hasOwn(route.methods, method) ? route.methods[method] : undefined;
    if (!run) {
      await discardBody(req);
      throw new HttpError(405, `method ${method} not allowed on ${NEON_API_PREFIX}${route.pattern}`, { allow: Object.keys(route.methods).join(', ') });
    }
    let caller = actor;
    if (deps.authorize) {
      const needed = route.scopes?.[method] ?? (method === 'GET' ? 'viewer' : 'operator');
      try {
        caller = (await deps.authorize(req, needed, method !== 'GET')).actor;
      } catch (e) {
        await discardBody(req);
        throw e;
      }
    }
    const { nodeSegment } = matched;
    const nodeId = nodeSegment === null ? '' : parseNodeIdSegment(nodeSegment);
    if (nodeId === null) {
      await discardBody(req);
      throw new HttpError(400, `node_id ${JSON.stringify(decodeSegment(nodeSegment!))} is not a non-negative integer`);
    }
    const meta: RequestMeta = { actor: caller, reason: reasonOf(req, url) };
    if (method === 'GET') return run({ nodeId, body: await readBody(req, maxBodyBytes), meta });

    // State-changing: audited, refusals included. The body is read inside so that a 413 is
    // recorded too; `audited` serialises the arguments when the call has ended.
    const args: { node_id: string; body?: unknown } = { node_id: nodeId };
    return audited(deps, { action: `${method} ${NEON_API_PREFIX}${route.pattern}`, arguments: args, nodeId, meta }, async () => {
      const body = await readBody(req, maxBodyBytes);
      if (body.length) args.body = tryJson(body);
      return run({ nodeId, body, meta });
    });
  }

  function fail(res: ServerResponse, error: unknown): void {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    if (error instanceof HttpError) return sendJson(res, error.status, { msg: error.message }, error.headers);
    if (error instanceof LockkeeperError) {
      const status = statusOf(error);
      if (status !== 500) {
        // The client may still be sending a body we refused to read: close after replying.
        const headers: Record<string, string> = error instanceof PayloadTooLargeError ? { connection: 'close' } : {};
        return sendJson(res, status, { msg: error.message }, headers);
      }
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

function parseConfigureBody(body: Buffer): NodeConfigureRequest {
  let json: unknown;
  try {
    json = JSON.parse(body.toString('utf8'));
  } catch {
    throw new InvalidInputError('body', '', 'request body is not valid JSON');
  }
  const parsed = nodeConfigureRequestSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const path = issuePath(issue.path, { root: 'body', index: 'dot' });
    throw new InvalidInputError(path, '', `invalid ${path}: ${issue.message}`);
  }
  return parsed.data;
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
