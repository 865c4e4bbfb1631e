/**
 * Issue 33 point 4, case "pageserver-16": 16 pageservers with 4 000 shards on the pageserver and
 * compute-hook simulators (bench/rehearsal-harness.ts has the method). The storage operator's
 * rolling restart of every pageserver: DRAIN_FILL (drain to PAUSE_FOR_RESTART, restart, fill),
 * restart WAIT_FOR_REATTACH, maxUnavailable 1. Every shard has its own typical cut-over (the
 * destination's catch-up, drawn per shard: rehearsal/loaders/pageserver.ts) and every
 * pageserver its own restart time; each run draws log-normally around them, seeded.
 *
 * The initial snapshot is the pageserver plugin's own `snapshot()` of a live fleet (simulators
 * on the wall clock, the plugin over them), read once. Planted after the history: one shard
 * attached on pageserver 8 (the middle of the order) set to policy PAUSE, which drains and
 * fills skip (neon-parity: `Pause`/`Stop` shards keep their attachment), so node 8 is not safe
 * to restart: the rollout pauses there, as the snapshot alone predicts.
 */
import { ComputeHookSim } from '../simulators/compute-hook/index.ts';
import { startPageserverFleet, shardIdOf, type SimShardSpec } from '../simulators/pageserver/index.ts';
import { createPageserverBackend } from '../plugins/pageserver/index.ts';
import { pageserverOptionsSchema, type PageserverOptionsInput } from '../plugins/pageserver/options.ts';
import type { PageserverSnapshotData } from '../plugins/pageserver/snapshot.ts';
import type { BackendSnapshot } from '../src/cluster/rehearsal.ts';
import { DEFAULT_CONFIG } from '../src/config/defaults.ts';
import { createPrng } from '../src/domain/prng.ts';
import { createLogger } from '../src/logger.ts';
import type { RolloutInput } from '../src/operations/rollouts/engine.ts';
import { PrismaPluginStore } from '../src/store/plugin-store.ts';
import { min, natureKey, withDatabase, type AccuracyCase, type Nature } from './rehearsal-harness.ts';

const NODES = 16;
const ZONES = ['az-a', 'az-b'] as const;
const SHARDS_PER_TENANT = 4;
const TENANTS = Number(process.env.LK_REHEARSAL_PS_TENANTS ?? 1000);
const SHARDS = TENANTS * SHARDS_PER_TENANT;
/**
 * Earlier real runs the history is read from. A real run at 4 000 shards moves ~8 000 shards
 * over loopback HTTP (a drain and a fill per pageserver, ~10 requests per cut-over plus the
 * heartbeats): about 2.5 min of CPU on this machine. So the case measures one history size, of
 * 2 runs, and 10 samples; LK_REHEARSAL_PS_TENANTS (default 1 000, 4 shards each),
 * LK_REHEARSAL_PS_HISTORY, LK_REHEARSAL_PS_SAMPLES and LK_REHEARSAL_PS_REAL_RUNS scale it for a
 * quicker look.
 */
const HISTORY_SIZES = [Number(process.env.LK_REHEARSAL_PS_HISTORY ?? 2)] as const;
const SAMPLES = Number(process.env.LK_REHEARSAL_PS_SAMPLES ?? 10);
const REAL_RUNS = Number(process.env.LK_REHEARSAL_PS_REAL_RUNS ?? 10);
/** Each shard's typical cut-over (the destination catching up with the WAL): 2 to 8 s; a run draws log-normally around it. */
const CUT_OVER_MS = [2_000, 8_000] as const;
const CUT_OVER_SIGMA = 0.3;
/** Each pageserver's typical restart (down until it boots and re-attaches): 1 to 4 min. */
const RESTART_MS = [60_000, 240_000] as const;
const RESTART_SIGMA = 0.2;
const DRIFT = 1.2;
/** The planted blocker: a shard attached on this pageserver (the middle of the order) set to PAUSE. */
const BLOCKER_NODE = '8';
const INPUT: RolloutInput = {
  nodes: Array.from({ length: NODES }, (_, i) => String(i + 1)),
  action: 'DRAIN_FILL',
  restart: 'WAIT_FOR_REATTACH',
  maxUnavailable: 1,
};
const zoneOf = (node: number) => ZONES[node <= NODES / 2 ? 0 : 1];

/** The live options (as a live config has them: the addresses are replaced by the loader's simulators). */
const LIVE_OPTIONS: PageserverOptionsInput = {
  pageservers: Array.from({ length: NODES }, (_, i) => ({
    id: i + 1,
    url: `http://pageserver-${i + 1}.storage.internal:9898`,
    availabilityZone: zoneOf(i + 1),
  })),
  controlPlane: { url: 'http://control-plane.internal:8080' },
};

/**
 * 1 000 tenants of 4 shards, attached round robin over the 16 pageservers, each shard with a
 * warm secondary in the other zone (Neon's scheduler keeps secondaries out of the preferred AZ).
 */
function shards(): SimShardSpec[] {
  const out: SimShardSpec[] = [];
  for (let k = 0; k < SHARDS; k++) {
    const attached = (k % NODES) + 1;
    const half = NODES / 2;
    // The same position in the other zone, shifted by the tenant so that a drain spreads over the zone.
    const tenant = Math.floor(k / SHARDS_PER_TENANT);
    const secondary = ((attached - 1 + half + (tenant % half)) % half) + (attached <= half ? half : 0) + 1;
    out.push({ tenant: tenant + 1, shardNumber: k % SHARDS_PER_TENANT, shardCount: SHARDS_PER_TENANT, attached, secondaries: [secondary] });
  }
  return out;
}

/** The cluster's nature: every shard's typical cut-over and every pageserver's restart, fixed across runs (seed 1). */
function nature(): Nature {
  const random = createPrng(1);
  const between = ([lo, hi]: readonly [number, number]) => lo + random() * (hi - lo);
  const typicalMs = new Map<string, number>();
  for (const s of shards()) typicalMs.set(natureKey('SHARD_CUT_OVER', shardIdOf(s)), between(CUT_OVER_MS));
  for (let i = 1; i <= NODES; i++) typicalMs.set(natureKey('NODE_RESTART', String(i)), between(RESTART_MS));
  return { typicalMs, sigma: { SHARD_CUT_OVER: CUT_OVER_SIGMA, NODE_RESTART: RESTART_SIGMA } };
}

/** The snapshot before the history runs: the pageserver plugin's own, read from a live fleet of simulators (wall clock) with the compute hook. */
async function initialSnapshots(): Promise<BackendSnapshot[]> {
  const fleet = await startPageserverFleet({ nodes: Array.from({ length: NODES }, (_, i) => ({ id: i + 1, zone: zoneOf(i + 1) })), shards: shards() });
  const hook = await new ComputeHookSim({}).start();
  try {
    return await withDatabase(async (db) => {
      const options = pageserverOptionsSchema.parse({
        pageservers: [...fleet.sims.values()].map((s) => ({ id: s.nodeId, url: s.url, availabilityZone: zoneOf(s.nodeId) })),
        controlPlane: { url: hook.url },
        upcall: { host: '127.0.0.1', port: 0 },
        heartbeatIntervalMs: 200,
      });
      const backend = await createPageserverBackend(options, {
        configDir: process.cwd(),
        log: createLogger('error'),
        store: new PrismaPluginStore(db.prisma, 'pageserver'),
        resolveHost: async () => true,
      });
      try {
        for (const sim of fleet.sims.values()) sim.controllerUrl = backend.upcallUrl;
        for (;;) {
          const nodes = await backend.listNodes();
          if (nodes.length === NODES && nodes.every((n) => n.availability === 'ACTIVE')) break;
          await new Promise((r) => setTimeout(r, 50));
        }
        const snapshots = await backend.snapshot();
        const data = snapshots[0]?.data as PageserverSnapshotData | undefined;
        if (data?.shards.length !== SHARDS || data.unread.length)
          throw new Error(`the live snapshot is incomplete: ${data?.shards.length} shards, unread ${data?.unread.join('; ')}`);
        return snapshots;
      } finally {
        await backend.close();
      }
    });
  } finally {
    await fleet.close();
    await hook.close();
  }
}

/** The blocker, planted after the history: the first shard (by id) attached on pageserver 8 gets policy PAUSE. */
function plantBlocker(snapshots: BackendSnapshot[]): BackendSnapshot[] {
  return snapshots.map((s) => {
    if (s.plugin !== 'pageserver') return s;
    const data = s.data as PageserverSnapshotData;
    const pinned = data.shards.find((x) => x.attachedNodeId === BLOCKER_NODE && x.policy === 'ACTIVE');
    if (!pinned) throw new Error(`no shard attached on pageserver ${BLOCKER_NODE} to plant the blocker on`);
    return { ...s, data: { ...data, shards: data.shards.map((x) => (x === pinned ? { ...x, policy: 'PAUSE' } : x)) } as never };
  });
}

export async function pageserverCase(): Promise<AccuracyCase> {
  return {
    name: 'pageserver-16',
    describe:
      `Case pageserver-16: ${NODES} pageservers in 2 zones on the pageserver simulators with the compute-hook simulator, ${SHARDS.toLocaleString('en')} shards ` +
      `(${TENANTS} tenants × ${SHARDS_PER_TENANT}) attached round robin, each with a warm secondary in the other zone; the initial snapshot is the pageserver plugin's own \`snapshot()\` of that fleet. ` +
      `Rollout: a restart of every pageserver, DRAIN_FILL with restart WAIT_FOR_REATTACH, maxUnavailable 1 (maxConcurrentMoves ${DEFAULT_CONFIG.operations.maxConcurrentMoves}). ` +
      `Each shard has its own typical cut-over (the destination's catch-up, ${CUT_OVER_MS[0] / 1000}–${CUT_OVER_MS[1] / 1000} s) and each pageserver its own restart (${min(RESTART_MS[0])}–${min(RESTART_MS[1])}); ` +
      `every run draws log-normally around them (σ ${CUT_OVER_SIGMA} and ${RESTART_SIGMA}, seeded). Planted after the history: one shard attached on pageserver ${BLOCKER_NODE} (the middle of the order) set to policy PAUSE, which the drain skips. ` +
      `A real run moves every shard twice (drain and fill) over loopback HTTP, ~2.5 min of CPU at 4 000 shards: this case measures one history size (${HISTORY_SIZES.join(', ')} runs), ${SAMPLES} samples and ${REAL_RUNS} + ${REAL_RUNS} real runs` +
      (SHARDS === 4000 ? '.' : ` (reduced: ${SHARDS} shards, LK_REHEARSAL_PS_TENANTS=${TENANTS}).`),
    request: {
      config: { plugins: [{ name: 'pageserver', options: LIVE_OPTIONS as never }], operations: DEFAULT_CONFIG.operations },
      snapshots: await initialSnapshots(),
      history: [],
      input: INPUT,
      samples: SAMPLES,
      seed: 7,
    },
    nature: nature(),
    historySizes: HISTORY_SIZES,
    plant: plantBlocker,
    realRuns: REAL_RUNS,
    drift: DRIFT,
    samples: SAMPLES,
  };
}
