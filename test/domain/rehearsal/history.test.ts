import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../../src/domain/errors.ts';
import { createDurationSampler, historyFromSteps, type HistoryEvent, type HistoryStep } from '../../../src/domain/rehearsal/history.ts';
import type { HistoryRecord, RehearsedAction } from '../../../src/domain/rehearsal/types.ts';

const DEFAULTS: Record<RehearsedAction, number> = {
  VM_MIGRATE: 30_000,
  VM_STOP: 10_000,
  VM_START: 20_000,
  POD_EVICT: 5_000,
  SHARD_CUT_OVER: 2_000,
  NODE_RESTART: 300_000,
};

const rec = (action: RehearsedAction, workloadId: string, nodeId: string | null, durationMs: number): HistoryRecord => ({
  action,
  workloadId,
  nodeId,
  durationMs,
  at: 0,
});

const draws = (n: number, fn: () => number) => Array.from({ length: n }, fn);

const logs = (xs: readonly number[]) => xs.map((x) => Math.log(x));
const mean = (xs: readonly number[]) => xs.reduce((a, x) => a + x, 0) / xs.length;
const sd = (xs: readonly number[]) => Math.sqrt(xs.reduce((a, x) => a + (x - mean(xs)) ** 2, 0) / (xs.length - 1));

describe('createDurationSampler: the predictive log-normal of the history', () => {
  const history = [
    rec('VM_MIGRATE', 'vm-1', 'n1', 100),
    rec('VM_MIGRATE', 'vm-1', 'n1', 200),
    rec('VM_MIGRATE', 'vm-1', 'n2', 300),
    rec('VM_MIGRATE', 'vm-1', 'n2', 400),
  ];

  it('replays the same durations for the same seed and differs for another', () => {
    const a = createDurationSampler(history, DEFAULTS, 7);
    const b = createDurationSampler(history, DEFAULTS, 7);
    const c = createDurationSampler(history, DEFAULTS, 8);
    const seqA = draws(20, () => a.draw('VM_MIGRATE', 'vm-1', 'n1').ms);
    expect(draws(20, () => b.draw('VM_MIGRATE', 'vm-1', 'n1').ms)).toEqual(seqA);
    expect(draws(20, () => c.draw('VM_MIGRATE', 'vm-1', 'n1').ms)).not.toEqual(seqA);
  });

  it('within a sample: log-normal with the spread of the records, around a location near their geometric mean', () => {
    const own = logs([100, 200, 300, 400]);
    let seed = 0;
    const got = logs(draws(4000, () => createDurationSampler(history, DEFAULTS, ++seed).draw('VM_MIGRATE', 'vm-1', 'n1').ms));
    // Over many samples (a sampler each), each with its own location: the spread is σ·√(1 + 1/n).
    expect(mean(got)).toBeGreaterThan(mean(own) - 0.05);
    expect(mean(got)).toBeLessThan(mean(own) + 0.05);
    expect(sd(got)).toBeGreaterThan(sd(own) * Math.sqrt(1.25) * 0.93);
    expect(sd(got)).toBeLessThan(sd(own) * Math.sqrt(1.25) * 1.07);
    // Within one sample the location stays: the spread is σ alone, and draws go beyond the records (a tail).
    const one = createDurationSampler(history, DEFAULTS, 2);
    const inOne = draws(4000, () => one.draw('VM_MIGRATE', 'vm-1', 'n1').ms);
    expect(sd(logs(inOne))).toBeGreaterThan(sd(own) * 0.93);
    expect(sd(logs(inOne))).toBeLessThan(sd(own) * 1.07);
    expect(Math.max(...inOne)).toBeGreaterThan(400);
  });

  it("the samples' locations spread as the mean of n records is uncertain: σ/√n", () => {
    let seed = 0;
    const locations = logs(
      draws(3000, (): number => {
        const s = createDurationSampler(history, DEFAULTS, ++seed);
        return Math.exp(mean(logs(draws(200, () => s.draw('VM_MIGRATE', 'vm-1', 'n1').ms))));
      }),
    );
    const expected = sd(logs([100, 200, 300, 400])) / Math.sqrt(4);
    expect(sd(locations)).toBeGreaterThan(expected * 0.9);
    expect(sd(locations)).toBeLessThan(expected * 1.1);
  });

  it("a workload's spread is the action's, pooled over every workload with two records or more", () => {
    // vm-a's three runs agree exactly; vm-b's spread ×2 both ways: vm-a's draws spread like vm-b's.
    const pooled = [
      rec('VM_MIGRATE', 'vm-a', 'n1', 1000),
      rec('VM_MIGRATE', 'vm-a', 'n1', 1000),
      rec('VM_MIGRATE', 'vm-a', 'n1', 1000),
      rec('VM_MIGRATE', 'vm-b', 'n2', 500),
      rec('VM_MIGRATE', 'vm-b', 'n2', 1000),
      rec('VM_MIGRATE', 'vm-b', 'n2', 2000),
    ];
    const s = createDurationSampler(pooled, DEFAULTS, 3);
    const got = logs(draws(4000, () => s.draw('VM_MIGRATE', 'vm-a', 'n1').ms));
    // Σ (x − mean)² / Σ (n − 1) = 2·ln(2)² / 4.
    const sigma = Math.sqrt((2 * Math.log(2) ** 2) / 4);
    expect(sd(got)).toBeGreaterThan(sigma * 0.93);
    expect(sd(got)).toBeLessThan(sigma * 1.07);
  });

  it('a record that stands alone, with no spread anywhere to borrow, is drawn as it is', () => {
    const s = createDurationSampler([rec('VM_STOP', 'vm-1', 'n1', 1234), rec('VM_STOP', 'vm-1', 'n1', 1234), rec('VM_STOP', 'vm-1', 'n1', 1234)], DEFAULTS, 3);
    expect(new Set(draws(50, () => s.draw('VM_STOP', 'vm-1', 'n1').ms))).toEqual(new Set([1234]));
  });
});

describe('createDurationSampler: WORKLOAD → NODE → CLUSTER → DEFAULT', () => {
  const history = [
    // vm-1 has three migrations of its own.
    rec('VM_MIGRATE', 'vm-1', 'n1', 11),
    rec('VM_MIGRATE', 'vm-1', 'n1', 12),
    rec('VM_MIGRATE', 'vm-1', 'n1', 13),
    // Three more on n2, by other VMs, ten times slower.
    rec('VM_MIGRATE', 'vm-2', 'n2', 210),
    rec('VM_MIGRATE', 'vm-3', 'n2', 220),
    rec('VM_MIGRATE', 'vm-4', 'n2', 230),
    rec('VM_STOP', 'vm-9', 'n9', 99),
  ];
  const medianOf = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

  it('answers from the workload first', () => {
    const s = createDurationSampler(history, DEFAULTS, 3);
    const got = draws(200, () => s.draw('VM_MIGRATE', 'vm-1', 'n2').ms);
    expect(medianOf(got)).toBeGreaterThan(9);
    expect(medianOf(got)).toBeLessThan(15);
    expect(s.sources()).toEqual({ WORKLOAD: 200, NODE: 0, CLUSTER: 0, DEFAULT: 0 });
  });

  it('then from the same action on the node', () => {
    const s = createDurationSampler(history, DEFAULTS, 3);
    const got = draws(200, () => s.draw('VM_MIGRATE', 'vm-new', 'n2').ms);
    expect(medianOf(got)).toBeGreaterThan(190);
    expect(medianOf(got)).toBeLessThan(250);
    expect(s.sources()).toEqual({ WORKLOAD: 0, NODE: 200, CLUSTER: 0, DEFAULT: 0 });
  });

  it('then from the same action anywhere in the cluster (also when the node is unknown), spread as wide as the workloads differ', () => {
    const s = createDurationSampler(history, DEFAULTS, 3);
    const got = [...draws(200, () => s.draw('VM_MIGRATE', 'vm-new', 'n-new').ms), ...draws(200, () => s.draw('VM_MIGRATE', 'vm-new', null).ms)];
    expect(got.some((ms) => ms < 40)).toBe(true);
    expect(got.some((ms) => ms > 100)).toBe(true);
    expect(s.sources()).toEqual({ WORKLOAD: 0, NODE: 0, CLUSTER: 400, DEFAULT: 0 });
  });

  it('then the default, which has no spread; other actions do not count', () => {
    const s = createDurationSampler(history, DEFAULTS, 3);
    expect(draws(5, () => s.draw('VM_START', 'vm-1', 'n1').ms)).toEqual([20_000, 20_000, 20_000, 20_000, 20_000]);
    expect(s.draw('NODE_RESTART', 'n1', 'n1')).toEqual({ ms: 300_000, source: 'DEFAULT' });
    expect(s.sources()).toEqual({ WORKLOAD: 0, NODE: 0, CLUSTER: 0, DEFAULT: 6 });
  });

  it('ignores records that cannot be durations', () => {
    const s = createDurationSampler([rec('VM_STOP', 'vm-1', 'n1', -5), rec('VM_STOP', 'vm-1', 'n1', Number.NaN)], DEFAULTS, 3);
    expect(s.draw('VM_STOP', 'vm-1', 'n1')).toEqual({ ms: 10_000, source: 'DEFAULT' });
  });

  it('refuses a default that is no duration, and an action with neither history nor default', () => {
    expect(() => createDurationSampler([], { ...DEFAULTS, VM_STOP: -1 }, 1)).toThrow(InvalidInputError);
    expect(() => createDurationSampler([], { ...DEFAULTS, VM_STOP: -1 }, 1)).toThrow('the default duration of VM_STOP must be a finite number of ms ≥ 0');
    const partial = { VM_MIGRATE: 1 } as Record<RehearsedAction, number>;
    expect(() => createDurationSampler([], partial, 1).draw('VM_STOP', 'vm-1', null)).toThrow('no history and no default duration for VM_STOP');
  });
});

describe('createDurationSampler: a level with fewer than three records shares its draws', () => {
  // Nine cluster records on other nodes, so the workload's and the cluster's draws can be told apart.
  const cluster = Array.from({ length: 9 }, (_, i) => rec('SHARD_CUT_OVER', `s-${i}`, `p${i}`, 1000 + i));

  it('one record answers about a third of the draws, the cluster the rest', () => {
    const s = createDurationSampler([...cluster, rec('SHARD_CUT_OVER', 'lucky', 'px', 5)], DEFAULTS, 11);
    const got = draws(3000, () => s.draw('SHARD_CUT_OVER', 'lucky', 'pz').ms);
    const { WORKLOAD, NODE, CLUSTER, DEFAULT } = s.sources();
    expect(WORKLOAD).toBeGreaterThan(900);
    expect(WORKLOAD).toBeLessThan(1100);
    expect(NODE + DEFAULT).toBe(0);
    expect(CLUSTER).toBe(3000 - WORKLOAD);
    // The workload's one record, with no workload spread to borrow, is drawn as it is.
    expect(got.filter((ms) => ms === 5).length).toBeGreaterThanOrEqual(WORKLOAD);
  });

  it('two records answer about two thirds', () => {
    const s = createDurationSampler([...cluster, rec('SHARD_CUT_OVER', 'w', 'px', 5), rec('SHARD_CUT_OVER', 'w', 'px', 6)], DEFAULTS, 11);
    const own = s.sources;
    draws(3000, () => s.draw('SHARD_CUT_OVER', 'w', 'pz').ms);
    expect(own().WORKLOAD).toBeGreaterThan(1900);
    expect(own().WORKLOAD).toBeLessThan(2100);
  });

  it('a cluster of one record shares with the default', () => {
    const s = createDurationSampler([rec('POD_EVICT', 'p', 'n1', 7)], DEFAULTS, 5);
    const got = draws(3000, () => s.draw('POD_EVICT', 'other', 'n2').ms);
    expect(new Set(got)).toEqual(new Set([7, 5_000]));
    expect(s.sources().DEFAULT).toBeGreaterThan(1900);
    expect(s.sources().DEFAULT).toBeLessThan(2100);
  });
});

const step = (over: Partial<HistoryStep>): HistoryStep => ({
  workloadKind: 'vm',
  workloadId: 'vm-1',
  action: 'MIGRATE',
  state: 'MOVED',
  fromNodeId: 'n1',
  startedAt: 1_000,
  finishedAt: 4_000,
  ...over,
});

describe('historyFromSteps: finished steps', () => {
  it('turns finished migrations, stops, launcher evictions and cut-overs into records', () => {
    expect(
      historyFromSteps([
        step({}),
        step({ workloadId: 'vm-2', action: 'STOP', state: 'STOPPED', startedAt: 10, finishedAt: 60 }),
        step({ workloadId: 'vm-3', action: 'EVICT', state: 'MOVED', startedAt: 0, finishedAt: 7 }),
        step({ workloadKind: 'shard', workloadId: 't1-0001', action: 'CUT_OVER', fromNodeId: 'ps-1', startedAt: 100, finishedAt: 350 }),
      ]),
    ).toEqual([
      { action: 'VM_MIGRATE', workloadId: 'vm-1', nodeId: 'n1', durationMs: 3_000, at: 4_000 },
      { action: 'VM_STOP', workloadId: 'vm-2', nodeId: 'n1', durationMs: 50, at: 60 },
      { action: 'POD_EVICT', workloadId: 'vm-3', nodeId: 'n1', durationMs: 7, at: 7 },
      { action: 'SHARD_CUT_OVER', workloadId: 't1-0001', nodeId: 'ps-1', durationMs: 250, at: 350 },
    ]);
  });

  it('skips failed, skipped, abandoned and unfinished steps, and actions that are not one action', () => {
    expect(
      historyFromSteps([
        step({ state: 'FAILED' }),
        step({ state: 'SKIPPED' }),
        step({ state: 'ABANDONED' }),
        step({ state: 'MOVING', finishedAt: null }),
        step({ state: 'MOVED', startedAt: null }),
        step({ finishedAt: 500 }),
        // A MIGRATE that ended STOPPED did not migrate.
        step({ state: 'STOPPED' }),
        step({ action: 'STOP_AND_RESTART' }),
        step({ action: 'WAIT_EXTERNAL' }),
        step({ workloadKind: 'node', action: 'MAINTENANCE' }),
        // A shard's MIGRATE (a manual move) is not a VM migration.
        step({ workloadKind: 'shard', action: 'MIGRATE' }),
      ]),
    ).toEqual([]);
  });
});

const ev = (type: string, at: number, nodeId = 'n1', payload?: unknown): HistoryEvent => ({
  type,
  nodeId,
  operationId: 'r1',
  at,
  ...(payload !== undefined && { payload }),
});
const state = (availability: string, at: number, nodeId = 'n1', cordoned = false) => ev('NODE_STATE_CHANGED', at, nodeId, { availability, cordoned });

describe('historyFromSteps: node restarts from the rollout events', () => {
  it('from the hand-over to back ACTIVE after the re-attach', () => {
    const events = [
      ev('ROLLOUT_NODE_STARTED', 0),
      state('ACTIVE', 10, 'n1', true),
      ev('ROLLOUT_NODE_AWAITING_RESTART', 1_000),
      state('OFFLINE', 1_500),
      ev('ROLLOUT_NODE_RESTARTED', 40_000),
      state('WARMING_UP', 41_000),
      state('ACTIVE', 61_000, 'n1', true),
      // The uncordon later logs ACTIVE again: not the return.
      state('ACTIVE', 70_000),
      ev('ROLLOUT_NODE_FINISHED', 90_000),
    ];
    expect(historyFromSteps([], events)).toEqual([{ action: 'NODE_RESTART', workloadId: 'n1', nodeId: 'n1', durationMs: 60_000, at: 61_000 }]);
  });

  it('at the re-attach when the node was seen back before it (or never seen down); events in any order', () => {
    const events = [
      ev('ROLLOUT_NODE_RESTARTED', 9_000, 'n2'),
      state('ACTIVE', 8_000, 'n2'),
      state('OFFLINE', 5_000, 'n2'),
      ev('ROLLOUT_NODE_AWAITING_CONFIRM', 2_000, 'n2'),
      ev('ROLLOUT_NODE_AWAITING_RESTART', 1_000, 'n3'),
      ev('ROLLOUT_NODE_RESTARTED', 4_000, 'n3'),
    ];
    expect(historyFromSteps([], events)).toEqual([
      { action: 'NODE_RESTART', workloadId: 'n3', nodeId: 'n3', durationMs: 3_000, at: 4_000 },
      { action: 'NODE_RESTART', workloadId: 'n2', nodeId: 'n2', durationMs: 7_000, at: 9_000 },
    ]);
  });

  it('nothing for a hand-over that never came back, failed, or was handed over again', () => {
    const events = [
      ev('ROLLOUT_NODE_AWAITING_RESTART', 1_000, 'n1'),
      ev('ROLLOUT_NODE_FAILED', 5_000, 'n1'),
      ev('ROLLOUT_NODE_RESTARTED', 6_000, 'n1'),
      ev('ROLLOUT_NODE_AWAITING_RESTART', 1_000, 'n2'),
      state('OFFLINE', 2_000, 'n2'),
      ev('ROLLOUT_NODE_RESTARTED', 3_000, 'n2'),
      ev('ROLLOUT_NODE_AWAITING_RESTART', 1_000, 'n3'),
      ev('ROLLOUT_NODE_AWAITING_RESTART', 5_000, 'n3'),
      state('OFFLINE', 6_000, 'n3'),
      ev('ROLLOUT_NODE_RESTARTED', 7_000, 'n3'),
      state('ACTIVE', 8_000, 'n3'),
    ];
    expect(historyFromSteps([], events)).toEqual([{ action: 'NODE_RESTART', workloadId: 'n3', nodeId: 'n3', durationMs: 3_000, at: 8_000 }]);
  });
});
