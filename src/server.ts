import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { execute, subscribe, type ExecutionArgs } from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import { WebSocketServer } from 'ws';
import type { ClusterBackend } from './cluster/backend.ts';
import { systemClock, type Clock } from './cluster/clock.ts';
import { bridgeBackendEvents } from './events/backend-bridge.ts';
import { createEventBus, type EventBus } from './events/bus.ts';
import { createGraphQLHandler, GRAPHQL_PATH, type LockkeeperYoga } from './graphql/yoga.ts';
import type { Logger } from './logger.ts';
import { OperationEngine } from './operations/engine.ts';
import { MaintenanceEngine } from './operations/maintenance/engine.ts';
import { createOperationMetrics } from './operations/metrics.ts';
import { createNeonFacade } from './rest/neon-facade.ts';
import { DEFAULT_OPERATION_SETTINGS, type OperationSettings } from './operations/settings.ts';
import { AuditLog } from './store/audit-log.ts';
import type { PrismaClient } from './store/index.ts';

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
}

export interface App {
  yoga: LockkeeperYoga;
  bus: EventBus;
  operations: OperationEngine;
  maintenance: MaintenanceEngine;
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
  const operations = new OperationEngine({
    prisma: deps.prisma,
    backend: deps.backend,
    bus,
    clock,
    log: deps.log,
    settings: deps.settings ?? DEFAULT_OPERATION_SETTINGS,
    observer: metrics.observer,
  });
  const maintenance = new MaintenanceEngine({
    prisma: deps.prisma,
    backend: deps.backend,
    bus,
    clock,
    log: deps.log,
    settings: deps.settings ?? DEFAULT_OPERATION_SETTINGS,
    observer: metrics.observer,
    operations,
  });
  const neonFacade = createNeonFacade({ engine: operations, backend: deps.backend, audit, clock, log: deps.log });
  const yoga = createGraphQLHandler({ backend: deps.backend, bus, operations, maintenance, audit, clock }, deps.log);
  let engineStarted: Promise<void> | undefined;
  const startEngines = async () => {
    await operations.start();
    await maintenance.start();
  };

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/healthz') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ status: 'ok', backend: deps.backend.name, ...deps.health?.() }));
      return;
    }
    if (path === '/metrics') {
      void metrics.registry.metrics().then((text) => {
        res.writeHead(200, { 'content-type': metrics.registry.contentType });
        res.end(text);
      });
      return;
    }
    if (path === '/' && req.method === 'GET') {
      res.writeHead(302, { location: GRAPHQL_PATH });
      res.end();
      return;
    }
    void neonFacade(req, res).then(async (handled) => {
      if (!handled) await yoga.handle(req, res);
    });
  });

  const wss = new WebSocketServer({ server, path: GRAPHQL_PATH });
  const wsServer = useServer(
    {
      execute: (args: unknown) => (args as EnvelopedArgs).rootValue.execute(args as ExecutionArgs),
      subscribe: (args: unknown) => (args as EnvelopedArgs).rootValue.subscribe(args as ExecutionArgs),
      onSubscribe: async (ctx, _id, params) => {
        const { schema, execute, subscribe, contextFactory, parse, validate } = yoga.getEnveloped({
          ...ctx,
          req: ctx.extra.request,
          socket: ctx.extra.socket,
          params,
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
    maintenance,
    server,
    ready() {
      return (engineStarted ??= startEngines());
    },
    async start(port, host) {
      await (engineStarted ??= startEngines());
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
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        await wsServer.dispose();
        wss.close();
        server.closeIdleConnections();
        // Streams such as SSE subscriptions never go idle: end them after a short grace.
        const force = setTimeout(() => server.closeAllConnections(), 2000);
        await closed;
        clearTimeout(force);
        if (engineStarted) await engineStarted.catch(() => {});
        await maintenance.shutdown();
        await operations.shutdown();
        await deps.backend.close();
        await deps.onClose?.();
      })();
      return stopping;
    },
  };
}

/** graphql-ws passes our args back; rootValue carries the enveloped execute/subscribe. */
interface EnvelopedArgs {
  rootValue: { execute: typeof execute; subscribe: typeof subscribe };
}
