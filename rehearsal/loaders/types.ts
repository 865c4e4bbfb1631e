import type { Clock } from '../../src/cluster/clock.ts';
import type { BackendSnapshot } from '../../src/cluster/rehearsal.ts';
import type { DurationSampler } from '../../src/domain/rehearsal/types.ts';

/** What a loader needs to stand a plugin's simulators up in virtual time. */
export interface RehearsalLoadContext {
  /** The sample's virtual clock: every simulator and the gateway run on it. */
  clock: Clock;
  /** Durations of migrations, evictions, cut-overs and restarts for this sample. */
  durations: DurationSampler;
  seed: number;
}

/** A plugin's simulators, seeded from a snapshot, listening on loopback only. */
export interface LoadedSimulators {
  /** The plugin's options pointing at the simulators: they replace the live config entry's options. */
  options: unknown;
  /** Every URL the simulators listen on (a rehearsal must send nothing anywhere else). */
  urls: string[];
  /**
   * Takes the node down and brings it back after `downMs` of the sample's clock, as the
   * restart a rollout waits for (restart WAIT_FOR_REATTACH) would; resolves once it is down.
   */
  restartNode(nodeId: string, downMs: number): Promise<void>;
  stop(): Promise<void>;
}

/**
 * One per plugin (rehearsal/loaders/<plugin>.ts, default export): loads that plugin's
 * snapshot into its simulators. `liveOptions`: the plugin's options in the live config
 * (timeouts, limits and policies are kept; addresses and credentials are replaced).
 */
export type RehearsalLoader = (snapshot: BackendSnapshot, liveOptions: unknown, context: RehearsalLoadContext) => Promise<LoadedSimulators>;
