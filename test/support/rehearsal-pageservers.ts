import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../../src/logger.ts';
import { DEFAULT_CONFIG } from '../../src/config/defaults.ts';
import type { OperationSettings } from '../../src/config/schema.ts';
import type { BackendSnapshot } from '../../src/cluster/rehearsal.ts';
import type { DrawnDuration, DurationSampler, RehearsedAction } from '../../src/domain/rehearsal/types.ts';
import { buildApp, type App } from '../../src/server.ts';
import { openDatabase, type Database } from '../../src/store/index.ts';
import { PrismaPluginStore } from '../../src/store/plugin-store.ts';
import { createPageserverBackend, type PageserverController } from '../../plugins/pageserver/index.ts';
import { pageserverOptionsSchema } from '../../plugins/pageserver/options.ts';
import { loadPageservers, type LoadedPageservers } from '../../rehearsal/loaders/pageserver.ts';
import { flushMicrotasks, VirtualClock } from './virtual-clock.ts';

/** A sampler that answers `ms` for every draw and records what it was asked. */
export function constantSampler(ms: number): DurationSampler & { draws: [RehearsedAction, string, string | null][] } {
  const draws: [RehearsedAction, string, string | null][] = [];
  return {
    draws,
    draw(action, workloadId, nodeId): DrawnDuration {
      draws.push([action, workloadId, nodeId]);
      return { ms, source: 'CLUSTER' };
    },
  };
}

/**
 * A rehearsal's pageserver side as the worker stands it up: the loader's simulators on a
 * fresh virtual clock, the pageserver plugin over them with a throw-away database, and
 * optionally the whole app (the engines) over that plugin. Time moves only when the test
 * moves it; between steps it waits, in real time, for a definite signal (nothing in flight
 * but what waits on the clock), as test/support/pageserver-cluster.ts does.
 */
export interface RehearsedPageservers {
  clock: VirtualClock;
  loaded: LoadedPageservers;
  db: Database;
  controller: PageserverController;
  app: App | undefined;
  idle(): Promise<void>;
  until(cond: () => boolean | Promise<boolean>, options?: { maxMs?: number; stepMs?: number; what?: string }): Promise<void>;
  drive<T>(promise: Promise<T>): Promise<T>;
  withApp(settings?: Partial<OperationSettings>): Promise<App>;
  close(): Promise<void>;
}

export async function rehearsePageservers(
  snapshot: BackendSnapshot,
  liveOptions: unknown,
  durations: DurationSampler,
  clock = new VirtualClock(),
): Promise<RehearsedPageservers> {
  const loaded = await loadPageservers(snapshot, liveOptions, { clock, durations, seed: 1 });
  const dir = mkdtempSync(join(tmpdir(), 'lk-rehearsed-'));
  const db = await openDatabase({ url: `file:${join(dir, 'lockkeeper.db')}` });
  let controller: PageserverController | undefined;

  async function idle(): Promise<void> {
    const deadline = Date.now() + 20_000;
    let stable = 0;
    let last = '';
    while (stable < 3) {
      await flushMicrotasks();
      const out = controller?.outstandingRequests() ?? 0;
      const held = loaded.fleet.waiting() + (loaded.hook?.waiting ?? 0);
      const upcalls = loaded.fleet.upcallsInFlight();
      const print = `${out}/${held}/${upcalls}/${loaded.fleet.log.entries.length}`;
      if (out <= held && upcalls === 0 && print === last) stable++;
      else stable = 0;
      last = print;
      if (Date.now() > deadline) throw new Error(`the rehearsed pageservers did not settle (in flight ${out}, waiting on the clock ${held})`);
      if (stable === 0) await new Promise((r) => setTimeout(r, 1));
    }
  }
  async function until(cond: () => boolean | Promise<boolean>, { maxMs = 600_000, stepMs = 100, what = 'condition' } = {}): Promise<void> {
    for (let t = 0; ; t += stepMs) {
      await idle();
      if (await cond()) return;
      if (t > maxMs) throw new Error(`${what} not reached within ${maxMs} ms of virtual time`);
      await clock.advance(stepMs);
    }
  }
  async function drive<T>(promise: Promise<T>): Promise<T> {
    let settled = false;
    promise.then(
      () => (settled = true),
      () => (settled = true),
    );
    await until(() => settled, { what: 'promise to settle' });
    return promise;
  }

  try {
    controller = await drive(
      createPageserverBackend(pageserverOptionsSchema.parse(loaded.options), {
        configDir: dir,
        log: createLogger('silent'),
        clock,
        store: new PrismaPluginStore(db.prisma, 'pageserver'),
        resolveHost: async () => true,
      }),
    );
  } catch (e) {
    await loaded.stop();
    await db.close();
    throw e;
  }
  const world: RehearsedPageservers = {
    clock,
    loaded,
    db,
    controller,
    app: undefined,
    idle,
    until,
    drive,
    async withApp(settings = {}) {
      const app = buildApp({
        backend: controller!,
        log: createLogger('silent'),
        prisma: db.prisma,
        hotPath: db.hotPath,
        clock,
        config: { ...DEFAULT_CONFIG, operations: { ...DEFAULT_CONFIG.operations, ...settings } },
      });
      await drive(app.ready());
      world.app = app;
      return app;
    },
    async close() {
      if (world.app) await world.app.stop();
      else await controller?.close();
      await loaded.stop();
      await db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return world;
}
