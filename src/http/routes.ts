import type { Registry } from 'prom-client';
import type { Scope } from '../auth/scopes.ts';
import type { AuthService } from '../auth/service.ts';
import { GRAPHQL_PATH, type LockkeeperYoga } from '../graphql/yoga.ts';
import { csrfGuard } from './csrf-guard.ts';
import { dashboardFile, DASHBOARD_PATHS } from './dashboard.ts';
import { graphqlOverHttp } from './graphql-over-http.ts';
import { hostGuard, type HostCheck } from './host-check.ts';
import { metricsAuth } from './metrics-auth.ts';
import { phaseGuard, READY_PATH, readinessAnswer, type Readiness } from './readiness.ts';
import type { Mount, RouteTable } from './router.ts';

const HEALTH_PATH = '/healthz';
const METRICS_PATH = '/metrics';

interface RoutesDeps {
  auth: AuthService;
  refusesHost: HostCheck;
  allowedOrigins: readonly string[];
  /** The body of /healthz (liveness: 200 while the process runs). */
  health: () => Record<string, unknown>;
  /** What /readyz answers from. */
  readiness: Readiness;
  metrics: Pick<Registry, 'metrics' | 'contentType'>;
  metricsScope: 'public' | Scope;
  /** The Neon-compatible REST facade under /control/v1. */
  neonFacade: Mount;
  /** Neon's GET /control/v1/leader and PUT /control/v1/step_down (ha:L5). */
  leaderEndpoints: Mount;
  yoga: LockkeeperYoga;
  maxBodyBytes: number;
  /** A stand-by's forward of mutations to the leader (ha:R2). */
  forwardMutation?: Parameters<typeof graphqlOverHttp>[2];
}

/**
 * Every HTTP path of the server. The GraphQL path does its own CSRF check in yoga (it
 * answers with GraphQL errors); /healthz serves probes, which change nothing.
 */
export function lockkeeperRoutes(deps: RoutesDeps): RouteTable {
  return {
    guards: [
      hostGuard(deps.refusesHost),
      csrfGuard(deps.allowedOrigins, [HEALTH_PATH, READY_PATH, GRAPHQL_PATH]),
      phaseGuard(deps.readiness, [HEALTH_PATH, READY_PATH, METRICS_PATH]),
    ],
    routes: [
      {
        path: HEALTH_PATH,
        handle: async (_req, res) => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify(deps.health()));
        },
      },
      {
        path: READY_PATH,
        handle: async (_req, res) => {
          const { status, body } = readinessAnswer(deps.readiness);
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(JSON.stringify(body));
        },
      },
      {
        path: METRICS_PATH,
        guard: metricsAuth(deps.auth, deps.metricsScope),
        handle: async (_req, res) => {
          const text = await deps.metrics.metrics();
          res.writeHead(200, { 'content-type': deps.metrics.contentType });
          res.end(text);
        },
      },
      // The dashboard (rollout:W1); GraphiQL stays at /graphql.
      ...DASHBOARD_PATHS.map((path) => ({ method: 'GET', path, handle: dashboardFile(path) })),
    ],
    mounts: [deps.leaderEndpoints, deps.neonFacade],
    fallback: graphqlOverHttp(deps.yoga, deps.maxBodyBytes, deps.forwardMutation),
  };
}
