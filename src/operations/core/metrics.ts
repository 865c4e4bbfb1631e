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
import { OPERATION_KINDS, type OperationOutcome } from '../../domain/operations.ts';
import type { OperationObserver } from './observer.ts';
import { registerStateGauges, type StateSources } from './state-gauges.ts';

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
  /** Adds the gauges read from the cluster and the database at each scrape (./state-gauges.ts). */
  watchState(sources: StateSources): void;
  /**
   * Drops every metric. prom-client's default metrics observe GC through a PerformanceObserver
   * it never disconnects, which holds this registry: cleared, the registry no longer holds the
   * gauges' collect functions and, through them, the stopped app (a rehearsal's samples, each an
   * app in one worker, kept every earlier sample's cluster alive: ~19 MiB a sample at 1 000 VMs).
   */
  close(): void;
}

export function createOperationMetrics(options: OperationMetricsOptions = {}): OperationMetrics {
  const registry = new Registry();
  const registers = [registry];
  const p = METRICS_PREFIX;
  // What changes at every move is counted here and handed to prom-client when it is read
  // (`collect`, at each scrape): its labelled inc() costs more than the rest of a zero-latency move's bookkeeping.
  const movesInFlightBy = new Map<string, number>();
  const movedSinceScrape = new Map<string, number>();

  const started = new Counter({ name: `${p}operations_started_total`, help: 'Operations started, by kind.', labelNames: ['kind'], registers });
  const finished = new Counter({
    name: `${p}operations_finished_total`,
    help: 'Node operations ended, by outcome.',
    labelNames: ['kind', 'outcome'],
    registers,
  });
  // Shards and VMs are counted apart, each under the kind of operation it really ran in (a
  // maintenance's shard cut-overs are MAINTENANCE's, not DRAIN's).
  const moved = new Counter({
    name: `${p}shards_moved_total`,
    help: 'Tenant shards cut over, by the kind of operation.',
    labelNames: ['kind'],
    registers,
    collect() {
      for (const [kind, n] of movedSinceScrape) this.inc({ kind }, n);
      movedSinceScrape.clear();
    },
  });
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
  const vmsHandled = new Counter({
    name: `${p}vms_handled_total`,
    help: 'VMs a maintenance moved or stopped, by action (MIGRATE, STOP, STOP_AND_RESTART) and outcome (MOVED: migrated or restarted elsewhere; STOPPED).',
    labelNames: ['kind', 'action', 'outcome'],
    registers,
  });
  const vmsSkipped = new Counter({
    name: `${p}vms_skipped_total`,
    help: 'VMs a maintenance left alone, by reason (e.g. VM_GONE).',
    labelNames: ['kind', 'reason'],
    registers,
  });
  const vmsFailed = new Counter({
    name: `${p}vms_failed_total`,
    help: 'VM migrations, stops and restarts that failed, by reason.',
    labelNames: ['kind', 'reason'],
    registers,
  });
  const rolloutNodes = new Counter({
    name: `${p}rollout_nodes_finished_total`,
    help: 'Nodes a rollout finished, by outcome (MOVED: done; SKIPPED; FAILED).',
    labelNames: ['outcome'],
    registers,
  });
  const stalled = new Counter({
    name: `${p}steps_stalled_total`,
    help: "Steps that ran past twice their expected duration (the median of their operation's finished steps, else the declared latency, else operations.expectedStepMs), by workload (vm, shard).",
    labelNames: ['kind', 'workload'],
    registers,
  });
  const abandoned = new Counter({
    name: `${p}steps_abandoned_total`,
    help: 'Steps in flight that a forced cancel or disable abandoned (the backend may still finish them), by workload.',
    labelNames: ['kind', 'workload'],
    registers,
  });
  const inFlight = new Gauge({
    name: `${p}moves_in_flight`,
    help: 'Cut-overs running right now.',
    labelNames: ['kind'],
    registers,
    collect() {
      for (const [kind, n] of movesInFlightBy) this.set({ kind }, n);
    },
  });
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

  const guard =
    <A extends unknown[]>(hook: (...args: A) => void) =>
    (...args: A): void => {
      try {
        hook(...args);
      } catch (error) {
        options.onError?.(error);
      }
    };

  const observer: OperationObserver = {
    operationStarted: guard((kind) => started.inc({ kind })),
    operationFinished: guard((kind, outcome) => finished.inc({ kind, outcome })),
    stepFinished: guard((kind, step, state, reason, durationMs) => {
      const why = reason ?? NO_REASON;
      if (step.workloadKind === 'node') rolloutNodes.inc({ outcome: state });
      else if (step.workloadKind === 'vm') {
        if (state === 'SKIPPED') vmsSkipped.inc({ kind, reason: why });
        else if (state === 'FAILED') vmsFailed.inc({ kind, reason: why });
        else vmsHandled.inc({ kind, action: step.action, outcome: state });
      } else if (state === 'MOVED') {
        movedSinceScrape.set(kind, (movedSinceScrape.get(kind) ?? 0) + 1);
        if (durationMs !== null) latency.observe({ kind }, Math.max(0, durationMs) / 1000);
      } else if (state === 'SKIPPED') {
        skipped.inc({ kind, reason: why });
      } else if (state === 'FAILED') {
        failed.inc({ kind, reason: why });
      }
    }),
    movesInFlight: guard((kind, delta) => movesInFlightBy.set(kind, (movesInFlightBy.get(kind) ?? 0) + delta)),
    stepStalled: guard((kind, step) => stalled.inc({ kind, workload: step.workloadKind })),
    stepAbandoned: guard((kind, step) => abandoned.inc({ kind, workload: step.workloadKind })),
    policyChanged: guard((node, current: SchedulingPolicy) => {
      for (const p of SCHEDULING_POLICIES) policy.set({ node, policy: p }, p === current ? 1 : 0);
    }),
  };

  return { registry, observer, watchState: (sources) => registerStateGauges(registry, p, sources), close: () => registry.clear() };
}
