/**
 * Prometheus metrics of storage operations (storage:P2), fed by the
 * engine through {@link OperationObserver}.
 *
 * Every app gets its own Registry (never prom-client's global one), so several apps can
 * run in one process (tests) without "metric already registered" errors.
 *
 * Label values use the domain's own spellings (`DRAIN`, `SUCCEEDED`, `SECONDARY_LAGGING`,
 * `PAUSE_FOR_RESTART`), the same as the GraphQL enums and the logs, so one grep finds a
 * value everywhere.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { SCHEDULING_POLICIES, type SchedulingPolicy } from '../../domain/storage/policy.ts';
import { OPERATION_KINDS, type OperationKind, type OperationOutcome } from '../../domain/operations.ts';
import type { OperationObserver } from './observer.ts';

const METRICS_PREFIX = 'lockkeeper_';

/**
 * Seconds. A simulated or local cut-over takes tens of milliseconds; a real one waits for
 * the pageserver to attach the shard, which can take minutes for a cold secondary.
 */
export const MOVE_LATENCY_BUCKETS = [0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];

const OUTCOMES: readonly OperationOutcome[] = ['SUCCEEDED', 'FAILED', 'CANCELLED'];
/** Label value for a skipped or failed step that carries no reason (should not happen). */
const NO_REASON = 'UNKNOWN';

export interface OperationMetricsOptions {
  /** Also register prom-client's process and Node.js metrics (prefixed `lockkeeper_`). Default true. */
  defaultMetrics?: boolean;
  /** Called when a hook fails; the observer never throws into the engine. */
  onError?: (error: unknown) => void;
}

export interface OperationMetrics {
  registry: Registry;
  observer: OperationObserver;
}

export function createOperationMetrics(options: OperationMetricsOptions = {}): OperationMetrics {
  const registry = new Registry();
  const registers = [registry];
  const p = METRICS_PREFIX;

  const started = new Counter({ name: `${p}operations_started_total`, help: 'Node operations (drain, fill) started.', labelNames: ['kind'], registers });
  const finished = new Counter({
    name: `${p}operations_finished_total`,
    help: 'Node operations ended, by outcome.',
    labelNames: ['kind', 'outcome'],
    registers,
  });
  const moved = new Counter({ name: `${p}shards_moved_total`, help: 'Tenant shards cut over by node operations.', labelNames: ['kind'], registers });
  const skipped = new Counter({
    name: `${p}shards_skipped_total`,
    help: 'Tenant shards a node operation left in place, by reason.',
    labelNames: ['kind', 'reason'],
    registers,
  });
  const failed = new Counter({
    name: `${p}shards_failed_total`,
    help: 'Tenant shard cut-overs that failed, by reason.',
    labelNames: ['kind', 'reason'],
    registers,
  });
  const inFlight = new Gauge({ name: `${p}moves_in_flight`, help: 'Cut-overs running right now.', labelNames: ['kind'], registers });
  const policy = new Gauge({
    name: `${p}node_scheduling_policy`,
    help: 'Storage scheduling policy of each node: 1 for its current policy, 0 for the others.',
    labelNames: ['node', 'policy'],
    registers,
  });
  const latency = new Histogram({
    name: `${p}move_duration_seconds`,
    help: 'Time from the start of a cut-over to its success.',
    labelNames: ['kind'],
    buckets: MOVE_LATENCY_BUCKETS,
    registers,
  });

  // Series that exist before anything happens, so that rate() and absent() behave from the start.
  for (const kind of OPERATION_KINDS) {
    started.inc({ kind }, 0);
    moved.inc({ kind }, 0);
    inFlight.set({ kind }, 0);
    for (const outcome of OUTCOMES) finished.inc({ kind, outcome }, 0);
  }

  if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: registry, prefix: p });

  // One labels object per kind, made once: the engine reports every step of every operation.
  const byKind = Object.fromEntries(OPERATION_KINDS.map((kind) => [kind, { kind }])) as Record<OperationKind, { kind: OperationKind }>;
  const safely = (update: () => void): void => {
    try {
      update();
    } catch (error) {
      options.onError?.(error);
    }
  };

  const observer: OperationObserver = {
    operationStarted: (kind) => safely(() => started.inc(byKind[kind])),
    operationFinished: (kind, outcome) => safely(() => finished.inc({ kind, outcome })),
    stepFinished: (kind, state, reason, durationMs) =>
      safely(() => {
        if (state === 'MOVED') {
          moved.inc(byKind[kind]);
          if (durationMs !== null) latency.observe(byKind[kind], Math.max(0, durationMs) / 1000);
        } else if (state === 'SKIPPED') {
          skipped.inc({ kind, reason: reason ?? NO_REASON });
        } else {
          failed.inc({ kind, reason: reason ?? NO_REASON });
        }
      }),
    movesInFlight: (kind, delta) => safely(() => inFlight.inc(byKind[kind], delta)),
    policyChanged: (node, current: SchedulingPolicy) =>
      safely(() => {
        for (const p of SCHEDULING_POLICIES) policy.set({ node, policy: p }, p === current ? 1 : 0);
      }),
  };

  return { registry, observer };
}
