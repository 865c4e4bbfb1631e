import { createServer, type Server } from 'node:http';
import { csrfRefusal } from './auth/csrf.ts';
import { AuthService, checkBindAddress } from './auth/service.ts';
import { ApiTokenStore } from './auth/token-store.ts';
import type { ClusterBackend } from './cluster/backend.ts';
import { systemClock, type Clock } from './cluster/clock.ts';
import type { LockkeeperConfig } from './config/schema.ts';
import { bridgeBackendEvents } from './events/backend-bridge.ts';
import { createEventBus, type EventBus } from './events/bus.ts';
import { createGraphQLHandler, type LockkeeperYoga } from './graphql/yoga.ts';
import { createHostCheck, LOOPBACK_ONLY } from './http/host-check.ts';
import { listen } from './http/listen.ts';
import { restAuthorizer } from './http/rest-auth.ts';
import { requestListener } from './http/router.ts';
import { lockkeeperRoutes } from './http/routes.ts';
import { serveGraphQLOverWebSocket } from './http/websocket.ts';
import type { Logger } from './logger.ts';
import { OperationCoordinator } from './operations/core/coordinator.ts';
import { createOperationMetrics } from './operations/core/metrics.ts';
import { DeleteEngine } from './operations/delete/engine.ts';
import { FailoverEngine } from './operations/failover/engine.ts';
import { ShardControls } from './operations/shard-controls/service.ts';
import { MaintenanceEngine } from './operations/maintenance/engine.ts';
import { RolloutEngine } from './operations/rollouts/engine.ts';
import { StorageEngine } from './operations/storage/engine.ts';
import { headerOf } from './rest/http-io.ts';
import { createNeonFacade } from './rest/neon-facade.ts';
import { AuditLog } from './store/audit-log.ts';
import { EventLog } from './store/event-log.ts';
import type { PrismaClient } from './store/index.ts';
import { createRepositories } from './store/repositories.ts';

/** The sections of the config the server uses (start.ts binds `server.port` and `server.host`). */
type AppConfig = Pick<LockkeeperConfig, 'server' | 'operations' | 'auth' | 'limits'>;

export interface AppDeps {
  backend: ClusterBackend;
  log: Logger;
  prisma: PrismaClient;
  /** Parsed once at start (src/config/load.ts): every default is in place. */
  config: AppConfig;
  clock?: Clock;
  /** LOCKKEEPER_ADMIN_TOKEN: accepted as an admin token named `bootstrap-admin`; turns authentication on. */
  bootstrapToken?: string | undefined;
  /** Wall clock for token expiry, last use and rate limits (tests); default Date.now. */
  now?: () => number;
  /** Closed last on stop (the database). */
  onClose?: () => Promise<void>;
  /** Extra checks for /healthz. */
  health?: () => Record<string, unknown>;
}

export interface App {
  yoga: LockkeeperYoga;
  bus: EventBus;
  /** Every operation: reads, progress, start (resumption) and stop. */
  operations: OperationCoordinator;
  storage: StorageEngine;
  maintenance: MaintenanceEngine;
  rollouts: RolloutEngine;
  failover: FailoverEngine;
  deletes: DeleteEngine;
  shardControls: ShardControls;
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
 * One HTTP port for everything: GraphQL over POST/GET, graphql-ws on the same path,
 * GraphiQL, the Neon-compatible REST facade under /control/v1, /metrics and /healthz.
 */
export function buildApp(deps: AppDeps): App {
  const { config, log } = deps;
  const bus = createEventBus();
  const clock = deps.clock ?? systemClock;
  const stopBridge = bridgeBackendEvents(deps.backend, bus);
  const audit = new AuditLog(deps.prisma);
  const metrics = createOperationMetrics({ onError: (e) => log.warn({ err: e }, 'metrics update failed') });
  const shared = { store: createRepositories(deps.prisma), bus, clock, log, observer: metrics.observer };
  const operations = new OperationCoordinator(shared);
  const engineDeps = { ...shared, operations, backend: deps.backend, settings: config.operations };
  // Constructed in start order: storage policies are loaded before maintenance resumes.
  const storage = new StorageEngine(engineDeps);
  const maintenance = new MaintenanceEngine(engineDeps);
  const rollouts = new RolloutEngine({ ...engineDeps, storage, maintenance, audit });
  const failover = new FailoverEngine({ ...engineDeps, storage, audit });
  const deletes = new DeleteEngine({ ...engineDeps, storage });
  const shardControls = new ShardControls({ ...engineDeps, storage });
  const auth = new AuthService(new ApiTokenStore(deps.prisma), log, {
    bootstrapToken: deps.bootstrapToken,
    recheckIntervalMs: config.auth.recheckIntervalMs,
    mutationsPerMinute: config.limits.mutationsPerMinute,
    ...(deps.now && { now: deps.now }),
  });
  const { allowedOrigins, insecure } = config.server;
  const { maxBodyBytes } = config.limits;

  const neonFacade = createNeonFacade({
    storage,
    failover,
    deletes,
    shardControls,
    backend: deps.backend,
    audit,
    clock,
    log,
    maxBodyBytes,
    authorize: restAuthorizer(auth),
  });
  const yoga = createGraphQLHandler(
    {
      backend: deps.backend,
      bus,
      operations,
      storage,
      maintenance,
      rollouts,
      failover,
      deletes,
      shardControls,
      audit,
      events: new EventLog(deps.prisma),
      clock,
      auth,
    },
    log,
    {
      limits: config.limits,
      allowedOrigins,
    },
  );
  const refusesHost = createHostCheck(auth, insecure);
  const routes = lockkeeperRoutes({
    auth,
    refusesHost,
    allowedOrigins,
    health: () => ({ status: 'ok', backend: deps.backend.name, ...deps.health?.() }),
    metrics: metrics.registry,
    metricsScope: config.auth.metrics,
    neonFacade,
    yoga,
    maxBodyBytes,
  });
  const server = createServer(requestListener(routes, (e) => log.error({ err: e }, 'HTTP request failed')));
  const webSockets = serveGraphQLOverWebSocket({
    server,
    yoga,
    auth,
    log,
    maxPayload: maxBodyBytes,
    refusal: (request) =>
      refusesHost(request.headers.host) ? `Host refused: ${LOOPBACK_ONLY}` : csrfRefusal('GET', (name) => headerOf(request, name), allowedOrigins),
  });

  let engineStarted: Promise<void> | undefined;
  const startEngines = async () => {
    await auth.start();
    await operations.start();
  };
  let stopping: Promise<void> | undefined;
  return {
    yoga,
    bus,
    operations,
    storage,
    maintenance,
    rollouts,
    failover,
    deletes,
    shardControls,
    auth,
    server,
    ready() {
      return (engineStarted ??= startEngines());
    },
    async start(port, host) {
      await auth.start();
      const mode = checkBindAddress(host, auth, insecure);
      await (engineStarted ??= startEngines());
      announceAccessMode(log, mode, host);
      return listen(server, port, host);
    },
    stop() {
      stopping ??= (async () => {
        stopBridge();
        auth.stop();
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        await webSockets.close();
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

function announceAccessMode(log: Logger, mode: ReturnType<typeof checkBindAddress>, host: string): void {
  if (mode === 'enforced') log.info('authentication on: every request needs a token (Authorization: Bearer …)');
  else if (mode === 'open-loopback') {
    log.warn(
      `authentication off: no token configured, so Lockkeeper listens on loopback (${host}) only and treats every local caller as admin; ` +
        'create a token with `lockkeeper token create --scope admin --name <name>` or set LOCKKEEPER_ADMIN_TOKEN to serve other addresses',
    );
  } else log.warn(`INSECURE: authentication off and listening on ${host}: anyone who reaches this port is admin (server.insecure / LOCKKEEPER_INSECURE)`);
}
