import type { SimClock } from '../common/clock.ts';
import { RequestLog } from '../common/request-log.ts';
import { RemoteHeatmaps } from './heatmaps.ts';
import { LocationConfigMeter } from './meter.ts';
import { SafetyChecker } from './safety.ts';
import { formatShardId } from './shard-id.ts';
import { PageserverSim, type SeedLocation } from './simulator.ts';
import { WalStreams } from './wal.ts';

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
  /** The tenant config every location of the shard holds at the start (default: `{heatmap_period: "1m"}` with secondaries, else `{}`). */
  tenantConf?: Record<string, unknown>;
}

export interface SimClusterSpec {
  /** `zone`: the availability zone a controller is configured with for the node (the pageserver does not use it). */
  nodes: { id: number; zone?: string }[];
  shards: SimShardSpec[];
  /** Bytes per second secondaries download (default: instantly). */
  downloadBytesPerSecond?: number;
  /** The simulators' clock (default: the wall clock). */
  clock?: SimClock;
  /** Shared request log (default: a new one); pass the compute hook simulator's to keep one order. */
  log?: RequestLog;
  /** The safety checker every simulator reports to (default: a new one); a subclass can also record what it is told. */
  safety?: SafetyChecker;
  /** Each simulator's `catchUpMs` (PageserverSimOptions): how long a live migration's destination stays behind the WAL. */
  catchUpMs?: (shardId: string, nodeId: number) => number | undefined;
  /** Fixed latency of every `PUT …/location_config` on every simulator (`setLatency`), in ms of the clock. */
  locationConfigLatencyMs?: number;
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

export const shardIdOf = (s: SimShardSpec) => formatShardId(tenantIdOf(s.tenant), s.shardNumber ?? 0, s.shardCount ?? 0);

/** Simulated pageservers sharing one safety checker, seeded with the shards of a spec. */
export interface PageserverFleet {
  safety: SafetyChecker;
  /** Every request to any of them, in arrival order. */
  log: RequestLog;
  wal: WalStreams;
  /** The heatmaps in remote storage the simulators upload and follow (`churnBytesPerSecond` sets how fast they age). */
  heatmaps: RemoteHeatmaps;
  /** `PUT …/location_config` requests in flight across the fleet (and their high-water mark). */
  meter: LocationConfigMeter;
  /** Requests the simulators hold or wait on the clock for. */
  waiting(): number;
  /** Upcalls the simulators have in flight. */
  upcallsInFlight(): number;
  sims: Map<number, PageserverSim>;
  sim(id: number | string): PageserverSim;
  /** Per shard, what the simulators hold: `{ nodeId: "Mode@generation" }`. */
  view(): Record<string, Record<string, string>>;
  /** Per node, how many shards it holds in AttachedSingle (the simulators' view). */
  attachedSingleCounts(): Record<string, number>;
  close(): Promise<void>;
}

export async function startPageserverFleet(spec: SimClusterSpec): Promise<PageserverFleet> {
  const safety = spec.safety ?? new SafetyChecker();
  const log = spec.log ?? new RequestLog();
  const wal = new WalStreams();
  const heatmaps = new RemoteHeatmaps();
  const meter = new LocationConfigMeter();
  const sims = new Map<number, PageserverSim>();
  try {
    for (const n of spec.nodes) {
      const sim = new PageserverSim({
        nodeId: n.id,
        safety,
        downloadBytesPerSecond: spec.downloadBytesPerSecond,
        clock: spec.clock,
        log,
        wal,
        heatmaps,
        meter,
        ...(spec.catchUpMs && { catchUpMs: spec.catchUpMs }),
      });
      if (spec.locationConfigLatencyMs) sim.setLatency(spec.locationConfigLatencyMs);
      sims.set(n.id, await sim.start());
    }
  } catch (e) {
    await Promise.all([...sims.values()].map((s) => s.close()));
    throw e;
  }
  for (const s of spec.shards) {
    const id = shardIdOf(s);
    // As a controller leaves them (neon:W11): heatmaps every 60 s where the shard has secondaries.
    const tenantConf = s.tenantConf ?? (s.secondaries.length ? { heatmap_period: '1m' } : {});
    sims.get(s.attached)!.seed(id, { mode: 'AttachedSingle', generation: s.generation ?? 1, tenantConf });
    for (const sec of s.secondaries) {
      const lag = s.lag?.[sec];
      const seed: SeedLocation = {
        mode: 'Secondary',
        bytesTotal: 4 * 1024 * 1024,
        bytesDownloaded: 4 * 1024 * 1024 - (lag?.bytes ?? 0),
        heatmap: lag?.heatmap ?? true,
        tenantConf,
      };
      sims.get(sec)!.seed(id, seed);
    }
  }
  return {
    safety,
    log,
    wal,
    heatmaps,
    meter,
    waiting: () => [...sims.values()].reduce((n, s) => n + s.waiting, 0),
    upcallsInFlight: () => [...sims.values()].reduce((n, s) => n + s.upcallsInFlight, 0),
    sims,
    sim(id) {
      const sim = sims.get(Number(id));
      if (!sim) throw new Error(`no simulated pageserver ${id}`);
      return sim;
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
      await Promise.all([...sims.values()].map((s) => s.close()));
    },
  };
}
