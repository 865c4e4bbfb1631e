import { describe, expect, it } from 'vitest';
import { createOperationMetrics, MOVE_LATENCY_BUCKETS } from '../../src/operations/core/metrics.ts';

const SHARD = { workloadKind: 'shard', action: 'CUT_OVER' } as const;

/** The value of one sample line, e.g. `lockkeeper_shards_moved_total{kind="DRAIN"}`; undefined when absent. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('operation metrics (storage:P2)', () => {
  it('counts operations started and finished by kind and outcome, from zero', async () => {
    const { registry, observer } = createOperationMetrics({ defaultMetrics: false });
    let text = await registry.metrics();
    expect(sample(text, 'lockkeeper_operations_started_total{kind="DRAIN"}')).toBe(0);
    expect(sample(text, 'lockkeeper_operations_finished_total{kind="FILL",outcome="CANCELLED"}')).toBe(0);

    observer.operationStarted('DRAIN');
    observer.operationStarted('DRAIN');
    observer.operationStarted('FILL');
    observer.operationFinished('DRAIN', 'SUCCEEDED');
    observer.operationFinished('DRAIN', 'CANCELLED');
    observer.operationFinished('FILL', 'FAILED');
    text = await registry.metrics();
    expect(text).toContain('# TYPE lockkeeper_operations_started_total counter');
    expect(sample(text, 'lockkeeper_operations_started_total{kind="DRAIN"}')).toBe(2);
    expect(sample(text, 'lockkeeper_operations_started_total{kind="FILL"}')).toBe(1);
    expect(sample(text, 'lockkeeper_operations_finished_total{kind="DRAIN",outcome="SUCCEEDED"}')).toBe(1);
    expect(sample(text, 'lockkeeper_operations_finished_total{kind="DRAIN",outcome="CANCELLED"}')).toBe(1);
    expect(sample(text, 'lockkeeper_operations_finished_total{kind="DRAIN",outcome="FAILED"}')).toBe(0);
    expect(sample(text, 'lockkeeper_operations_finished_total{kind="FILL",outcome="FAILED"}')).toBe(1);
  });

  it('counts shards moved, skipped and failed by reason, and observes move latency in seconds', async () => {
    const { registry, observer } = createOperationMetrics({ defaultMetrics: false });
    observer.stepFinished('DRAIN', SHARD, 'MOVED', null, 30);
    observer.stepFinished('DRAIN', SHARD, 'MOVED', null, 4000);
    observer.stepFinished('DRAIN', SHARD, 'MOVED', null, null); // a resumed step found already moved: no latency
    observer.stepFinished('FILL', SHARD, 'MOVED', null, 700_000);
    observer.stepFinished('DRAIN', SHARD, 'SKIPPED', 'SECONDARY_LAGGING', null);
    observer.stepFinished('DRAIN', SHARD, 'SKIPPED', 'SECONDARY_LAGGING', null);
    observer.stepFinished('DRAIN', SHARD, 'SKIPPED', 'NO_SECONDARY', null);
    observer.stepFinished('FILL', SHARD, 'FAILED', 'TRANSIENT', null);
    observer.stepFinished('FILL', SHARD, 'FAILED', null, null);
    const text = await registry.metrics();

    expect(sample(text, 'lockkeeper_shards_moved_total{kind="DRAIN"}')).toBe(3);
    expect(sample(text, 'lockkeeper_shards_moved_total{kind="FILL"}')).toBe(1);
    expect(sample(text, 'lockkeeper_shards_skipped_total{kind="DRAIN",reason="SECONDARY_LAGGING"}')).toBe(2);
    expect(sample(text, 'lockkeeper_shards_skipped_total{kind="DRAIN",reason="NO_SECONDARY"}')).toBe(1);
    expect(sample(text, 'lockkeeper_shards_failed_total{kind="FILL",reason="TRANSIENT"}')).toBe(1);
    expect(sample(text, 'lockkeeper_shards_failed_total{kind="FILL",reason="UNKNOWN"}')).toBe(1);

    expect(text).toContain('# TYPE lockkeeper_move_duration_seconds histogram');
    expect(sample(text, 'lockkeeper_move_duration_seconds_count{kind="DRAIN"}')).toBe(2);
    expect(sample(text, 'lockkeeper_move_duration_seconds_sum{kind="DRAIN"}')).toBeCloseTo(4.03);
    expect(sample(text, 'lockkeeper_move_duration_seconds_bucket{le="0.02",kind="DRAIN"}')).toBe(0);
    expect(sample(text, 'lockkeeper_move_duration_seconds_bucket{le="0.05",kind="DRAIN"}')).toBe(1);
    expect(sample(text, 'lockkeeper_move_duration_seconds_bucket{le="5",kind="DRAIN"}')).toBe(2);
    // 700 s is beyond the last bucket (10 min): only +Inf holds it.
    expect(sample(text, 'lockkeeper_move_duration_seconds_bucket{le="600",kind="FILL"}')).toBe(0);
    expect(sample(text, 'lockkeeper_move_duration_seconds_bucket{le="+Inf",kind="FILL"}')).toBe(1);
  });

  it('counts VMs apart from shards, by action and outcome, and rollout nodes apart from both', async () => {
    const { registry, observer } = createOperationMetrics({ defaultMetrics: false });
    observer.stepFinished('MAINTENANCE', { workloadKind: 'vm', action: 'MIGRATE' }, 'MOVED', null, 800);
    observer.stepFinished('MAINTENANCE', { workloadKind: 'vm', action: 'STOP' }, 'STOPPED', 'AFTER_DISABLE', 400);
    observer.stepFinished('MAINTENANCE', { workloadKind: 'vm', action: 'STOP_AND_RESTART' }, 'MOVED', 'AFTER_ENABLE', 900);
    observer.stepFinished('MAINTENANCE', { workloadKind: 'vm', action: 'MIGRATE' }, 'SKIPPED', 'VM_GONE', null);
    observer.stepFinished('MAINTENANCE', { workloadKind: 'vm', action: 'MIGRATE' }, 'FAILED', 'REJECTED', null);
    observer.stepFinished('MAINTENANCE', SHARD, 'MOVED', null, 30);
    observer.stepFinished('MAINTENANCE', SHARD, 'SKIPPED', 'SECONDARY_LAGGING', null);
    observer.stepFinished('ROLLOUT', { workloadKind: 'node', action: 'MAINTENANCE' }, 'MOVED', null, 60_000);
    const text = await registry.metrics();
    expect(sample(text, 'lockkeeper_vms_handled_total{kind="MAINTENANCE",action="MIGRATE",outcome="MOVED"}')).toBe(1);
    expect(sample(text, 'lockkeeper_vms_handled_total{kind="MAINTENANCE",action="STOP",outcome="STOPPED"}')).toBe(1);
    expect(sample(text, 'lockkeeper_vms_handled_total{kind="MAINTENANCE",action="STOP_AND_RESTART",outcome="MOVED"}')).toBe(1);
    expect(sample(text, 'lockkeeper_vms_skipped_total{kind="MAINTENANCE",reason="VM_GONE"}')).toBe(1);
    expect(sample(text, 'lockkeeper_vms_failed_total{kind="MAINTENANCE",reason="REJECTED"}')).toBe(1);
    // Only the one shard counts as a shard; VMs and rollout nodes never do.
    expect(sample(text, 'lockkeeper_shards_moved_total{kind="MAINTENANCE"}')).toBe(1);
    expect(sample(text, 'lockkeeper_shards_moved_total{kind="ROLLOUT"}')).toBe(0);
    expect(sample(text, 'lockkeeper_shards_skipped_total{kind="MAINTENANCE",reason="SECONDARY_LAGGING"}')).toBe(1);
    expect(sample(text, 'lockkeeper_move_duration_seconds_count{kind="MAINTENANCE"}')).toBe(1);
    expect(sample(text, 'lockkeeper_rollout_nodes_finished_total{outcome="MOVED"}')).toBe(1);
  });

  it('has latency buckets from 20 ms to 10 min', () => {
    expect(MOVE_LATENCY_BUCKETS[0]).toBe(0.02);
    expect(MOVE_LATENCY_BUCKETS.at(-1)).toBe(600);
    expect([...MOVE_LATENCY_BUCKETS].sort((a, b) => a - b)).toEqual(MOVE_LATENCY_BUCKETS);
  });

  it('tracks moves in flight as a gauge that goes up and down', async () => {
    const { registry, observer } = createOperationMetrics({ defaultMetrics: false });
    observer.movesInFlight('DRAIN', 1);
    observer.movesInFlight('DRAIN', 1);
    observer.movesInFlight('DRAIN', 1);
    observer.movesInFlight('DRAIN', -1);
    let text = await registry.metrics();
    expect(text).toContain('# TYPE lockkeeper_moves_in_flight gauge');
    expect(sample(text, 'lockkeeper_moves_in_flight{kind="DRAIN"}')).toBe(2);
    expect(sample(text, 'lockkeeper_moves_in_flight{kind="FILL"}')).toBe(0);
    observer.movesInFlight('DRAIN', -2);
    text = await registry.metrics();
    expect(sample(text, 'lockkeeper_moves_in_flight{kind="DRAIN"}')).toBe(0);
  });

  it('shows each node under exactly one policy, so that sum by (policy) counts nodes', async () => {
    const { registry, observer } = createOperationMetrics({ defaultMetrics: false });
    observer.policyChanged('1', 'ACTIVE');
    observer.policyChanged('2', 'ACTIVE');
    observer.policyChanged('1', 'DRAINING');
    observer.policyChanged('1', 'PAUSE_FOR_RESTART');
    const text = await registry.metrics();
    const series = (node: string, policy: string) => sample(text, `lockkeeper_node_scheduling_policy{node="${node}",policy="${policy}"}`);

    expect(series('1', 'PAUSE_FOR_RESTART')).toBe(1);
    expect(series('1', 'DRAINING')).toBe(0);
    expect(series('1', 'ACTIVE')).toBe(0);
    expect(series('2', 'ACTIVE')).toBe(1);
    for (const policy of ['ACTIVE', 'PAUSE', 'PAUSE_FOR_RESTART', 'DRAINING', 'FILLING', 'DELETING']) {
      expect(series('1', policy)).toBeDefined();
      expect(series('2', policy)).toBeDefined();
    }
    const lines = text.split('\n').filter((l) => l.startsWith('lockkeeper_node_scheduling_policy{'));
    expect(lines).toHaveLength(12);
    expect(lines.reduce((sum, l) => sum + Number(l.split(' ')[1]), 0)).toBe(2);
  });

  it('gives every app its own registry, with prefixed default metrics', async () => {
    const a = createOperationMetrics();
    const b = createOperationMetrics();
    a.observer.operationStarted('FILL');
    expect(sample(await a.registry.metrics(), 'lockkeeper_operations_started_total{kind="FILL"}')).toBe(1);
    const text = await b.registry.metrics();
    expect(sample(text, 'lockkeeper_operations_started_total{kind="FILL"}')).toBe(0);
    expect(text).toContain('lockkeeper_process_cpu_user_seconds_total');
    expect(text).toMatch(/^lockkeeper_nodejs_heap_size_used_bytes /m);
    expect(text).not.toMatch(/^process_cpu/m);
  });

  it('never throws into the engine: a failing hook is reported to onError', async () => {
    const errors: unknown[] = [];
    const { registry, observer } = createOperationMetrics({ defaultMetrics: false, onError: (e) => errors.push(e) });
    // prom-client refuses to observe NaN; the hook must swallow that, not crash the run.
    expect(() => observer.stepFinished('DRAIN', SHARD, 'MOVED', null, Number.NaN)).not.toThrow();
    expect(errors).toHaveLength(1);
    expect(sample(await registry.metrics(), 'lockkeeper_shards_moved_total{kind="DRAIN"}')).toBe(1);
    // Without onError, still silent.
    const quiet = createOperationMetrics({ defaultMetrics: false });
    expect(() => quiet.observer.stepFinished('FILL', SHARD, 'MOVED', null, Number.NaN)).not.toThrow();
  });
});
