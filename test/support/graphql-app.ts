import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { VirtualClock } from './virtual-clock.ts';
import type { ClusterBackend } from '../../src/cluster/backend.ts';
import { createLogger } from '../../src/logger.ts';
import { yogaClient } from './yoga-client.ts';
import { DEFAULT_CONFIG } from '../../src/config/defaults.ts';
import type { AuthSettings, LimitSettings, OperationSettings } from '../../src/config/schema.ts';
import { buildApp, type App } from '../../src/server.ts';
import { openDatabase, type Database } from '../../src/store/index.ts';
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
  /** Reuse a database file (restart tests). */
  databaseFile?: string;
  /** Access control and limits; default: none configured (auth off while the database has no token). */
  security?: TestSecurity;
}

interface TestSecurity {
  auth?: Partial<AuthSettings>;
  limits?: Partial<LimitSettings>;
  /** Wall clock for token expiry, last use and rate limits. */
  now?: () => number;
}

/** An app over a simulated cluster on a virtual clock and a fresh SQLite file, not listening. */
export async function createTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const clock = options.clock instanceof VirtualClock ? options.clock : new VirtualClock();
  const { backend: wrap, settings, databaseFile, security, ...clusterOptions } = options;
  const cluster = createSimulatedCluster({ ...clusterOptions, clock });
  const file = databaseFile ?? join(mkdtempSync(join(tmpdir(), 'lk-test-')), 'lockkeeper.db');
  const db = await openDatabase({ url: `file:${file}` });
  const app = buildApp({
    backend: wrap ? wrap(cluster) : cluster,
    log: createLogger('silent'),
    prisma: db.prisma,
    clock,
    config: {
      ...DEFAULT_CONFIG,
      operations: { ...DEFAULT_CONFIG.operations, ...settings },
      auth: { ...DEFAULT_CONFIG.auth, ...security?.auth },
      limits: { ...DEFAULT_CONFIG.limits, ...security?.limits },
    },
    ...(security?.now && { now: security.now }),
    onClose: () => db.close(),
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
