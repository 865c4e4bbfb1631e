/**
 * Where a rehearsal's durations come from (issue 33): the finished actions of earlier real
 * runs, resampled, so the spread of the history becomes the spread of the prediction. Pure.
 */
import { InvalidInputError } from '../errors.ts';
import { createPrng } from '../prng.ts';
import type { DrawnDuration, DurationSampler, DurationSource, HistoryRecord, RehearsedAction } from './types.ts';

/**
 * The fewest records a level of history (this workload, this node, the cluster) needs to speak
 * alone. With fewer, k records answer a draw with probability k / MIN_RECORDS and the next,
 * broader level answers the rest: one lucky migration must not become a certainty, yet it
 * still counts for something. Three is the smallest pool whose resampling has a middle value.
 */
const MIN_RECORDS = 3;

const LEVELS: readonly DurationSource[] = ['WORKLOAD', 'NODE', 'CLUSTER'];

export interface SamplingDurationSampler extends DurationSampler {
  /** How many draws each source answered so far. */
  sources(): Record<DurationSource, number>;
}

/**
 * A sampler for one seeded sample. Each draw walks WORKLOAD (this action on this workload) →
 * NODE (this action on this node) → CLUSTER (this action anywhere) → DEFAULT (`defaults`,
 * which has no spread): a level with at least MIN_RECORDS records answers; a level with fewer
 * answers with probability k / MIN_RECORDS; an empty level passes. A level answers with one of
 * its records picked uniformly (a bootstrap draw). Same history, defaults and seed, and the same
 * sequence of calls: the same durations.
 */
export function createDurationSampler(history: readonly HistoryRecord[], defaults: Record<RehearsedAction, number>, seed: number): SamplingDurationSampler {
  for (const [action, ms] of Object.entries(defaults)) {
    if (!Number.isFinite(ms) || ms < 0)
      throw new InvalidInputError('defaults', `${action}=${ms}`, `the default duration of ${action} must be a finite number of ms ≥ 0`);
  }
  if (!Number.isFinite(seed)) throw new InvalidInputError('seed', String(seed), 'the seed must be a finite number');
  const pools = new Map<string, number[]>();
  const add = (key: string, ms: number) => {
    const pool = pools.get(key);
    if (pool) pool.push(ms);
    else pools.set(key, [ms]);
  };
  for (const r of history) {
    // A record that cannot be a duration (clock skew, a half-written row) is left out rather than drawn.
    if (!Number.isFinite(r.durationMs) || r.durationMs < 0) continue;
    add(poolKey('WORKLOAD', r.action, r.workloadId), r.durationMs);
    if (r.nodeId !== null) add(poolKey('NODE', r.action, r.nodeId), r.durationMs);
    add(poolKey('CLUSTER', r.action, ''), r.durationMs);
  }
  const random = createPrng(seed);
  const counts: Record<DurationSource, number> = { WORKLOAD: 0, NODE: 0, CLUSTER: 0, DEFAULT: 0 };
  const answer = (ms: number, source: DurationSource): DrawnDuration => {
    counts[source]++;
    return { ms, source };
  };
  return {
    draw(action, workloadId, nodeId) {
      for (const level of LEVELS) {
        const id = level === 'WORKLOAD' ? workloadId : level === 'NODE' ? nodeId : '';
        if (id === null) continue;
        const pool = pools.get(poolKey(level, action, id));
        if (!pool) continue;
        if (pool.length < MIN_RECORDS && random() >= pool.length / MIN_RECORDS) continue;
        return answer(pool[Math.floor(random() * pool.length)]!, level);
      }
      const ms = defaults[action];
      if (ms === undefined) throw new InvalidInputError('action', action, `no history and no default duration for ${action}`);
      return answer(ms, 'DEFAULT');
    },
    sources: () => ({ ...counts }),
  };
}

const poolKey = (level: DurationSource, action: RehearsedAction, id: string) => `${level}\u0000${action}\u0000${id}`;

/** A finished step as the database holds it (StepRecord's fields a duration needs). */
export interface HistoryStep {
  workloadKind: string;
  workloadId: string;
  action: string;
  state: string;
  fromNodeId: string | null;
  startedAt: number | null;
  finishedAt: number | null;
}

/** An event of the log (LoggedEvent's fields a node restart needs). */
export interface HistoryEvent {
  type: string;
  nodeId: string | null;
  operationId: string | null;
  at: number;
  /** NODE_STATE_CHANGED's payload carries `availability`. */
  payload?: unknown;
}

/**
 * Step actions and the state a step must have ended in to be a finished action. STOP_AND_RESTART
 * is left out: its span holds the wait for the node's other VMs to leave, which the rehearsal
 * plays itself, so drawing it would count that wait twice.
 */
const STEP_ACTIONS: Record<string, { state: string; action: RehearsedAction }> = {
  MIGRATE: { state: 'MOVED', action: 'VM_MIGRATE' },
  STOP: { state: 'STOPPED', action: 'VM_STOP' },
  // k8s:E5: eviction strategy None: the VM's launcher pod evicted and gone.
  EVICT: { state: 'MOVED', action: 'POD_EVICT' },
  CUT_OVER: { state: 'MOVED', action: 'SHARD_CUT_OVER' },
};

/** The events that hand a node over for its restart (rollout:O7). */
const HANDED_OVER = new Set(['ROLLOUT_NODE_AWAITING_RESTART', 'ROLLOUT_NODE_AWAITING_CONFIRM']);

/**
 * The history a rehearsal draws from. VM and shard actions: each step that finished as it
 * should (MOVED, or STOPPED for a stop) with both times, lasting finishedAt − startedAt; failed,
 * skipped, abandoned and unfinished steps say nothing about how long the action takes.
 * Node restarts (rollout:O7): from the rollout's hand-over (ROLLOUT_NODE_AWAITING_RESTART or
 * _CONFIRM) to the node back ACTIVE: the NODE_STATE_CHANGED that made it ACTIVE again after it
 * re-attached (ROLLOUT_NODE_RESTARTED), or the re-attach itself when the log shows it ACTIVE by
 * then. A hand-over the node never came back from (a cancel, a failure, still down) gives nothing.
 * The node step's own detail keeps only its last phase's time, so the events are what tell.
 */
export function historyFromSteps(steps: readonly HistoryStep[], events: readonly HistoryEvent[] = []): HistoryRecord[] {
  const records: HistoryRecord[] = [];
  for (const step of steps) {
    const kind = STEP_ACTIONS[step.action];
    if (!kind || kind.state !== step.state || step.startedAt === null || step.finishedAt === null || step.finishedAt < step.startedAt) continue;
    if ((kind.action === 'SHARD_CUT_OVER') !== (step.workloadKind === 'shard')) continue;
    records.push({
      action: kind.action,
      workloadId: step.workloadId,
      nodeId: step.fromNodeId,
      durationMs: step.finishedAt - step.startedAt,
      at: step.finishedAt,
    });
  }
  // Events of one millisecond keep their log order (the sort is stable).
  const ordered = [...events].sort((a, b) => a.at - b.at);
  const availability = new Map<string, unknown>();
  const open = new Map<string, { since: number; down: boolean; reattached: boolean }>();
  const close = (nodeId: string, since: number, at: number) => {
    records.push({ action: 'NODE_RESTART', workloadId: nodeId, nodeId, durationMs: at - since, at });
    open.delete(nodeId);
  };
  for (const e of ordered) {
    if (e.nodeId === null) continue;
    const handover = open.get(e.nodeId);
    if (HANDED_OVER.has(e.type)) {
      // A second hand-over before the first came back: the first is not a restart that finished.
      open.set(e.nodeId, { since: e.at, down: availability.has(e.nodeId) && availability.get(e.nodeId) !== 'ACTIVE', reattached: false });
    } else if (e.type === 'NODE_STATE_CHANGED') {
      const now = availabilityOf(e.payload);
      availability.set(e.nodeId, now);
      if (!handover) continue;
      // A restart closes at its first ACTIVE after the re-attach; a cordon lifted later logs ACTIVE again and finds it closed.
      if (now !== 'ACTIVE') handover.down = true;
      else if (handover.reattached) close(e.nodeId, handover.since, e.at);
      else handover.down = false;
    } else if (e.type === 'ROLLOUT_NODE_RESTARTED' && handover) {
      handover.reattached = true;
      // Back before the rollout saw the re-attach (or never seen down): back when seen.
      if (!handover.down) close(e.nodeId, handover.since, e.at);
    } else if ((e.type === 'ROLLOUT_NODE_FAILED' || e.type === 'ROLLOUT_NODE_SKIPPED') && handover) {
      open.delete(e.nodeId);
    }
  }
  return records;
}

const availabilityOf = (payload: unknown): unknown =>
  typeof payload === 'object' && payload !== null && 'availability' in payload ? (payload as { availability: unknown }).availability : undefined;
