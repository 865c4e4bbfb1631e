/**
 * The shapes a rehearsal (issue 33) passes between its parts: the history that durations are
 * drawn from, one sample's outcome, and the report that aggregates the samples. Pure data.
 */

/** An action whose duration a rehearsal draws from history. */
export type RehearsedAction =
  /** A VM live-migrated off its node (a MIGRATE step). */
  | 'VM_MIGRATE'
  /** A VM stopped (a STOP step, or the stop of a RESTART). */
  | 'VM_STOP'
  /** A VM started again on another node or after maintenance. */
  | 'VM_START'
  /** A pod evicted and gone (k8s: pod drain). */
  | 'POD_EVICT'
  /** A shard cut over to another pageserver (CUT_OVER). */
  | 'SHARD_CUT_OVER'
  /** A node's restart: from out of service (restart allowed) to back and ACTIVE. */
  | 'NODE_RESTART';

/** One finished action of an earlier real run, as read from the database's steps and events. */
export interface HistoryRecord {
  action: RehearsedAction;
  /** The VM, pod, shard or node it acted on. */
  workloadId: string;
  /** The node it ran on (for a node restart, the node itself). */
  nodeId: string | null;
  durationMs: number;
  /** When it finished (epoch ms). */
  at: number;
}

/** Where a drawn duration came from, so the report can say how much is guessed. */
export type DurationSource = 'WORKLOAD' | 'NODE' | 'CLUSTER' | 'DEFAULT';

export interface DrawnDuration {
  ms: number;
  source: DurationSource;
}

/** Draws durations for one sample; seeded, so a sample replays identically. */
export interface DurationSampler {
  draw(action: RehearsedAction, workloadId: string, nodeId: string | null): DrawnDuration;
}

/** A pause the rollout hit in a sample (the first one first). */
export interface SamplePause {
  /** Stable key of what held it, so samples can be counted together: `${reason}:${nodeId}:${workload}`. */
  key: string;
  /** The rollout's pause/failure reason code (e.g. `UNSAFE_TO_RESTART`, `VM_NOT_MIGRATABLE`, `PDB`, `BUDGET`, `NODE_NOT_BACK`). */
  reason: string;
  nodeId: string | null;
  /** The VM, pod, PDB or shard that held it, when one did. */
  workload: string | null;
  /** Words for an operator. */
  message: string;
  /** Virtual ms since the rollout's start. */
  atMs: number;
}

/** One node's part of one sample. */
export interface SampleNode {
  nodeId: string;
  /** 1-based. */
  wave: number;
  /** Virtual ms since the rollout's start (null: never started/finished in this sample). */
  startedAtMs: number | null;
  finishedAtMs: number | null;
  /** Workloads left on the node when it would restart (safeToRestart as it would read). */
  leftOnNode: string[];
  safeToRestart: boolean | null;
}

/** One seeded run of the rollout in virtual time. */
export interface RehearsalSample {
  seed: number;
  /** Virtual ms from the start to the rollout's end (or to where the sample gave up). */
  durationMs: number;
  outcome: 'SUCCEEDED' | 'FAILED' | 'CANCELLED' | 'GAVE_UP';
  nodes: SampleNode[];
  pauses: SamplePause[];
  /** VMs stopped by the rollout and not running again at its end. */
  vmsLeftStopped: string[];
  /** The most nodes out of service at once. */
  peakNodesOut: number;
  /** How many drawn durations came from each source. */
  durationSources: Record<DurationSource, number>;
}

export interface Quantiles {
  p10: number;
  p50: number;
  p90: number;
}

export interface ReportPause {
  key: string;
  reason: string;
  nodeId: string | null;
  workload: string | null;
  message: string;
  /** Fraction of samples in which it happened (0–1). */
  probability: number;
  /** Median virtual ms since the start at which it happened, over the samples that hit it. */
  typicalAtMs: number;
}

export interface RehearsalReport {
  samples: number;
  /** Total duration in ms. */
  durationMs: Quantiles;
  waves: { wave: number; nodeIds: string[]; startMs: Quantiles; durationMs: Quantiles }[];
  /** Waves (1-based) that no sample started, left out of `waves`. */
  wavesNotReached?: number[];
  nodes: {
    nodeId: string;
    wave: number;
    startMs: Quantiles | null;
    durationMs: Quantiles | null;
    leftOnNode: string[];
    safeToRestart: boolean | null;
    /** Every workload any sample left on the node, with the fraction of the node's samples that left it. */
    leftOnNodeProbabilities?: { workload: string; probability: number }[];
  }[];
  /** First one first (by typicalAtMs). */
  pauses: ReportPause[];
  /** VM id → fraction of samples in which it was left stopped. */
  vmsLeftStopped: { vmId: string; probability: number }[];
  peakNodesOut: number;
  outcomes: Record<RehearsalSample['outcome'], number>;
  durationSources: Record<DurationSource, number>;
}
