import { VirtualClock } from '../../src/cluster/clock.ts';
import type { ClusterBackend } from '../../src/cluster/backend.ts';
import { createLogger } from '../../src/logger.ts';
import { buildApp, type App } from '../../src/server.ts';
import { createSimulatedCluster, type CreateSimulatedClusterOptions, type SimulatedCluster } from '../../plugins/fake/index.ts';

export interface TestApp {
  app: App;
  clock: VirtualClock;
  cluster: SimulatedCluster;
  /** POSTs a GraphQL request through yoga.fetch (no socket) and returns the parsed body. */
  gql<T = any>(query: string, variables?: Record<string, unknown>): Promise<{ data?: T; errors?: { message: string; extensions?: Record<string, unknown> }[] }>;
}

/** An app over a simulated cluster on a virtual clock, not listening. */
export function createTestApp(options: CreateSimulatedClusterOptions & { backend?: (c: SimulatedCluster) => ClusterBackend } = {}): TestApp {
  const clock = new VirtualClock();
  const { backend: wrap, ...clusterOptions } = options;
  const cluster = createSimulatedCluster({ clock, ...clusterOptions });
  const app = buildApp({ backend: wrap ? wrap(cluster) : cluster, log: createLogger('silent') });
  return {
    app,
    clock,
    cluster,
    async gql(query, variables) {
      const res = await app.yoga.fetch('http://lockkeeper.test/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query, variables }),
      });
      return res.json();
    },
  };
}
