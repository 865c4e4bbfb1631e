import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { systemClock } from '../../src/cluster/clock.ts';
import { createLogger } from '../../src/logger.ts';
import { createPageserverBackend, type PageserverController } from '../../plugins/pageserver/index.ts';
import { pageserverOptionsSchema, type PageserverOptionsInput } from '../../plugins/pageserver/options.ts';
import { startPageserverFleet, type PageserverFleet, type SimClusterSpec } from '../../simulators/pageserver/index.ts';

/**
 * Settings for loopback tests: fast heartbeats, and limits that a loaded machine never
 * reaches by itself, so that nothing times out unless a test makes it (a simulator that
 * holds requests: such tests pass a short `requestTimeoutMs` or `downloadWaitMs` of their
 * own). OFFLINE takes two failed heartbeats, which a slow event loop alone does not cause.
 */
const FAST_OPTIONS = {
  heartbeatIntervalMs: 50,
  offlineAfterMs: 1500,
  requestTimeoutMs: 30_000,
  downloadWaitMs: 30_000,
  retry: { attempts: 3, backoffMs: 20 },
} as const;

/** Simulated pageservers and the pageserver plugin as their controller. */
export interface SimCluster extends PageserverFleet {
  /** Starts (or restarts on the same state file) the plugin against the simulators. */
  startController(extra?: Partial<PageserverOptionsInput>): Promise<PageserverController>;
  controller: PageserverController | undefined;
  dir: string;
}

export async function startSimCluster(spec: SimClusterSpec): Promise<SimCluster> {
  const fleet = await startPageserverFleet(spec);
  const { sims } = fleet;
  const dir = mkdtempSync(join(tmpdir(), 'lk-pageserver-'));
  const cluster: SimCluster = {
    ...fleet,
    dir,
    controller: undefined,
    async startController(extra = {}) {
      const options = pageserverOptionsSchema.parse({
        pageservers: spec.nodes.map((n) => ({ id: n.id, url: sims.get(n.id)!.url, availabilityZone: n.zone ?? 'az-a' })),
        stateFile: 'state/placement.json',
        upcall: { host: '127.0.0.1', port: 0 },
        ...FAST_OPTIONS,
        ...extra,
      });
      const controller = await createPageserverBackend(options, { configDir: dir, log: createLogger('silent'), clock: systemClock });
      for (const sim of sims.values()) {
        sim.controllerUrl = controller.upcallUrl;
        sim.controllerToken = options.upcall.token;
      }
      cluster.controller = controller;
      return controller;
    },
    async close() {
      await cluster.controller?.close();
      await fleet.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return cluster;
}

/** Polls (real time) until `until()` holds. */
export async function waitFor(until: () => boolean | Promise<boolean>, { timeoutMs = 120_000, stepMs = 20, what = 'condition' } = {}): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await until())) {
    if (Date.now() > deadline) throw new Error(`${what} not reached within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, stepMs));
  }
}

/**
 * One simulated cluster per test: `use(cluster)` registers it; afterEach closes it (every
 * server) and fails the test if the safety checker saw a violation.
 */
export function closeAfterEach(afterEach: (fn: () => Promise<void>) => void): { use(cluster: SimCluster): SimCluster } {
  let current: SimCluster | undefined;
  afterEach(async () => {
    const cluster = current;
    current = undefined;
    await cluster?.close();
    cluster?.safety.assertSafe();
  });
  return { use: (cluster) => (current = cluster) };
}
