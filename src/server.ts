import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { execute, subscribe, type ExecutionArgs } from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import { WebSocketServer } from 'ws';
import { csrfRefusal } from './auth/csrf.ts';
import { AuthRefusal, AuthService, checkBindAddress, isLoopbackHost, type Identity } from './auth/service.ts';
import type { Scope } from './auth/scopes.ts';
import type { LimitSettings } from './cluster/config.ts';
import type { ClusterBackend } from './cluster/backend.ts';
import { systemClock, type Clock } from './cluster/clock.ts';
import { bridgeBackendEvents } from './events/backend-bridge.ts';
import { createEventBus, type EventBus } from './events/bus.ts';
import { createGraphQLHandler, GRAPHQL_PATH, type LockkeeperYoga } from './graphql/yoga.ts';
import type { Logger } from './logger.ts';
import { OperationCoordinator } from './operations/core/coordinator.ts';
import { createOperationMetrics } from './operations/core/metrics.ts';
import { MaintenanceEngine } from './operations/maintenance/engine.ts';
import { StorageEngine } from './operations/storage/engine.ts';
import { HttpError, MAX_BODY_BYTES, PayloadTooLargeError, readBody, sendJson } from './rest/http-io.ts';
import { createNeonFacade } from './rest/neon-facade.ts';
import { DEFAULT_OPERATION_SETTINGS, type OperationSettings } from './operations/settings.ts';
import { ApiTokenStore } from './store/api-tokens.ts';
import { AuditLog } from './store/audit-log.ts';
import { EventLog } from './store/event-log.ts';
import type { PrismaClient } from './store/index.ts';
import { createRepositories } from './store/repositories.ts';

export interface AppDeps {
  backend: ClusterBackend;
  log: Logger;
  prisma: PrismaClient;
  clock?: Clock;
  settings?: OperationSettings;
  /** Closed last on stop (the database). */
  onClose?: () => Promise<void>;
  /** Extra checks for /healthz. */
  health?: () => Record<string, unknown>;
  /** Access control and abuse limits; the defaults are the safe ones (README, Access control). */
  security?: SecurityOptions;
}

export interface SecurityOptions {
  /** LOCKKEEPER_ADMIN_TOKEN: accepted as an admin token named `bootstrap-admin`; turns authentication on. */
  bootstrapToken?: string | undefined;
  /** Allow a non-loopback address without authentication (server.insecure / LOCKKEEPER_INSECURE=1). */
  insecure?: boolean;
  /** Browser origins allowed to call (CORS and CSRF checks). */
  allowedOrigins?: string[];
  /** Scope /metrics needs when authentication is on (default viewer); `public` for none. */
  metrics?: 'public' | Scope;
  /** Re-check of the tokens of open subscriptions, ms (default 5000). */
  recheckIntervalMs?: number;
  limits?: Partial<LimitSettings>;
  /** Wall clock for token expiry, last use and rate limits (tests); default Date.now. */
  now?: () => number;
}

export interface App {
  yoga: LockkeeperYoga;
  bus: EventBus;
  /** Every operation: reads, progress, start (resumption) and stop. */
  operations: OperationCoordinator;
  storage: StorageEngine;
  maintenance: MaintenanceEngine;
  auth: AuthService;
  server: Server;
  /** Resumes interrupted operations, then listens; port 0 picks a free port. Resolves with the bound address. */
  start(port: number, host: string): Promise<{ port: number; host: string; url: string }>;
  /** Starts the operations engine without listening (tests that use yoga.fetch). */
  ready(): Promise<void>;
  /** Graceful: stops accepting, ends WebSocket and HTTP connections, closes the backend and the database. */
  stop(): Promise<void>;
}

/**
 * One HTTP port for everything: GraphQL over POST/GET, graphql-ws on the same path
 * (through yoga's envelop pipeline, as in graphql-yoga's graphql-ws example), GraphiQL,
 * the Neon-compatible REST facade under /control/v1, /metrics and /healthz.
 */
export function buildApp(deps: AppDeps): App {
  const bus = createEventBus();
  const clock = deps.clock ?? systemClock;
  const stopBridge = bridgeBackendEvents(deps.backend, bus);
  const audit = new AuditLog(deps.prisma);
  const metrics = createOperationMetrics({ onError: (e) => deps.log.warn({ err: e }, 'metrics update failed') });
  const shared = { store: createRepositories(deps.prisma), bus, clock, log: deps.log, observer: metrics.observer };
  const operations = new OperationCoordinator(shared);
  const engineDeps = { ...shared, operations, backend: deps.backend, settings: deps.settings ?? DEFAULT_OPERATION_SETTINGS };
  // Constructed in start order: storage policies are loaded before maintenance resumes.
  const storage = new StorageEngine(engineDeps);
  const maintenance = new MaintenanceEngine(engineDeps);
  const security = deps.security ?? {};
  const insecure = security.insecure ?? false;
  const allowedOrigins = security.allowedOrigins ?? [];
  const maxBodyBytes = security.limits?.maxBodyBytes ?? MAX_BODY_BYTES;
  const metricsScope = security.metrics ?? 'viewer';
  const auth = new AuthService(new ApiTokenStore(deps.prisma), deps.log, {
    bootstrapToken: security.bootstrapToken,
    ...(security.recheckIntervalMs !== undefined && { recheckIntervalMs: security.recheckIntervalMs }),
    ...(security.limits?.mutationsPerMinute !== undefined && { mutationsPerMinute: security.limits.mutationsPerMinute }),
    ...(security.now && { now: security.now }),
  });

  /** The REST facade's door: 401 / 403 as Neon's controller answers, 429 past the mutation rate. */
  const authorizeRest = async (req: IncomingMessage, needed: Scope, changesState: boolean): Promise<{ actor: string }> => {
    let identity: Identity;
    try {
      identity = await auth.authorize(AuthService.credentialFromHeader(req.headers.authorization), needed);
    } catch (e) {
      if (e instanceof AuthRefusal) throw new HttpError(e.status, e.message, e.status === 401 ? { 'www-authenticate': 'Bearer realm="lockkeeper"' } : {});
      throw e;
    }
    if (changesState) {
      const waitMs = auth.takeMutations(identity, 1);
      if (waitMs > 0) {
        const retryAfter = Math.ceil(waitMs / 1000);
        throw new HttpError(429, `rate limit: at most ${auth.mutationsPerMinute} state-changing calls per minute for token "${identity.name}"; retry in ${retryAfter} s`, {
          'retry-after': String(retryAfter),
        });
      }
    }
    return { actor: identity.name };
  };

  const neonFacade = createNeonFacade({ storage, backend: deps.backend, audit, clock, log: deps.log, maxBodyBytes, authorize: authorizeRest });
  const yoga = createGraphQLHandler({ backend: deps.backend, bus, operations, storage, maintenance, audit, events: new EventLog(deps.prisma), clock, auth }, deps.log, {
    ...(security.limits && { limits: security.limits }),
    allowedOrigins,
  });
  let engineStarted: Promise<void> | undefined;
  const startEngines = async () => {
    await auth.start();
    await operations.start();
  };

  /** Without authentication only loopback names are served: a DNS-rebinding page cannot reach us. */
  const hostRefused = (host: string | undefined): boolean => {
    if (auth.enforced || insecure || !host) return false;
    const name = host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.replace(/:\d+$/, '');
    return !isLoopbackHost(name);
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    if (hostRefused(req.headers.host)) {
      sendJson(res, 403, { msg: `Host ${String(req.headers.host).slice(0, 100)} refused: without authentication only loopback names are served` });
      return;
    }
    if (path === '/healthz') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ status: 'ok', backend: deps.backend.name, ...deps.health?.() }));
      return;
    }
    if (path !== GRAPHQL_PATH) {
      const refusal = csrfRefusal(req.method ?? 'GET', (name) => headerOf(req, name), allowedOrigins);
      if (refusal) {
        req.resume();
        sendJson(res, 403, { msg: refusal });
        return;
      }
    }
    if (path === '/metrics') {
      if (metricsScope !== 'public') {
        try {
          await auth.authorize(AuthService.credentialFromHeader(req.headers.authorization), metricsScope);
        } catch (e) {
          if (!(e instanceof AuthRefusal)) throw e;
          res.writeHead(e.status, { 'content-type': 'text/plain; charset=utf-8', ...(e.status === 401 && { 'www-authenticate': 'Bearer realm="lockkeeper"' }) });
          res.end(`${e.message}\n`);
          return;
        }
      }
      const text = await metrics.registry.metrics();
      res.writeHead(200, { 'content-type': metrics.registry.contentType });
      res.end(text);
      return;
    }
    if (path === '/' && req.method === 'GET') {
      res.writeHead(302, { location: GRAPHQL_PATH });
      res.end();
      return;
    }
    if (await neonFacade(req, res)) return;
    if (req.method === 'POST') {
      // Bounded read (yoga has no limit of its own); yoga then takes the buffered body.
      let body: Buffer;
      try {
        body = await readBody(req, maxBodyBytes);
      } catch (e) {
        if (!(e instanceof PayloadTooLargeError)) throw e;
        sendJson(res, 413, { errors: [{ message: e.message, extensions: { code: 'PAYLOAD_TOO_LARGE' } }] }, { connection: 'close' });
        return;
      }
      if (body.length) (req as IncomingMessage & { body?: Buffer }).body = body;
    }
    await yoga.handle(req, res);
  }

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    handle(req, res).catch((e: unknown) => {
      deps.log.error({ err: e }, 'HTTP request failed');
      if (res.headersSent) res.destroy();
      else sendJson(res, 500, { errors: [{ message: 'Unexpected error.' }] });
    });
  });

  const wss = new WebSocketServer({ server, path: GRAPHQL_PATH, maxPayload: maxBodyBytes });
  const wsServer = useServer<Record<string, unknown> | undefined, WsExtra>(
    {
      execute: (args: unknown) => (args as EnvelopedArgs).rootValue.execute(args as ExecutionArgs),
      subscribe: (args: unknown) => (args as EnvelopedArgs).rootValue.subscribe(args as ExecutionArgs),
      // The same rule as HTTP: the token comes in connection_init ({ authorization: 'Bearer …' } or { token }).
      // Refused with close code 4403; a token revoked or expired later closes the socket with 4403 too.
      onConnect: async (ctx) => {
        const { request, socket } = ctx.extra;
        const refuse = (reason: string) => {
          deps.log.info({ reason }, 'WebSocket refused');
          socket.close(4403, reason.slice(0, 120));
          return false;
        };
        if (hostRefused(request.headers.host)) return refuse('Host refused: without authentication only loopback names are served');
        const csrf = csrfRefusal('GET', (name) => headerOf(request, name), allowedOrigins);
        if (csrf) return refuse(csrf);
        let identity: Identity;
        try {
          identity = await auth.identify(AuthService.credentialFromConnectionParams(ctx.connectionParams));
        } catch (e) {
          if (e instanceof AuthRefusal) return refuse(e.message);
          throw e;
        }
        if (identity.scope === null) return refuse('authentication required: send { authorization: "Bearer <token>" } in connection_init');
        ctx.extra.identity = identity;
        ctx.extra.unwatch = auth.watch(identity, (reason) => socket.close(4403, reason.slice(0, 120)));
        return true;
      },
      onClose: (ctx) => ctx.extra.unwatch?.(),
      onSubscribe: async (ctx, _id, params) => {
        const { schema, execute, subscribe, contextFactory, parse, validate } = yoga.getEnveloped({
          ...ctx,
          req: ctx.extra.request,
          socket: ctx.extra.socket,
          params,
          identity: ctx.extra.identity,
        });
        const args = {
          schema,
          operationName: params.operationName,
          document: parse(params.query),
          variableValues: params.variables,
          contextValue: await contextFactory(),
          rootValue: { execute, subscribe },
        };
        const errors = validate(args.schema, args.document);
        if (errors.length) return errors;
        return args;
      },
    },
    wss,
  );

  let stopping: Promise<void> | undefined;
  return {
    yoga,
    bus,
    operations,
    storage,
    maintenance,
    auth,
    server,
    ready() {
      return (engineStarted ??= startEngines());
    },
    async start(port, host) {
      await auth.start();
      const mode = checkBindAddress(host, auth, insecure);
      await (engineStarted ??= startEngines());
      if (mode === 'enforced') deps.log.info('authentication on: every request needs a token (Authorization: Bearer …)');
      else if (mode === 'open-loopback') {
        deps.log.warn(
          `authentication off: no token configured, so Lockkeeper listens on loopback (${host}) only and treats every local caller as admin; ` +
            'create a token with `lockkeeper token create --scope admin --name <name>` or set LOCKKEEPER_ADMIN_TOKEN to serve other addresses',
        );
      } else deps.log.warn(`INSECURE: authentication off and listening on ${host}: anyone who reaches this port is admin (server.insecure / LOCKKEEPER_INSECURE)`);
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          const address = server.address() as AddressInfo;
          const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
          resolve({ port: address.port, host: address.address, url: `http://${shownHost}:${address.port}${GRAPHQL_PATH}` });
        });
      });
    },
    stop() {
      stopping ??= (async () => {
        stopBridge();
        auth.stop();
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        await wsServer.dispose();
        wss.close();
        server.closeIdleConnections();
        // Streams such as SSE subscriptions never go idle: end them after a short grace.
        const force = setTimeout(() => server.closeAllConnections(), 2000);
        await closed;
        clearTimeout(force);
        if (engineStarted) await engineStarted.catch(() => {});
        await operations.shutdown();
        await deps.backend.close();
        await deps.onClose?.();
      })();
      return stopping;
    },
  };
}

/** What graphql-ws keeps per socket: ws's own, plus the caller's identity once connection_init passed. */
type WsExtra = {
  socket: import('ws').WebSocket;
  request: IncomingMessage;
  identity?: Identity;
  unwatch?: () => void;
};

function headerOf(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** graphql-ws passes our args back; rootValue carries the enveloped execute/subscribe. */
interface EnvelopedArgs {
  rootValue: { execute: typeof execute; subscribe: typeof subscribe };
}
