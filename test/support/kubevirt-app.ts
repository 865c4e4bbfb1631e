import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ClusterBackend } from '../../src/cluster/backend.ts';
import { systemClock, type Clock } from '../../src/cluster/clock.ts';
import { combineBackends } from '../../src/cluster/composite.ts';
import { createLogger } from '../../src/logger.ts';
import { DEFAULT_CONFIG } from '../../src/config/defaults.ts';
import type { OperationSettings } from '../../src/config/schema.ts';
import { buildApp, type App } from '../../src/server.ts';
import { openDatabase, type Database } from '../../src/store/index.ts';
import { createKubevirtBackend, type KubevirtBackend, type KubevirtOptionsInput } from '../../plugins/kubevirt/index.ts';
import { K8sSim, type K8sSimOptions } from '../../simulators/kubernetes/index.ts';
import { clusterRoleRules } from './deploy-rbac.ts';
import { yogaClient } from './yoga-client.ts';

export interface KubevirtTestApp {
  sim: K8sSim;
  backend: KubevirtBackend;
  /** What the app runs on: the kubevirt backend, or its composite with `more.combine`'s backends. */
  served: ClusterBackend;
  app: App;
  db: Database;
  gql<T = any>(query: string, variables?: Record<string, unknown>): Promise<{ data?: T; errors?: { message: string }[] }>;
  stop(): Promise<void>;
}

/** Polls (real time) until `until()` holds; fails loudly instead of hanging. */
export async function eventually(until: () => boolean | Promise<boolean>, { timeoutMs = 120_000, stepMs = 20 } = {}): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (await until()) return;
    if (Date.now() > end) throw new Error(`condition not reached within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, stepMs));
  }
}

/**
 * Resolves once the plugin has applied and reported every change the simulated API server
 * made so far (its watches reached the server's current resourceVersion, by events or
 * bookmarks), plus the microtask that delivers events: the definite signal after which an
 * event that has not arrived will not arrive. Negative checks ("emits nothing", "stays
 * off") wait for this instead of sleeping.
 */
export async function caughtUp(sim: K8sSim, backend: KubevirtBackend): Promise<void> {
  const target = sim.store.currentRv;
  await eventually(() => backend.watchStats.seenResourceVersion >= target);
  await new Promise((resolve) => setImmediate(resolve));
}

/**
 * `caughtUp`, then until the node-down controller (k8s:U1–U8) has acted on all of it, again
 * while its own writes change the cluster: with the clock standing still, a taint or
 * condition not written by then will not be written. The definite signal for "nothing
 * happens yet" checks of node-down, instead of a real-time sleep.
 */
export async function nodeDownSettled(sim: K8sSim, backend: KubevirtBackend): Promise<void> {
  for (;;) {
    const rv = sim.store.currentRv;
    await caughtUp(sim, backend);
    await eventually(() => backend.nodeDownBusy === 0);
    if (sim.store.currentRv === rv) return;
  }
}

/**
 * The whole app (GraphQL, maintenance engine, SQLite) over the kubevirt plugin, which
 * talks to a simulated Kubernetes API server through the real client. `seed` fills the
 * cluster before the plugin connects.
 */
export async function kubevirtApp(
  seed: (sim: K8sSim) => void,
  settings: Partial<OperationSettings> = {},
  simOptions: K8sSimOptions = {},
  /** One clock for the simulator, the plugin and the engine (a VirtualClock in tests of timing); plugin options on top. */
  more: {
    clock?: Clock;
    plugin?: KubevirtOptionsInput;
    rbac?: 'shipped' | 'none';
    /** Backends to combine with the kubevirt one (combineBackends, as a config naming several plugins does); closed by the caller. */
    combine?: ClusterBackend[];
  } = {},
): Promise<KubevirtTestApp> {
  const clock = more.clock ?? systemClock;
  const sim = await K8sSim.start({ clock, ...simOptions });
  // The API server enforces deploy/rbac.yaml's ClusterRole, so every scenario also shows the
  // shipped role covers each call the plugin makes on that path (a refusal fails the scenario).
  if ((more.rbac ?? 'shipped') === 'shipped') sim.setRules(clusterRoleRules());
  seed(sim);
  const backend = await createKubevirtBackend({
    kubeconfigPath: sim.kubeconfigFile(),
    watchBackoffMs: 50,
    watchBackoffMaxMs: 200,
    vmActionTimeoutMs: 10_000,
    migrationBackstopMs: 10_000,
    ...more.plugin,
    clock,
  });
  const db = await openDatabase({ url: `file:${join(mkdtempSync(join(tmpdir(), 'lk-kv-')), 'lockkeeper.db')}` });
  const served = more.combine?.length ? combineBackends([backend, ...more.combine]) : backend;
  const app = buildApp({
    backend: served,
    log: createLogger('silent'),
    prisma: db.prisma,
    hotPath: db.hotPath,
    clock,
    config: { ...DEFAULT_CONFIG, operations: { ...DEFAULT_CONFIG.operations, migrationRetryDelayMs: 100, ...settings } },
    onClose: () => db.close(),
  });
  await app.ready();
  return {
    sim,
    backend,
    served,
    app,
    db,
    gql: yogaClient(app.yoga),
    async stop() {
      await app.stop();
      await backend.close();
      await sim.close();
    },
  };
}
