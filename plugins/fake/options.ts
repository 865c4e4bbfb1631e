import { z } from 'zod';
import type { LatencySettings } from '../../src/cluster/backend.ts';
import { topologySchema } from './topology.ts';

/** Slow enough that a person watching GraphiQL sees each step happen. */
export const DEFAULT_LATENCIES_MS: LatencySettings = { migrate: 800, stop: 400, start: 500, cutOver: 300, cordon: 50 };

const ms = z.number().int().nonnegative();

export const latenciesSchema = z.object({ migrate: ms, stop: ms, start: ms, cutOver: ms, cordon: ms }).partial().strict();

/** Options of the `fake` plugin (config file `backend.options`); unknown keys are rejected by name. */
export const fakeOptionsSchema = z
  .object({
    topology: z.union([z.literal('demo'), z.literal('empty'), topologySchema]).default('demo'),
    latenciesMs: latenciesSchema.default({}),
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
