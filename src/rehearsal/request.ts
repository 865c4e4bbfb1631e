import type { BackendSnapshot } from '../cluster/rehearsal.ts';
import type { OperationSettings, PluginEntry } from '../config/schema.ts';
import type { HistoryRecord, RehearsalSample, RehearsedAction } from '../domain/rehearsal/types.ts';
import type { RolloutInput } from '../operations/rollouts/engine.ts';

/**
 * What the gateway hands the rehearsal worker (issue 33): everything it needs, as plain data
 * (structured-clone-able), so that the worker reads nothing of the live cluster and the live
 * database.
 */
export interface RehearsalRequest {
  config: { plugins: PluginEntry[]; operations: OperationSettings };
  snapshots: BackendSnapshot[];
  history: HistoryRecord[];
  input: RolloutInput;
  /** How many seeded samples (default 20). */
  samples: number;
  /** Sample i runs with seed `seed + i`. */
  seed: number;
  /** Durations (ms) to fall back on where history has none; the loaders' defaults otherwise. */
  defaults?: Partial<Record<RehearsedAction, number>>;
}

/** The worker's messages: progress while it runs, then one answer. */
export type RehearsalWorkerMessage =
  { type: 'progress'; done: number; total: number } | { type: 'done'; samples: RehearsalSample[] } | { type: 'error'; message: string };
