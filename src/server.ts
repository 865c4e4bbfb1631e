import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { execute, subscribe, type ExecutionArgs } from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import { WebSocketServer } from 'ws';
import type { ClusterBackend } from './cluster/backend.ts';
import { bridgeBackendEvents } from './events/backend-bridge.ts';
import { createEventBus, type EventBus } from './events/bus.ts';
import { createGraphQLHandler, GRAPHQL_PATH, type LockkeeperYoga } from './graphql/yoga.ts';
import type { Logger } from './logger.ts';

export interface AppDeps {
  backend: ClusterBackend;
  log: Logger;
  /** Closed last on stop (the database). */
  onClose?: () => Promise<void>;
  /** Extra checks for /healthz. */
  health?: () => Record<string, unknown>;
}

export interface App {
  yoga: LockkeeperYoga;
  bus: EventBus;
  server: Server;
  /** Listens; port 0 picks a free port. Resolves with the bound address. */
  start(port: number, host: string): Promise<{ port: number; host: string; url: string }>;
  /** Graceful: stops accepting, ends WebSocket and HTTP connections, closes the backend and the database. */
  stop(): Promise<void>;
}

/**
 * One HTTP port for everything: GraphQL over POST/GET, graphql-ws on the same path
 * (through yoga's envelop pipeline, as in graphql-yoga's graphql-ws example), GraphiQL,
 * and /healthz.
 */
export function buildApp(deps: AppDeps): App {
  const bus = createEventBus();
  const stopBridge = bridgeBackendEvents(deps.backend, bus);
  const yoga = createGraphQLHandler({ backend: deps.backend, bus }, deps.log);

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/healthz') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ status: 'ok', backend: deps.backend.name, ...deps.health?.() }));
      return;
    }
    if (path === '/' && req.method === 'GET') {
      res.writeHead(302, { location: GRAPHQL_PATH });
      res.end();
      return;
    }
    void yoga.handle(req, res);
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
    server,
    start(port, host) {
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
