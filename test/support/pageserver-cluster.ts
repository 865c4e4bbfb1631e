import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LeaseAuthority } from '../../src/cluster/authority.ts';
import type { PluginStore } from '../../src/cluster/plugin-store.ts';
import { createLogger } from '../../src/logger.ts';
import { openDatabase, type Database } from '../../src/store/index.ts';
import { PrismaPluginStore } from '../../src/store/plugin-store.ts';
import { createPageserverBackend, type PageserverController } from '../../plugins/pageserver/index.ts';
import { pageserverOptionsSchema, type PageserverOptionsInput } from '../../plugins/pageserver/options.ts';
import { ComputeHookSim } from '../../simulators/compute-hook/index.ts';
import { RequestLog } from '../../simulators/common/request-log.ts';
import { startPageserverFleet, type PageserverFleet, type SimClusterSpec } from '../../simulators/pageserver/index.ts';
import { flushMicrotasks, VirtualClock } from './virtual-clock.ts';

/**
 * Simulated pageservers, a simulated compute control plane (the notify-attach hook) and the
 * pageserver plugin as their controller, all on one virtual clock, with the plugin's intent
 * in a real SQLite database. Time moves only when the test moves it (`advance`, `until`,
 * `drive`); between steps the harness waits — in real time, for a definite signal — until
 * every request in flight is one that waits on the clock.
 */
export interface SimCluster extends PageserverFleet {
  clock: VirtualClock;
  hook: ComputeHookSim;
  /** Holds the plugin store (and, in end-to-end worlds, the gateway's tables too). */
  db: Database;
  dir: string;
  /** Host names that do not resolve (registration's 503). */
  unresolvable: Set<string>;
  /** Starts (or restarts on the same database) the plugin against the simulators. */
  startController(
    extra?: Partial<PageserverOptionsInput>,
    options?: {
      hook?: boolean;
      wrapStore?: (store: PluginStore) => PluginStore;
      mayAct?: () => boolean;
      /** ha:L9: the authority of each request (`PluginContext.authority`). */
      authority?: () => LeaseAuthority;
      insecure?: boolean;
      log?: { info(obj: object, msg?: string): void; warn(obj: object, msg?: string): void };
      /** Hyperconverged hosts (issue 26): the Kubernetes node each pageserver runs on (`pageservers[].kubernetesNode`). */
      hosts?: Record<number, string>;
    },
  ): Promise<PageserverController>;
  controller: PageserverController | undefined;
  /** Waits until nothing is in flight except what waits on the clock. */
  idle(): Promise<void>;
  /** Moves the clock `ms` on in steps of `stepMs`, idle between steps. */
  advance(ms: number, stepMs?: number): Promise<void>;
  /** Moves the clock until `cond()` holds; fails after `maxMs` of virtual time. */
  until(cond: () => boolean | Promise<boolean>, options?: { maxMs?: number; stepMs?: number; what?: string }): Promise<void>;
  /** Moves the clock until `promise` settles and returns its result. */
  drive<T>(promise: Promise<T>, options?: { maxMs?: number; stepMs?: number }): Promise<T>;
}

const STEP_MS = 100;

export async function startSimCluster(spec: SimClusterSpec & { hookToken?: string }, shared: { clock?: VirtualClock } = {}): Promise<SimCluster> {
  const clock = shared.clock ?? new VirtualClock();
  const log = new RequestLog();
  const fleet = await startPageserverFleet({ ...spec, clock, log });
  const hook = await new ComputeHookSim({ clock, log, token: spec.hookToken }).start();
  const { sims } = fleet;
  const dir = mkdtempSync(join(tmpdir(), 'lk-pageserver-'));
  const db = await openDatabase({ url: `file:${join(dir, 'lockkeeper.db')}` });
  const unresolvable = new Set<string>();

  async function idle(): Promise<void> {
    (globalThis as any).__idles = ((globalThis as any).__idles ?? 0) + 1;
    const deadline = Date.now() + 20_000;
    let stable = 0;
    let last = '';
    while (stable < 3) {
      await flushMicrotasks();
      const out = cluster.controller?.outstandingRequests() ?? 0;
      const held = fleet.waiting() + hook.waiting;
      const upcalls = fleet.upcallsInFlight();
      const print = `${out}/${held}/${upcalls}/${log.entries.length}/${hook.notifications.length}`;
      if (out <= held && upcalls === 0 && print === last) stable++;
      else stable = 0;
      last = print;
      if (Date.now() > deadline) throw new Error(`the pageserver world did not settle (requests in flight ${out}, waiting on the clock ${held})`);
      if (stable === 0) await new Promise((r) => setTimeout(r, 1));
    }
  }

  const cluster: SimCluster = {
    ...fleet,
    clock,
    hook,
    db,
    dir,
    unresolvable,
    controller: undefined,
    async startController(extra = {}, { hook: withHook = true, wrapStore = (s: PluginStore) => s, mayAct, authority, insecure, log: logger, hosts = {} } = {}) {
      const options = pageserverOptionsSchema.parse({
        pageservers: spec.nodes.map((n) => ({
          id: n.id,
          url: sims.get(n.id)!.url,
          availabilityZone: n.zone ?? 'az-a',
          ...(hosts[n.id] !== undefined && { kubernetesNode: hosts[n.id] }),
        })),
        upcall: { host: '127.0.0.1', port: 0 },
        ...(withHook && { controlPlane: { url: hook.url, ...(spec.hookToken && { token: spec.hookToken }) } }),
        ...extra,
      });
      const starting = createPageserverBackend(options, {
        configDir: dir,
        log: logger ?? createLogger('silent'),
        clock,
        ...(insecure !== undefined && { insecure }),
        store: wrapStore(new PrismaPluginStore(db.prisma, 'pageserver')),
        resolveHost: async (host) => !unresolvable.has(host),
        ...(mayAct && { mayAct }),
        ...(authority && { authority }),
      });
      const controller = await drive(starting);
      for (const sim of sims.values()) {
        sim.controllerUrl = controller.upcallUrl;
        sim.controllerToken = options.upcall.token;
      }
      cluster.controller = controller;
      await idle();
      return controller;
    },
    idle,
    async advance(ms, stepMs = STEP_MS) {
      for (let left = ms; left > 0; left -= stepMs) {
        await idle();
        await clock.advance(Math.min(stepMs, left));
      }
      await idle();
    },
    async until(cond, { maxMs = 600_000, stepMs = STEP_MS, what = 'condition' } = {}) {
      for (let t = 0; ; t += stepMs) {
        await idle();
        if (await cond()) return;
        if (t > maxMs) throw new Error(`${what} not reached within ${maxMs} ms of virtual time`);
        await clock.advance(stepMs);
      }
    },
    drive: (p, o) => drive(p, o),
    async close() {
      const controller = cluster.controller;
      cluster.controller = undefined;
      await controller?.close();
      await fleet.close();
      await hook.close();
      await db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };

  async function drive<T>(promise: Promise<T>, { maxMs = 600_000, stepMs = STEP_MS } = {}): Promise<T> {
    let settled = false;
    promise.then(
      () => (settled = true),
      () => (settled = true),
    );
    for (let t = 0; !settled; t += stepMs) {
      await idle();
      if (settled) break;
      if (t > maxMs) throw new Error(`did not settle within ${maxMs} ms of virtual time`);
      await clock.advance(stepMs);
    }
    return promise;
  }

  return cluster;
}

/** The requests in the shared log since `from`, as `source METHOD path {query} mode@gen`, without heartbeats and listings. */
export function calls(c: SimCluster, from = 0): string[] {
  return c.log.entries
    .slice(from)
    .filter((e) => e.path !== '/v1/utilization' && e.path !== '/v1/location_config')
    .map((e) => {
      const q = Object.keys(e.query).length ? ` ${new URLSearchParams(e.query)}` : '';
      const b = e.body as { mode?: string; generation?: number | null; shards?: { node_id: number }[] } | null;
      const what = b?.mode ? ` ${b.mode}@${b.generation ?? '-'}` : b?.shards ? ` nodes=${b.shards.map((s) => s.node_id).join(',')}` : '';
      return `${e.source} ${e.method} ${e.path.replace(/\/v1\/tenant\/[^/]+/, '/v1/tenant/:id').replace(/\/v1\/location_config\/[^/]+/, '/v1/location_config/:id')}${q}${what}`;
    });
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
