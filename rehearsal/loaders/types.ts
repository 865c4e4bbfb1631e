import type { ClusterBackend } from '../../src/cluster/backend.ts';
import type { Clock } from '../../src/cluster/clock.ts';
import type { BackendSnapshot } from '../../src/cluster/rehearsal.ts';
import type { DurationSampler, RehearsedAction } from '../../src/domain/rehearsal/types.ts';

/** What a loader needs to stand a plugin's simulators up in virtual time. */
export interface RehearsalLoadContext {
  /** The sample's virtual clock: every simulator and the gateway run on it. */
  clock: Clock;
  /** Durations of migrations, evictions, cut-overs and restarts for this sample. */
  durations: DurationSampler;
  seed: number;
  /**
   * The request's `defaults` (RehearsalRequest). A draw whose source is DEFAULT for an action
   * not given here falls back on the loader's own default for it (the backend's, e.g. the fake's
   * latencies), still counted as DEFAULT.
   */
  defaults?: Partial<Record<RehearsedAction, number>>;
}

/** A plugin's simulators, seeded from a snapshot, listening on loopback only. */
export interface LoadedSimulators {
  /** The plugin's options pointing at the simulators: they replace the live config entry's options. */
  options: unknown;
  /** Every URL the simulators listen on (a rehearsal must send nothing anywhere else). */
  urls: string[];
  /**
   * Optional: the backend's own durations (ms) for the actions the runner draws itself
   * (NODE_RESTART: the down time handed to `restartNode`), used where neither history nor the
   * request's `defaults` give one.
   */
  defaults?: Partial<Record<RehearsedAction, number>>;
  /**
   * Takes the node down and brings it back after `downMs` of the sample's clock, as the
   * restart a rollout waits for (restart WAIT_FOR_REATTACH) would; resolves once it is down.
   * `nodeId` is the node's id as the gateway sees it (a hyperconverged host's name); a node
   * these simulators do not have is left alone (resolves, nothing done): the runner asks
   * every loader of the sample.
   */
  restartNode(nodeId: string, downMs: number): Promise<void>;
  /**
   * Optional: hands the loader the backend created from its `options` (the combined backend
   * of the sample), before the rollout starts — for simulators that live inside the plugin
   * (the fake's simulated cluster), which the loader can only reach through it.
   */
  attach?(backend: ClusterBackend): void;
  stop(): Promise<void>;
}

/**
 * One per plugin (rehearsal/loaders/<plugin>.ts, default export): loads that plugin's
 * snapshot into its simulators. `liveOptions`: the plugin's options in the live config
 * (timeouts, limits and policies are kept; addresses and credentials are replaced).
 */
export type RehearsalLoader = (snapshot: BackendSnapshot, liveOptions: unknown, context: RehearsalLoadContext) => Promise<LoadedSimulators>;
