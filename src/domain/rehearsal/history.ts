/**
 * Where a rehearsal's durations come from (issue 33): the finished actions of earlier real
 * runs, fitted per workload as log-normal and drawn from the predictive distribution, so the
 * spread of the history, and the uncertainty of so few runs, become the spread of the
 * prediction. Pure.
 */
import { InvalidInputError } from '../errors.ts';
import { createPrng } from '../prng.ts';
import type { DrawnDuration, DurationSampler, DurationSource, HistoryRecord, RehearsedAction } from './types.ts';

/**
 * The fewest records a level of history (this workload, this node, the cluster) needs to speak
 * alone. With fewer, k records answer a draw with probability k / MIN_RECORDS and the next,
 * broader level answers the rest: one lucky migration must not become a certainty, yet it
 * still counts for something.
 */
const MIN_RECORDS = 3;

const LEVELS: readonly DurationSource[] = ['WORKLOAD', 'NODE', 'CLUSTER'];

export interface SamplingDurationSampler extends DurationSampler {
  /** How many draws each source answered so far. */
  sources(): Record<DurationSource, number>;
}

/** A level's records of one action, in log space: their count, mean and own spread. */
interface Pool {
  level: DurationSource;
  action: RehearsedAction;
  logs: number[];
  mean: number;
  /** The sample standard deviation of the logs; null under two records. */
  sd: number | null;
}

/** ln of a duration; 0 ms counts as 1 ms (a log-normal has no zero). */
const logOf = (ms: number) => Math.log(Math.max(ms, 1));

/**
 * The spread of one action's runs around each workload's own typical value: the standard
 * deviation of every WORKLOAD pool's logs around that pool's mean, pooled over the workloads
 * with two records or more (Σ (x − mean)² / Σ (n − 1)). A workload with five runs says little
 * about its own spread; a hundred workloads with five runs each say much about the action's.
 */
function pooledSpreads(pools: Iterable<Pool>): Map<RehearsedAction, number> {
  const sums = new Map<RehearsedAction, { squares: number; freedom: number }>();
  for (const pool of pools) {
    if (pool.level !== 'WORKLOAD' || pool.logs.length < 2) continue;
    const sum = sums.get(pool.action) ?? { squares: 0, freedom: 0 };
    for (const x of pool.logs) sum.squares += (x - pool.mean) ** 2;
    sum.freedom += pool.logs.length - 1;
    sums.set(pool.action, sum);
  }
  return new Map([...sums].map(([action, { squares, freedom }]) => [action, Math.sqrt(squares / freedom)]));
}

/**
 * A sampler for one seeded sample. Each draw walks WORKLOAD (this action on this workload) →
 * NODE (this action on this node) → CLUSTER (this action anywhere) → DEFAULT (`defaults`,
 * which has no spread): a level with at least MIN_RECORDS records answers; a level with fewer
 * answers with probability k / MIN_RECORDS; an empty level passes.
 *
 * A level answers with a log-normal draw, the posterior predictive of its n records: the
 * location is the mean of their logs moved once per sample by its own uncertainty (σ/√n, so
 * that samples disagree as much as five runs can be wrong about a VM), and each draw spreads
 * by σ around it. σ is the action's pooled spread (pooledSpreads) for a WORKLOAD pool, the
 * pool's own for NODE and CLUSTER (different workloads differ: that is spread too), the other
 * where one is missing, and 0 where neither exists (the record itself). A bootstrap of five
 * records would have drawn neither the mean's uncertainty nor the tails, and its 80 %
 * intervals held fewer than 80 % of real runs (bench/RESULTS.md, rehearsal).
 * Same history, defaults and seed, and the same sequence of calls: the same durations.
 */
export function createDurationSampler(history: readonly HistoryRecord[], defaults: Record<RehearsedAction, number>, seed: number): SamplingDurationSampler {
  for (const [action, ms] of Object.entries(defaults)) {
    if (!Number.isFinite(ms) || ms < 0)
      throw new InvalidInputError('defaults', `${action}=${ms}`, `the default duration of ${action} must be a finite number of ms ≥ 0`);
  }
  if (!Number.isFinite(seed)) throw new InvalidInputError('seed', String(seed), 'the seed must be a finite number');
  const pools = new Map<string, Pool>();
  const add = (level: DurationSource, action: RehearsedAction, id: string, ms: number) => {
    const key = poolKey(level, action, id);
    const pool = pools.get(key);
    if (pool) pool.logs.push(logOf(ms));
    else pools.set(key, { level, action, logs: [logOf(ms)], mean: 0, sd: null });
  };
  for (const r of history) {
    // A record that cannot be a duration (clock skew, a half-written row) is left out rather than drawn.
    if (!Number.isFinite(r.durationMs) || r.durationMs < 0) continue;
    add('WORKLOAD', r.action, r.workloadId, r.durationMs);
    if (r.nodeId !== null) add('NODE', r.action, r.nodeId, r.durationMs);
    add('CLUSTER', r.action, '', r.durationMs);
  }
  for (const pool of pools.values()) {
    const n = pool.logs.length;
    pool.mean = pool.logs.reduce((a, x) => a + x, 0) / n;
    if (n >= 2) pool.sd = Math.sqrt(pool.logs.reduce((a, x) => a + (x - pool.mean) ** 2, 0) / (n - 1));
  }
  const pooled = pooledSpreads(pools.values());
  const spreadOf = (pool: Pool) => (pool.level === 'WORKLOAD' ? (pooled.get(pool.action) ?? pool.sd) : (pool.sd ?? pooled.get(pool.action))) ?? 0;
  const random = createPrng(seed);
  const normal = () => Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
  /** Each pool's location for this sample, drawn at its first use. */
  const locations = new Map<Pool, number>();
  const counts: Record<DurationSource, number> = { WORKLOAD: 0, NODE: 0, CLUSTER: 0, DEFAULT: 0 };
  const answer = (ms: number, source: DurationSource): DrawnDuration => {
    counts[source]++;
    return { ms, source };
  };
  const drawFrom = (pool: Pool): number => {
    const sigma = spreadOf(pool);
    let location = locations.get(pool);
    if (location === undefined) {
      location = pool.mean + (sigma / Math.sqrt(pool.logs.length)) * normal();
      locations.set(pool, location);
    }
    return Math.round(Math.exp(location + sigma * normal()));
  };
  return {
    draw(action, workloadId, nodeId) {
      for (const level of LEVELS) {
        const id = level === 'WORKLOAD' ? workloadId : level === 'NODE' ? nodeId : '';
        if (id === null) continue;
        const pool = pools.get(poolKey(level, action, id));
        if (!pool) continue;
        if (pool.logs.length < MIN_RECORDS && random() >= pool.logs.length / MIN_RECORDS) continue;
        return answer(drawFrom(pool), level);
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
