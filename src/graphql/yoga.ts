import { costLimitPlugin } from '@escape.tech/graphql-armor-cost-limit';
import { maxDepthPlugin } from '@escape.tech/graphql-armor-max-depth';
import { renderGraphiQL } from '@graphql-yoga/render-graphiql';
import { GraphQLError, getOperationAST, Kind, type DocumentNode, type SelectionSetNode, type ValidationContext } from 'graphql';
import { createYoga, isAsyncIterable, maskError, type Plugin, type YogaServerInstance } from 'graphql-yoga';
import { LockkeeperError } from '../domain/errors.ts';
import { toTypedError } from './map-backend-error.ts';
import { csrfRefusal } from '../auth/csrf.ts';
import { refusalError } from '../auth/graphql-errors.ts';
import { AuthRefusal, AuthService, type Identity } from '../auth/service.ts';
import type { Logger } from '../logger.ts';
import { createContext, type AppServices, type GraphQLContext } from './context.ts';
import { useBadRequestStatus } from './bad-request-status.ts';
import { buildSchema } from './schema.ts';

export const GRAPHQL_PATH = '/graphql';

export type LockkeeperYoga = YogaServerInstance<Record<string, unknown>, GraphQLContext>;

/** Abuse limits of GraphQL documents (config `limits`). */
export interface GraphQLLimits {
  /** Deepest field nesting of an operation (fragments flattened; introspection exempt). */
  maxDepth: number;
  /**
   * graphql-armor's static cost, about the number of values the answer can hold: objects 2,
   * scalars 1, a list field's children multiplied by its literal `first`/`last`
   * (introspection exempt). `vms(first: 1000) { … 20 fields … }` costs about 20 000.
   */
  maxCost: number;
}

export const DEFAULT_GRAPHQL_LIMITS: GraphQLLimits = { maxDepth: 15, maxCost: 50_000 };

/** graphql-armor reports with a misleading "Syntax Error:" prefix: report a clear validation error instead. */
const reportLimit = (code: string) => ({
  propagateOnRejection: false,
  onReject: [
    (ctx: ValidationContext | null, error: GraphQLError) =>
      ctx?.reportError(new GraphQLError(error.message.replace(/^Syntax Error: /, ''), { extensions: { code } })),
  ],
});

export interface GraphQLHandlerOptions {
  limits?: Partial<GraphQLLimits>;
  /** Browser origins allowed to call (CORS and CSRF); none by default. */
  allowedOrigins?: readonly string[];
}

/** Identity of an HTTP request (Authorization header) or a WebSocket (set at connection_init). */
async function identityOf(auth: AuthService, initial: Record<string, unknown>): Promise<Identity> {
  if (initial.identity) return initial.identity as Identity;
  const request = initial.request as Request | undefined;
  try {
    return await auth.identify(AuthService.credentialFromHeader(request?.headers.get('authorization')));
  } catch (e) {
    if (e instanceof AuthRefusal) throw refusalError(e);
    throw e;
  }
}

/** Root fields of a mutation, fragments included: each counts against the rate limit. */
function rootFieldCount(selectionSet: SelectionSetNode, document: DocumentNode, seen = new Set<string>()): number {
  let count = 0;
  for (const selection of selectionSet.selections) {
    if (selection.kind === Kind.FIELD) count += selection.name.value.startsWith('__') ? 0 : 1;
    else if (selection.kind === Kind.INLINE_FRAGMENT) count += rootFieldCount(selection.selectionSet, document, seen);
    else if (!seen.has(selection.name.value)) {
      seen.add(selection.name.value);
      const fragment = document.definitions.find((d) => d.kind === Kind.FRAGMENT_DEFINITION && d.name.value === selection.name.value);
      if (fragment && fragment.kind === Kind.FRAGMENT_DEFINITION) count += rootFieldCount(fragment.selectionSet, document, seen);
    }
  }
  return count;
}

/** Mutations per token per minute (HTTP and WebSocket alike): a 429 GraphQL error past the limit. */
function useMutationRateLimit(auth: AuthService): Plugin<GraphQLContext> {
  return {
    onExecute({ args, setResultAndStopExecution }) {
      const operation = getOperationAST(args.document, args.operationName);
      if (operation?.operation !== 'mutation') return;
      const count = rootFieldCount(operation.selectionSet, args.document);
      const waitMs = auth.takeMutations(args.contextValue.identity, count);
      if (waitMs === 0) return;
      const retryAfter = Math.ceil(waitMs / 1000);
      setResultAndStopExecution({
        errors: [
          new GraphQLError(
            count > auth.mutationsPerMinute
              ? `rate limit: a request may carry at most ${auth.mutationsPerMinute} mutations`
              : `rate limit: at most ${auth.mutationsPerMinute} mutations per minute for token "${args.contextValue.identity.name}"; retry in ${retryAfter} s`,
            { extensions: { code: 'RATE_LIMITED', retryAfterSeconds: retryAfter, http: { status: 429, headers: { 'retry-after': String(retryAfter) } } } },
          ),
        ],
      });
    },
  };
}

/**
 * A subscription started with a token ends when the token is revoked or expires (over
 * WebSocket the socket is closed too, see server.ts; this covers SSE as well): the stream
 * sends one UNAUTHENTICATED error and completes.
 */
function useEndSubscriptionsOnRevoke(auth: AuthService): Plugin<GraphQLContext> {
  return {
    onSubscribe({ args }) {
      const identity = args.contextValue.identity;
      if (!identity?.tokenId) return;
      return {
        onSubscribeResult({ result, setResult }) {
          if (isAsyncIterable(result)) setResult(endOnRevoke(result, auth, identity));
        },
      };
    },
  };
}

function endOnRevoke<T>(source: AsyncIterable<T>, auth: AuthService, identity: Identity): AsyncIterableIterator<T> {
  const iterator = source[Symbol.asyncIterator]();
  let revoked: ((reason: string) => void) | undefined;
  const revocation = new Promise<string>((resolve) => (revoked = resolve));
  const unwatch = auth.watch(identity, (reason) => revoked!(reason));
  let finished = false;
  const finish = () => {
    if (finished) return;
    finished = true;
    unwatch();
    // Not awaited: an async generator waiting on its source only returns once that yields.
    Promise.resolve(iterator.return?.()).catch(() => {});
  };
  return {
    [Symbol.asyncIterator]() {
      return this;
    },
    async next() {
      if (finished) return { done: true, value: undefined };
      const next = await Promise.race([iterator.next(), revocation.then((reason) => ({ revokedReason: reason }))]);
      if ('revokedReason' in next) {
        finish();
        const error = new GraphQLError(`subscription ended: ${next.revokedReason}`, { extensions: { code: 'UNAUTHENTICATED' } });
        return { done: false, value: { errors: [error] } as T };
      }
      if (next.done) finish();
      return next;
    },
    async return() {
      finish();
      return { done: true, value: undefined };
    },
    async throw(error?: unknown) {
      finish();
      throw error;
    },
  };
}

/**
 * yoga attaches the JSON parser's own error (`extensions.originalError`) to "POST body sent
 * invalid JSON."; clients get the message and the code, never an inner error object.
 */
function useNoOriginalErrors(): Plugin {
  return {
    onResultProcess({ result, setResult }) {
      // Batching is off: one result (subscriptions stream theirs without parser errors).
      if (Array.isArray(result) || isAsyncIterable(result) || !result.errors?.some((e) => e.extensions?.originalError !== undefined)) return;
      const errors = result.errors.map((e) => {
        if (e.extensions?.originalError === undefined) return e;
        const { originalError: _dropped, ...extensions } = e.extensions;
        return new GraphQLError(e.message, { nodes: e.nodes, source: e.source, positions: e.positions, path: e.path, extensions });
      });
      setResult({ ...result, errors });
    },
  };
}

/** Browser-originated cross-site requests and form posts are refused (src/auth/csrf.ts). */
function useCsrfPrevention(allowedOrigins: readonly string[]): Plugin {
  return {
    onRequest({ request, endResponse, fetchAPI }) {
      const refusal = csrfRefusal(request.method, (name) => request.headers.get(name), allowedOrigins);
      if (!refusal) return;
      endResponse(
        new fetchAPI.Response(JSON.stringify({ errors: [{ message: refusal, extensions: { code: 'CSRF_REFUSED' } }] }), {
          status: 403,
          headers: { 'content-type': 'application/json' },
        }),
      );
    },
  };
}

/**
 * Unexpected faults are masked; what the caller can act on is not. A typed error thrown
 * where a field has no result union, and a backend that is unreachable or overloaded,
 * come through with their message and a stable `extensions.code` (UNAVAILABLE: try
 * again later), never with internals.
 */
function maskUnlessActionable(error: unknown, message: string, isDev?: boolean): Error {
  const original = error instanceof GraphQLError ? error.originalError : error;
  const typed = toTypedError(original);
  if (error instanceof GraphQLError && typed instanceof LockkeeperError) {
    return new GraphQLError(typed.message, { nodes: error.nodes, source: error.source, positions: error.positions, path: error.path, extensions: { code: typed.code } });
  }
  return maskError(error, message, isDev);
}

/**
 * The GraphQL handler shared by HTTP and WebSocket. GraphiQL is rendered from the
 * installed package (assets inlined), so it works on air-gapped clusters.
 */
export function createGraphQLHandler(services: AppServices, log: Logger, options: GraphQLHandlerOptions = {}): LockkeeperYoga {
  const limits = { ...DEFAULT_GRAPHQL_LIMITS, ...options.limits };
  const allowedOrigins = options.allowedOrigins ?? [];
  return createYoga<Record<string, unknown>, GraphQLContext>({
    schema: buildSchema({ simulation: Boolean(services.backend.simulation) }),
    graphqlEndpoint: GRAPHQL_PATH,
    context: async (initial) => createContext(services, await identityOf(services.auth, initial)),
    renderGraphiQL,
    graphiql: { title: 'Lockkeeper', subscriptionsProtocol: 'WS' },
    landingPage: false,
    maskedErrors: { maskError: maskUnlessActionable },
    // yoga's default answers every origin; only the configured ones get CORS headers.
    cors: allowedOrigins.length ? { origin: [...allowedOrigins], credentials: false } : false,
    plugins: [
      useCsrfPrevention(allowedOrigins),
      maxDepthPlugin({ n: limits.maxDepth, flattenFragments: true, exposeLimits: true, ...reportLimit('DEPTH_LIMIT') }),
      costLimitPlugin({ maxCost: limits.maxCost, depthCostFactor: 1, flattenFragments: true, exposeLimits: true, ...reportLimit('COST_LIMIT') }),
      useMutationRateLimit(services.auth),
      useEndSubscriptionsOnRevoke(services.auth),
      useNoOriginalErrors(),
      useBadRequestStatus(),
    ],
    logging: {
      debug: (...args) => log.debug({ args }, 'graphql'),
      info: (...args) => log.info({ args }, 'graphql'),
      warn: (...args) => log.warn({ args }, 'graphql'),
      error: (...args) => log.error({ args }, 'graphql'),
    },
  });
}
