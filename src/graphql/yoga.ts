import { GraphQLError } from 'graphql';
import { createYoga, maskError, type YogaServerInstance } from 'graphql-yoga';
import { AuthRefusal, AuthService, type Identity } from '../auth/service.ts';
import { refusalError } from '../auth/graphql-errors.ts';
import type { LimitSettings } from '../config/schema.ts';
import { DatabaseUnavailableError, LockkeeperError } from '../domain/errors.ts';
import type { DatabaseAvailability } from '../store/database-availability.ts';
import type { Logger } from '../logger.ts';
import { createContext, type AppServices, type GraphQLContext } from './context.ts';
import { toTypedError } from './map-backend-error.ts';
import { useBrowserHardening } from './browser-hardening.ts';
import { useAliasLimit } from './plugins/use-alias-limit.ts';
import { useCompiledQueries } from './plugins/use-compiled-queries.ts';
import { useCostLimit } from './plugins/use-cost-limit.ts';
import { useCsrfPrevention } from './plugins/use-csrf-prevention.ts';
import { useDepthLimit } from './plugins/use-depth-limit.ts';
import { useEndSubscriptionsOnRevoke } from './plugins/use-end-subscriptions-on-revoke.ts';
import { useMutationRateLimit } from './plugins/use-mutation-rate-limit.ts';
import { useNoOriginalErrors } from './plugins/use-no-original-errors.ts';
import { useSharedSubscriptionResults } from './plugins/use-shared-subscription-results.ts';
import { useHttpStatus } from './plugins/use-http-status.ts';
import { buildSchema } from './schema.ts';

export const GRAPHQL_PATH = '/graphql';

export type LockkeeperYoga = YogaServerInstance<Record<string, unknown>, GraphQLContext>;

export interface GraphQLHandlerOptions {
  /** Abuse limits of GraphQL documents (config `limits`). */
  limits: Pick<LimitSettings, 'maxDepth' | 'maxCost' | 'maxAliases'>;
  /** Browser origins allowed to call (CORS and CSRF). */
  allowedOrigins: readonly string[];
}

/** Identity of an HTTP request (Authorization header) or a WebSocket (set at connection_init). */
async function identityOf(auth: AuthService, initial: Record<string, unknown>): Promise<Identity> {
  if (initial.identity) return initial.identity as Identity;
  const request = initial.request as Request | undefined;
  try {
    return await auth.identify(AuthService.credentialFromHeader(request?.headers.get('authorization')));
  } catch (e) {
    if (e instanceof AuthRefusal) throw refusalError(e);
    // A token the database cannot vouch for now: refused before GraphQL runs, so no `data`
    // and 503 with Retry-After (issue 27); a token verified before the outage got this far.
    if (e instanceof DatabaseUnavailableError) throw databaseRefusal(e);
    throw e;
  }
}

function databaseRefusal(e: DatabaseUnavailableError): GraphQLError {
  return new GraphQLError(e.message, {
    extensions: { code: e.code, database: e.database, http: { status: 503, headers: { 'retry-after': String(DatabaseUnavailableError.RETRY_AFTER_S) } } },
  });
}

/**
 * Unexpected faults are masked; what the caller can act on is not. A typed error thrown
 * where a field has no result union, and a backend that is unreachable or overloaded,
 * come through with their message and a stable `extensions.code` (UNAVAILABLE: try
 * again later), never with internals.
 */
function maskUnlessActionable(database: DatabaseAvailability | undefined, error: unknown, message: string, isDev?: boolean): Error {
  const original = error instanceof GraphQLError ? error.originalError : error;
  // A field that needs the database while it is unreachable: UNAVAILABLE naming it, never masked (issue 27).
  const typed = toTypedError(database ? database.typed(original) : original);
  if (error instanceof GraphQLError && typed instanceof LockkeeperError) {
    return new GraphQLError(typed.message, {
      nodes: error.nodes,
      source: error.source,
      positions: error.positions,
      path: error.path,
      extensions: { code: typed.code, ...(typed instanceof DatabaseUnavailableError && { database: typed.database }) },
    });
  }
  return maskError(error, message, isDev);
}

/**
 * The GraphQL handler shared by HTTP and WebSocket. GraphiQL is rendered from the
 * installed package (assets inlined), so it works on air-gapped clusters; its Headers tab's
 * token also reaches graphql-ws (./graphiql.ts), which is imported on the first page asked for.
 */
export function createGraphQLHandler(services: AppServices, log: Logger, { limits, allowedOrigins }: GraphQLHandlerOptions): LockkeeperYoga {
  return createYoga<Record<string, unknown>, GraphQLContext>({
    schema: buildSchema({ simulation: Boolean(services.backend.simulation) }),
    graphqlEndpoint: GRAPHQL_PATH,
    context: async (initial) => createContext(services, await identityOf(services.auth, initial)),
    // Loaded on the first GraphiQL page only: the package holds ~30 MiB of inlined assets
    // (as module source and as strings) that a gateway serving only API calls never needs.
    renderGraphiQL: async (options) => (await import('./graphiql.ts')).renderLockkeeperGraphiQL(options),
    graphiql: { title: 'Lockkeeper', subscriptionsProtocol: 'WS' },
    landingPage: false,
    // Every HTTP body is read and bounded (limits.maxBodyBytes, 413) before yoga sees it
    // (http/graphql-over-http.ts), WebSocket messages by maxPayload; yoga's own 25 MB check
    // re-streamed each body through a TransformStream into a new Request, ~3 % of a small
    // request's CPU (issue 29 point 4).
    maxRequestBodySize: false,
    maskedErrors: { maskError: (error, message, isDev) => maskUnlessActionable(services.database, error, message, isDev) },
    // yoga's default answers every origin; only the configured ones get CORS headers.
    cors: allowedOrigins.length ? { origin: [...allowedOrigins], credentials: false } : false,
    plugins: [
      useCsrfPrevention({ allowedOrigins }),
      useDepthLimit(limits),
      useCostLimit(limits),
      useAliasLimit(limits),
      useMutationRateLimit({ auth: services.auth }),
      useEndSubscriptionsOnRevoke({ auth: services.auth }),
      useSharedSubscriptionResults(),
      useNoOriginalErrors(),
      useHttpStatus(),
      useCompiledQueries(),
      useBrowserHardening(),
    ],
    logging: {
      debug: (...args) => log.debug({ args }, 'graphql'),
      info: (...args) => log.info({ args }, 'graphql'),
      warn: (...args) => log.warn({ args }, 'graphql'),
      // A field that met the database's outage is answered UNAVAILABLE: a warning, not a crash.
      error: (...args) =>
        services.database && args.some((a) => services.database!.isOutage(a))
          ? log.warn({ args }, 'graphql: database unavailable')
          : log.error({ args }, 'graphql'),
    },
  });
}
