import { z } from 'zod';
import type { LatencySettings } from '../../src/cluster/backend.ts';
import { topologySchema } from './topology.ts';

/** Slow enough that a person watching GraphiQL sees each step happen. */
export const DEFAULT_LATENCIES_MS: LatencySettings = { migrate: 800, stop: 400, start: 500, cutOver: 300, cordon: 50 };

const ms = z.number().int().nonnegative();

export const latenciesSchema = z.object({ migrate: ms, stop: ms, start: ms, cutOver: ms, cordon: ms }).partial().strict();

const count = (max: number) => z.number().int().nonnegative().max(max);

/** Most workloads a generated topology may hold: beyond it the simulator is not the tool. */
const MAX_GENERATED_WORKLOADS = 2_000_000;

/**
 * `topology: { generate: {...} }`: a cluster of any size as config, not code (the memory
 * benchmark's 100 000 shards + 10 000 VMs) — see generateTopology for each field.
 */
const generatedTopologySchema = z
  .object({
    generate: z
      .object({
        nodes: count(10_000).min(1),
        zones: count(1_000).min(1).optional(),
        controlPlaneNodes: count(10_000).optional(),
        vmsPerNode: count(100_000).optional(),
        namespaces: z.array(z.string().min(1)).min(1).optional(),
        tenants: count(1_000_000).optional(),
        shardsPerTenant: count(256).min(1).optional(),
        secondariesPerShard: count(16).optional(),
        seed: z.number().int().optional(),
      })
      .strict()
      .refine((g) => g.nodes * (g.vmsPerNode ?? 0) + (g.tenants ?? 0) * (g.shardsPerTenant ?? 1) <= MAX_GENERATED_WORKLOADS, {
        message: `at most ${MAX_GENERATED_WORKLOADS.toLocaleString('en')} workloads (nodes × vmsPerNode + tenants × shardsPerTenant)`,
      }),
  })
  .strict();

/** An object without `generate`: so that a bad `generate` is reported as such, not as an unknown key of an inline topology. */
const notGenerated = z.custom<unknown>((v) => !(typeof v === 'object' && v !== null && 'generate' in v), { abort: true });

/** Options of the `fake` plugin (config file `backend.options`); unknown keys are rejected by name. */
export const fakeOptionsSchema = z
  .object({
    topology: z.union([z.literal('demo'), z.literal('empty'), generatedTopologySchema, notGenerated.pipe(topologySchema)]).default('demo'),
    latenciesMs: latenciesSchema.default({}),
    /**
     * Latencies of single VMs and shards, by id, over `latenciesMs` (issue 33: a rehearsal
     * gives each workload the duration drawn from its history). Not slowed down.
     */
    workloadLatenciesMs: z.record(z.string().min(1), latenciesSchema).default({}),
    /**
     * Multiplies every latency (and the restart delay), so that a person can watch a drain
     * or a maintenance progress: the demo's ends in about half a second otherwise. Also
     * `LOCKKEEPER_DEMO_SLOWDOWN` / `lockkeeper serve --demo-slowdown N` (issue 30, point 5).
     */
    slowdown: z.number().min(1).max(1000).default(1),
    /** How long a restarting node stays OFFLINE before it re-attaches. */
    restartDelayMs: ms.default(3000),
    /** Time from re-attach (WARMING_UP) to the first good heartbeat (ACTIVE). */
    heartbeatIntervalMs: ms.default(1000),
    /** How fast lagging secondaries catch up. */
    secondaryDownloadBytesPerSecond: z
      .number()
      .nonnegative()
      .default(16 * 1024 ** 2),
    /** Seed of the PRNG behind injected failures (and latency spikes, from their own stream). */
    seed: z.number().int().default(1),
    /**
     * Latency spikes (issue 16 fault campaign): each move takes `factor` × its latency with
     * probability `rate`. Off by default.
     */
    latencySpike: z
      .object({ rate: z.number().min(0).max(1), factor: z.number().min(1) })
      .strict()
      .default({ rate: 0, factor: 1 }),
    /**
     * Makes the cluster outlive the process: loaded from this file when it exists (instead
     * of `topology`), written after every change. Relative paths: against the config file's
     * directory (plugin) or the working directory (`createSimulatedCluster`).
     */
    statePath: z.string().min(1).optional(),
  })
  .strict();

export type FakeOptions = z.output<typeof fakeOptionsSchema>;
export type FakeOptionsInput = z.input<typeof fakeOptionsSchema>;
