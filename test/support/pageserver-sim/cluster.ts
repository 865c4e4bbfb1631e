import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { systemClock } from '../../../src/cluster/clock.ts';
import { createLogger } from '../../../src/logger.ts';
import { createPageserverBackend, type PageserverController } from '../../../plugins/pageserver/index.ts';
import { formatTenantShardId } from '../../../plugins/pageserver/shard-id.ts';
import { pageserverOptionsSchema, type PageserverOptionsInput } from '../../../plugins/pageserver/options.ts';
import { SafetyChecker } from './safety.ts';
import { PageserverSim, type SeedLocation } from './simulator.ts';

/** A 32-hex tenant id from a small number (readable in failures). */
export const tenantIdOf = (n: number) => n.toString(16).padStart(32, '0');

export interface SimShardSpec {
  tenant: number;
  shardNumber?: number;
  shardCount?: number;
  attached: number;
  secondaries: number[];
  generation?: number;
  /** Per secondary node: bytes still to download (default 0) and whether it has a heatmap. */
  lag?: Record<number, { bytes: number; heatmap?: boolean }>;
}

export interface SimClusterSpec {
  nodes: { id: number; zone?: string }[];
  shards: SimShardSpec[];
  /** Bytes per second secondaries download (default: instantly). */
  downloadBytesPerSecond?: number;
}

/**
 * `tenants × shardsPerTenant` shards, attached round-robin, each with one secondary; the
 * secondaries of one node's shards alternate among the other nodes (so a drain spreads).
 */
export function roundRobinShards(nodeIds: number[], tenants: number, shardsPerTenant: number): SimShardSpec[] {
  const shards: SimShardSpec[] = [];
  let k = 0;
  for (let t = 1; t <= tenants; t++) {
    for (let s = 0; s < shardsPerTenant; s++, k++) {
      const n = nodeIds.length;
      const attached = nodeIds[k % n]!;
      const others = nodeIds.filter((id) => id !== attached);
      shards.push({ tenant: t, shardNumber: s, shardCount: shardsPerTenant, attached, secondaries: [others[Math.floor(k / n) % others.length]!] });
    }
  }
  return shards;
}

export const shardIdOf = (s: SimShardSpec) =>
  formatTenantShardId({ tenantId: tenantIdOf(s.tenant), shardNumber: s.shardNumber ?? 0, shardCount: s.shardCount ?? 0 });

/**
 * Fast settings for loopback tests. `offlineAfterMs` leaves room for a test process whose
 * event loop is briefly blocked (SQLite migrations, module loading) so nodes do not flap.
 */
export const FAST_OPTIONS = {
  heartbeatIntervalMs: 50,
  offlineAfterMs: 1500,
  requestTimeoutMs: 1000,
  downloadWaitMs: 500,
  retry: { attempts: 3, backoffMs: 20 },
} as const;

export interface SimCluster {
  safety: SafetyChecker;
  sims: Map<number, PageserverSim>;
  sim(id: number | string): PageserverSim;
  /** Starts (or restarts on the same state file) the plugin against the simulators. */
  startController(extra?: Partial<PageserverOptionsInput>): Promise<PageserverController>;
  controller: PageserverController | undefined;
  dir: string;
  /** Per shard, what the simulators hold: `{ nodeId: "Mode@generation" }`. */
  view(): Record<string, Record<string, string>>;
  /** Per node, how many shards it holds in AttachedSingle (the simulators' view). */
  attachedSingleCounts(): Record<string, number>;
  close(): Promise<void>;
}

export async function startSimCluster(spec: SimClusterSpec): Promise<SimCluster> {
  const safety = new SafetyChecker();
  const sims = new Map<number, PageserverSim>();
  const dir = mkdtempSync(join(tmpdir(), 'lk-pageserver-'));
  try {
    for (const n of spec.nodes) {
      sims.set(n.id, await new PageserverSim({ nodeId: n.id, safety, downloadBytesPerSecond: spec.downloadBytesPerSecond }).start());
    }
  } catch (e) {
    await Promise.all([...sims.values()].map((s) => s.close()));
    throw e;
  }
  for (const s of spec.shards) {
    const id = shardIdOf(s);
    sims.get(s.attached)!.seed(id, { mode: 'AttachedSingle', generation: s.generation ?? 1 });
    for (const sec of s.secondaries) {
      const lag = s.lag?.[sec];
      const seed: SeedLocation = { mode: 'Secondary', bytesTotal: 4 * 1024 * 1024, bytesDownloaded: 4 * 1024 * 1024 - (lag?.bytes ?? 0), heatmap: lag?.heatmap ?? true };
      sims.get(sec)!.seed(id, seed);
    }
  }
  const cluster: SimCluster = {
    safety,
    sims,
    dir,
    controller: undefined,
    sim(id) {
      const sim = sims.get(Number(id));
      if (!sim) throw new Error(`no simulated pageserver ${id}`);
      return sim;
    },
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
    view() {
      const out: Record<string, Record<string, string>> = {};
      for (const [nodeId, sim] of sims) {
        for (const [shard, l] of Object.entries(sim.view())) (out[shard] ??= {})[nodeId] = `${l.mode}@${l.generation ?? '-'}`;
      }
      return out;
    },
    attachedSingleCounts() {
      const counts: Record<string, number> = {};
      for (const [nodeId, sim] of sims) counts[nodeId] = Object.values(sim.view()).filter((l) => l.mode === 'AttachedSingle').length;
      return counts;
    },
    async close() {
      await cluster.controller?.close();
      await Promise.all([...sims.values()].map((s) => s.close()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return cluster;
}

/** Polls (real time) until `until()` holds. */
export async function waitFor(until: () => boolean | Promise<boolean>, { timeoutMs = 10_000, stepMs = 20, what = 'condition' } = {}): Promise<void> {
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
