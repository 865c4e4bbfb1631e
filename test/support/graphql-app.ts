import { VirtualClock } from './virtual-clock.ts';
import type { ClusterBackend } from '../../src/cluster/backend.ts';
import { createLogger } from '../../src/logger.ts';
import { yogaClient } from './yoga-client.ts';
import { DEFAULT_CONFIG } from '../../src/config/defaults.ts';
import type { AuthSettings, LimitSettings, OperationSettings, PluginEntry } from '../../src/config/schema.ts';
import { buildApp, type App, type AppDeps } from '../../src/server.ts';
import { isPostgresUrl, type DatabaseDialect } from '../../src/store/database.ts';
import type { Database } from '../../src/store/index.ts';
import { ioIdle, openTestDatabase } from './test-database.ts';
import { createSimulatedCluster, type CreateSimulatedClusterOptions, type SimulatedCluster } from '../../plugins/fake/index.ts';

export interface TestApp {
  app: App;
  db: Database;
  clock: VirtualClock;
  cluster: SimulatedCluster;
  /** POSTs a GraphQL request through yoga.fetch (no socket) and returns the parsed body. */
  gql<T = any>(query: string, variables?: Record<string, unknown>): Promise<{ data?: T; errors?: { message: string; extensions?: Record<string, unknown> }[] }>;
  /** Stops the app and closes the database. */
  stop(): Promise<void>;
}

export interface TestAppOptions extends CreateSimulatedClusterOptions {
  backend?: (c: SimulatedCluster) => ClusterBackend;
  settings?: Partial<OperationSettings>;
  /** Reuse a database (restart tests): a SQLite file or a PostgreSQL URL (`Database.file`). */
  databaseFile?: string;
  /** Access control and limits; default: none configured (auth off while the database has no token). */
  security?: TestSecurity;
  /** The database's dialect when no `databaseFile` is given; default the run's (test-database.ts). */
  dialect?: DatabaseDialect;
  /** Parts of the rehearsals replaced (issue 33): e.g. the worker that runs the samples. */
  rehearsal?: AppDeps['rehearsal'];
  /** The config's plugin entries (what a rehearsal loads into simulators); default: none. */
  plugins?: PluginEntry[];
}

interface TestSecurity {
  auth?: Partial<AuthSettings>;
  limits?: Partial<LimitSettings>;
  /** Wall clock for token expiry, last use and rate limits. */
  now?: () => number;
}

/** An app over a simulated cluster on a virtual clock and a fresh database (SQLite, or PostgreSQL: test-database.ts), not listening. */
export async function createTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const clock = options.clock instanceof VirtualClock ? options.clock : new VirtualClock();
  const { backend: wrap, settings, databaseFile, security, dialect, rehearsal, plugins, ...clusterOptions } = options;
  const cluster = createSimulatedCluster({ ...clusterOptions, clock });
  const db = await openTestDatabase(databaseFile ? { url: isPostgresUrl(databaseFile) ? databaseFile : `file:${databaseFile}` } : dialect ? { dialect } : {});
  clock.waitForIo(ioIdle(db));
  const app = buildApp({
    backend: wrap ? wrap(cluster) : cluster,
    log: createLogger(process.env.LK_TEST_LOG === '1' ? 'debug' : 'silent'),
    prisma: db.prisma,
    hotPath: db.hotPath,
    clock,
    config: {
      ...DEFAULT_CONFIG,
      ...(plugins && { plugins }),
      operations: { ...DEFAULT_CONFIG.operations, ...settings },
      auth: { ...DEFAULT_CONFIG.auth, ...security?.auth },
      limits: { ...DEFAULT_CONFIG.limits, ...security?.limits },
    },
    ...(security?.now && { now: security.now }),
    databaseName: db.file,
    onClose: () => db.close(),
    ...(rehearsal && { rehearsal }),
  });
  await app.ready();
  return {
    app,
    db,
    clock,
    cluster,
    gql: yogaClient(app.yoga),
    stop: () => app.stop(),
  };
}
