/**
 * graphql-ws on the GraphQL path, through yoga's envelop pipeline (as in graphql-yoga's
 * graphql-ws example), so subscriptions and operations over a socket get the same
 * context, limits and plugins as over HTTP.
 */
import type { IncomingMessage, Server } from 'node:http';
import type { ExecutionArgs, execute, subscribe } from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import { WebSocketServer, type WebSocket } from 'ws';
import { AuthRefusal, AuthService, type Identity } from '../auth/service.ts';
import { DatabaseUnavailableError } from '../domain/errors.ts';
import { GRAPHQL_PATH, type LockkeeperYoga } from '../graphql/yoga.ts';
import type { Logger } from '../logger.ts';

interface GraphQLWebSocketDeps {
  server: Server;
  yoga: LockkeeperYoga;
  auth: AuthService;
  log: Logger;
  /** Largest message, in bytes. */
  maxPayload: number;
  /** Why the upgrade request is refused before its token is looked at (host, CSRF); null to go on. */
  refusal: (request: IncomingMessage) => string | null;
}

/** What graphql-ws keeps per socket: ws's own, plus the caller's identity once connection_init passed. */
type WsExtra = {
  socket: WebSocket;
  request: IncomingMessage;
  identity?: Identity;
  unwatch?: () => void;
};

/** graphql-ws passes our args back; rootValue carries the enveloped execute/subscribe. */
interface EnvelopedArgs {
  rootValue: { execute: typeof execute; subscribe: typeof subscribe };
}

const FORBIDDEN = 4403;
/** RFC 6455 "Try Again Later": the database cannot vouch for the token now (issue 27). */
const TRY_AGAIN_LATER = 1013;
// A close frame's reason has room for 123 bytes.
const closeReason = (reason: string) => reason.slice(0, 120);

/** Serves graphql-ws on `server`; `close` ends every socket (the HTTP server is the caller's). */
export function serveGraphQLOverWebSocket(deps: GraphQLWebSocketDeps): { close(): Promise<void> } {
  const { auth, yoga } = deps;
  const wss = new WebSocketServer({ server: deps.server, path: GRAPHQL_PATH, maxPayload: deps.maxPayload });
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
          socket.close(FORBIDDEN, closeReason(reason));
          return false;
        };
        const refusal = deps.refusal(request);
        if (refusal) return refuse(refusal);
        let identity: Identity;
        try {
          identity = await auth.identify(AuthService.credentialFromConnectionParams(ctx.connectionParams));
        } catch (e) {
          if (e instanceof AuthRefusal) return refuse(e.message);
          // A token the database cannot vouch for now (issue 27): 1013, try again later.
          if (e instanceof DatabaseUnavailableError) {
            socket.close(TRY_AGAIN_LATER, closeReason(e.message));
            return false;
          }
          throw e;
        }
        if (identity.scope === null) return refuse('authentication required: send { authorization: "Bearer <token>" } in connection_init');
        ctx.extra.identity = identity;
        ctx.extra.unwatch = auth.watch(identity, (reason) => socket.close(FORBIDDEN, closeReason(reason)));
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
  return {
    async close() {
      await wsServer.dispose();
      wss.close();
    },
  };
}
