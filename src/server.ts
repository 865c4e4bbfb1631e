import { createServer, type Server } from 'node:http';
import { csrfRefusal } from './auth/csrf.ts';
import { AuthService, checkBindAddress } from './auth/service.ts';
import { ApiTokenStore } from './auth/token-store.ts';
import type { ClusterBackend } from './cluster/backend.ts';
import { systemClock, type Clock } from './cluster/clock.ts';
import type { LockkeeperConfig } from './config/schema.ts';
import { bridgeBackendEvents } from './events/backend-bridge.ts';
import { createEventBus, type EventBus } from './events/bus.ts';
import { createGraphQLHandler, GRAPHQL_PATH, type LockkeeperYoga } from './graphql/yoga.ts';
import { createHostCheck, LOOPBACK_ONLY } from './http/host-check.ts';
import { listen } from './http/listen.ts';
import { restAuthorizer } from './http/rest-auth.ts';
import { requestListener } from './http/router.ts';
import { lockkeeperRoutes } from './http/routes.ts';
import { serveGraphQLOverWebSocket } from './http/websocket.ts';
import type { Logger } from './logger.ts';
import { OperationCoordinator } from './operations/core/coordinator.ts';
import { createOperationMetrics } from './operations/core/metrics.ts';
import { RemainingReader } from './operations/core/remaining-reader.ts';
import { DeleteEngine } from './operations/delete/engine.ts';
import { FailoverEngine } from './operations/failover/engine.ts';
import { ShardControls } from './operations/shard-controls/service.ts';
import { MaintenanceEngine } from './operations/maintenance/engine.ts';
import { RolloutEngine } from './operations/rollouts/engine.ts';
import { StorageEngine } from './operations/storage/engine.ts';
import { headerOf } from './rest/http-io.ts';
import { createNeonFacade } from './rest/neon-facade.ts';
import { AuditLog } from './store/audit-log.ts';
import type { HotPath } from './store/hot-path-sql.ts';
import type { PrismaClient } from './store/index.ts';
import { createRepositories } from './store/repositories.ts';
import { leaderFence } from './leadership/fence.ts';
import { leaderOnlyBackend } from './leadership/leader-only-backend.ts';
import { soleLeadership, type Leadership } from './leadership/leadership.ts';
import { leadershipHealth } from './leadership/health.ts';
import { DatabaseAvailability } from './store/database-availability.ts';
import { registerReadinessMetrics, type Readiness } from './http/readiness.ts';
import { StandbyReads } from './leadership/standby-reads.ts';
import { AdmittedWork } from './leadership/admitted-work.ts';
import { StandbyRelay } from './leadership/standby-relay.ts';
import { EventWakeup } from './events/event-wakeup.ts';
import { registerLeadershipMetrics } from './leadership/metrics.ts';
import { createLeaderEndpoints } from './rest/leader-endpoints.ts';
import { leaderForward } from './http/leader-forward.ts';
import { RehearsalService, type RehearsalServiceDeps } from './rehearsal/service.ts';
import { runRehearsalInWorker } from './rehearsal/run-in-worker.ts';
import { planBasisOf } from './rehearsal/plan-basis.ts';
import { readHistory } from './rehearsal/history-read.ts';
import { aggregateSamples } from './domain/rehearsal/report.ts';

/** The sections of the config the server uses (start.ts binds `server.port` and `server.host`). */
type AppConfig = Pick<LockkeeperConfig, 'server' | 'operations' | 'auth' | 'limits'> & Partial<Pick<LockkeeperConfig, 'plugins'>>;

export interface AppDeps {
  backend: ClusterBackend;
  log: Logger;
  prisma: PrismaClient;
  /** The database dialect's hot path (Database.hotPath). */
  hotPath: HotPath;
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
  /** PostgreSQL: the URL to LISTEN for other replicas' events on (ha:E1). */
  postgresUrl?: string;
  /** Which replica leads (PostgreSQL, several replicas: ha:L1); default: this process alone, always the leader. */
  leadership?: Leadership;
  /** The database as operators name it, in UNAVAILABLE answers (Database.file); default "the database". */
  databaseName?: string;
  /** How often the database's availability is probed (issue 27); default 2 s. */
  databaseProbeMs?: number;
  /** Parts of the rehearsals (issue 33) replaced by tests (e.g. the worker); the rest as in production. */
  rehearsal?: Partial<Pick<RehearsalServiceDeps, 'snapshot' | 'history' | 'runSamples' | 'aggregate' | 'planBasis'>>;
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
  /** Rehearsals of rollouts (issue 33). */
  rehearsals: RehearsalService;
  auth: AuthService;
  /** Wakes event-log subscribers on new events, this replica's and (PostgreSQL) the others' (ha:E1). */
  eventWakeup: EventWakeup;
  /** Whether the database answers, as this replica sees it (issue 27). */
  database: DatabaseAvailability;
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
  const leadership = deps.leadership ?? soleLeadership();
  registerLeadershipMetrics(metrics.registry, leadership);
  const database = new DatabaseAvailability({
    name: deps.databaseName ?? 'the database',
    probe: () => deps.prisma.$queryRawUnsafe('SELECT 1'),
    ...(deps.databaseProbeMs !== undefined && { intervalMs: deps.databaseProbeMs }),
    onChange: (state, detail) => {
      if (state === 'down') {
        log.warn({ database: deps.databaseName, detail }, 'database unavailable: what needs it answers UNAVAILABLE until it is back');
        return;
      }
      log.info({ database: deps.databaseName }, 'database available again');
      // Runs the outage stopped resume from their last commit (on PostgreSQL the lease's
      // return does it too; on SQLite nothing else would).
      if (leadership.canAct()) {
        operations
          .writeQueued()
          .then(() => operations.adopt())
          .catch((e: unknown) => log.warn({ err: e }, 'resuming operations after the database came back failed; the next probe tries again'));
      }
    },
  });
  // Down when this replica's requests or probes fail, or its lease exchanges do (ha:L6).
  const databaseState = () => (database.state === 'down' || leadership.status().database === 'down' ? 'down' : 'up');
  const readiness: Readiness = { phase: 'starting', database: databaseState };
  registerReadinessMetrics(metrics.registry, readiness);
  const eventWakeup = new EventWakeup();
  const store = createRepositories(deps.prisma, deps.hotPath, leaderFence(leadership), () => eventWakeup.notify());
  const shared = { store, bus, clock, log, observer: metrics.observer, mayAct: () => leadership.canAct(), authority: () => leadership.authority() };
  const operations = new OperationCoordinator(shared);
  // What other replicas admit, the leader adopts (ha:R2).
  const admitted = new AdmittedWork(
    () => operations.adopt(),
    (e) => log.warn({ err: e }, 'adopting work admitted by other replicas failed; the next pass tries again'),
  );
  // Other replicas' events (PostgreSQL NOTIFY) wake this one's subscribers too, and their
  // admissions this one if it leads. (Loaded only then: a SQLite gateway never loads `pg`.)
  const eventListener = deps.postgresUrl
    ? import('./store/postgresql-listener.ts').then((m) =>
        m.listenForEvents(
          deps.postgresUrl!,
          () => eventWakeup.notify(),
          () => admitted.wake(),
        ),
      )
    : null;
  // The engines act on the backend only while this replica leads (ha:L2).
  const engineDeps = {
    ...shared,
    operations,
    backend: leaderOnlyBackend(
      deps.backend,
      () => leadership.canAct(),
      () => leadership.authority(),
    ),
    settings: config.operations,
  };
  // Constructed in start order: storage policies are loaded before maintenance resumes.
  const storage = new StorageEngine(engineDeps);
  const maintenance = new MaintenanceEngine(engineDeps);
  const rollouts = new RolloutEngine({ ...engineDeps, storage, maintenance, audit });
  const failover = new FailoverEngine({ ...engineDeps, storage, audit });
  const deletes = new DeleteEngine({ ...engineDeps, storage });
  const shardControls = new ShardControls({ ...engineDeps, storage });
  const rehearsals = new RehearsalService({
    prisma: deps.prisma,
    clock,
    log,
    config: () => ({ plugins: config.plugins ?? [], operations: config.operations }),
    plan: (input) => rollouts.plan(input),
    // The backends' snapshot (issue 33): a backend without one rehearses nothing of its own.
    snapshot: async () => (await deps.backend.snapshot?.()) ?? [],
    history: () => readHistory(deps.prisma),
    runSamples: runRehearsalInWorker,
    aggregate: aggregateSamples,
    planBasis: async (input, plan) => planBasisOf(input, plan, await rollouts.clusterView()),
    ...deps.rehearsal,
  });
  const auth = new AuthService(new ApiTokenStore(deps.prisma, deps.hotPath.findApiToken), log, {
    bootstrapToken: deps.bootstrapToken,
    recheckIntervalMs: config.auth.recheckIntervalMs,
    mutationsPerMinute: config.limits.mutationsPerMinute,
    outageGraceMs: config.auth.outageGraceMs,
    typedError: (e) => database.typed(e),
    ...(deps.now && { now: deps.now }),
  });
  const { allowedOrigins, insecure } = config.server;
  const { maxBodyBytes } = config.limits;

  const remaining = new RemainingReader(deps.backend, shared.store.operations, config.operations, clock);
  metrics.watchState({
    nodes: () => deps.backend.listNodes(),
    maintenancePhase: (nodeId) => maintenance.stateOf(nodeId)?.phase ?? null,
    operationCounts: () => shared.store.operations.countByState(),
    onError: (e) => log.warn({ err: e }, 'metrics: reading the cluster state failed'),
  });
  const neonFacade = createNeonFacade({
    storage,
    failover,
    deletes,
    shardControls,
    backend: deps.backend,
    remaining,
    audit,
    clock,
    log,
    maxBodyBytes,
    authorize: restAuthorizer(auth),
    typedError: (e) => database.typed(e),
  });
  const yoga = createGraphQLHandler(
    {
      backend: deps.backend,
      bus,
      operations,
      storage,
      maintenance,
      rollouts,
      rehearsals,
      failover,
      deletes,
      shardControls,
      audit,
      events: store.events,
      clock,
      auth,
      leadership,
      eventWakeup,
      remaining,
      database,
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
    health: () => ({
      status: 'ok',
      backend: deps.backend.name,
      ...leadershipHealth(leadership.status()),
      ...databaseHealth(databaseState(), database),
      ...maintenanceModeOf(deps.backend),
      ...deps.health?.(),
    }),
    readiness,
    metrics: metrics.registry,
    metricsScope: config.auth.metrics,
    neonFacade,
    leaderEndpoints: createLeaderEndpoints({ leadership, audit, clock, authorize: restAuthorizer(auth) }),
    yoga,
    maxBodyBytes,
    forwardMutation: leaderForward({
      leads: () => leadership.canAct(),
      leaderAddress: async () => (await leadership.leader())?.address ?? null,
      graphqlPath: GRAPHQL_PATH,
      log,
    }),
  });
  const server = createServer(requestListener(routes, (e) => log.error({ err: e }, 'HTTP request failed')));
  const webSockets = serveGraphQLOverWebSocket({
    server,
    yoga,
    auth,
    log,
    maxPayload: maxBodyBytes,
    refusal: (request) =>
      readiness.phase !== 'serving'
        ? `lockkeeper is ${readiness.phase}; try again shortly`
        : refusesHost(request.headers.host)
          ? `Host refused: ${LOOPBACK_ONLY}`
          : csrfRefusal('GET', (name) => headerOf(request, name), allowedOrigins),
  });

  // The operations run on the leader only: started when this replica becomes leader
  // (resuming what the previous one left: ha:L4), halted when it stops leading (ha:L3).
  let roleChanges = Promise.resolve();
  const standBy = new StandbyReads(store, log);
  // ha:E3: only where other replicas lead (a shared database).
  const relay = store.shared ? new StandbyRelay({ store, bus, backend: deps.backend, wakeup: eventWakeup, log }) : null;
  const unwatchRole = leadership.onChange(({ role }) => {
    roleChanges = roleChanges
      .then(async () => {
        if (role === 'leader') {
          standBy.stop();
          await relay?.stop();
          // The backend's own state first (ha:L4): a resumed cut-over on a stand-by's stale intent met the previous leader's swap mid-way (ha:scenario-1).
          await deps.backend.beforeLeading?.();
          await operations.start();
          // Rehearsals run on the leader: what the previous one (or this process before a restart) left RUNNING died with it.
          await rehearsals.recover();
          if (store.shared) admitted.start();
        } else {
          admitted.stop();
          operations.suspend();
          await standBy.start();
          await relay?.start();
        }
      })
      .catch((e: unknown) => {
        // The database went away during the change (a leader steps down because it did):
        // an outage, not a crash; the change is made again when the lease is (issue 27).
        if (database.isOutage(e)) log.warn({ role, detail: database.detail }, `database unavailable while changing role to ${role}; resuming once it is back`);
        else log.error({ err: e, role }, 'changing role failed');
      });
  });
  let engineStarted: Promise<void> | undefined;
  const startEngines = async () => {
    database.start();
    // Serving starts once this replica hears the others' commits (or polls for them: the
    // first LISTEN failed), so no commit made after start-up goes unheard until the poll.
    await (
      await eventListener
    )?.listening;
    await auth.start();
    await leadership.start();
    await roleChanges;
    // A replica that starts as a stand-by (no change of role yet) serves reads from the start.
    if (leadership.status().role === 'standby') {
      await standBy.start();
      await relay?.start();
    }
  };
  let stopping: Promise<void> | undefined;
  return {
    yoga,
    bus,
    operations,
    storage,
    maintenance,
    rollouts,
    rehearsals,
    failover,
    deletes,
    shardControls,
    auth,
    eventWakeup,
    database,
    server,
    async ready() {
      await (engineStarted ??= startEngines());
      if (!stopping) readiness.phase = 'serving';
    },
    async start(port, host) {
      await auth.start();
      const mode = checkBindAddress(host, auth, insecure);
      // Listening first: probes see /readyz 503 `starting` while the operations resume, and
      // every other request a 503 with Retry-After.
      const bound = await listen(server, port, host);
      await (engineStarted ??= startEngines());
      if (!stopping) readiness.phase = 'serving';
      announceAccessMode(log, mode, host);
      return bound;
    },
    stop() {
      readiness.phase = 'stopping';
      stopping ??= (async () => {
        stopBridge();
        database.stop();
        auth.stop();
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        await webSockets.close();
        server.closeIdleConnections();
        // Streams such as SSE subscriptions never go idle: end them after a short grace.
        const force = setTimeout(() => server.closeAllConnections(), 2000);
        await closed;
        clearTimeout(force);
        if (engineStarted) await engineStarted.catch(() => {});
        unwatchRole();
        standBy.stop();
        await relay?.stop();
        admitted.stop();
        await admitted.settled();
        // Its worker ends with the process; the row says so (FAILED, interrupted).
        await rehearsals.stop();
        // Hand-over (ha:L5): runs halted and their writes committed, then the lease released.
        await roleChanges;
        if (leadership.canAct()) await operations.shutdown().catch((e: unknown) => log.warn({ err: e }, 'last writes before the hand-over failed'));
        else operations.suspend();
        await leadership.stop();
        await (await eventListener)?.close();
        await deps.backend.close();
        await deps.onClose?.();
        metrics.close();
      })();
      return stopping;
    },
  };
}

/** The database's part of /healthz: `database: down` and the driver's words while it is unavailable. */
function databaseHealth(state: 'up' | 'down', database: DatabaseAvailability): Record<string, unknown> {
  return { database: state, databaseStatus: state, ...(state === 'down' && database.detail && { databaseError: database.detail }) };
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

/** k8s:H9: on backends with Harvester's node state, who does the maintenance work (shown in /healthz). */
function maintenanceModeOf(backend: ClusterBackend): { maintenance?: { mode: 'delegate' | 'act'; controller?: string; reason?: string } } {
  const marks = backend.nodeMaintenance;
  if (!marks) return {};
  const d = marks.delegate;
  return { maintenance: d ? { mode: 'delegate', controller: d.controller, reason: d.reason } : { mode: 'act' } };
}
