import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../../src/domain/errors.ts';
import { createPrng } from '../../../src/domain/prng.ts';
import { aggregateSamples, quantile, quantiles } from '../../../src/domain/rehearsal/report.ts';
import type { RehearsalSample, SampleNode, SamplePause } from '../../../src/domain/rehearsal/types.ts';

describe('quantiles: a prediction from samples (Weibull plotting position)', () => {
  it('interpolates at (n + 1)·q, held within the samples, in any input order', () => {
    expect(quantiles([1000, 100, 400, 300, 200])).toEqual({ p10: 100, p50: 300, p90: 1000 });
    expect(quantiles([40, 10, 30, 20])).toEqual({ p10: 10, p50: 25, p90: 40 });
    // 20 samples: p10 at h = 2.1, p90 at h = 18.9 (counted from 1).
    const twenty = Array.from({ length: 20 }, (_, i) => (i + 1) * 100);
    expect(quantiles(twenty)).toEqual({ p10: 210, p50: 1050, p90: 1890 });
    expect(quantiles([7])).toEqual({ p10: 7, p50: 7, p90: 7 });
  });

  it('the p10–p90 of 20 samples holds the next draw of the same distribution 80 % of the time', () => {
    const random = createPrng(42);
    const trials = 4000;
    let inside = 0;
    for (let t = 0; t < trials; t++) {
      const q = quantiles(Array.from({ length: 20 }, () => random() * 1e6));
      const next = random() * 1e6;
      if (next >= q.p10 && next <= q.p90) inside++;
    }
    // Expected 0.8 (type 7 would give 0.72); ±0.02 is over three standard errors at 4000 trials.
    expect(inside / trials).toBeGreaterThan(0.78);
    expect(inside / trials).toBeLessThan(0.82);
  });

  it('rounds to whole ms and refuses no values', () => {
    expect(quantile([0, 1], 0.1)).toBe(0);
    expect(quantile([0, 1], 0.5)).toBe(1);
    expect(quantile([0, 3], 0.5)).toBe(2);
    expect(() => quantile([], 0.5)).toThrow(InvalidInputError);
  });
});

const node = (
  nodeId: string,
  wave: number,
  startedAtMs: number | null,
  finishedAtMs: number | null,
  leftOnNode: string[] = [],
  safeToRestart: boolean | null = true,
): SampleNode => ({
  nodeId,
  wave,
  startedAtMs,
  finishedAtMs,
  leftOnNode,
  safeToRestart,
});

const pause = (key: string, atMs: number, message = key): SamplePause => {
  const [reason, nodeId, workload] = key.split(':');
  return { key, reason: reason!, nodeId: nodeId || null, workload: workload || null, message, atMs };
};

const sample = (over: Partial<RehearsalSample> & Pick<RehearsalSample, 'seed' | 'durationMs' | 'nodes'>): RehearsalSample => ({
  outcome: 'GAVE_UP',
  pauses: [],
  vmsLeftStopped: [],
  peakNodesOut: 1,
  durationSources: { WORKLOAD: 0, NODE: 0, CLUSTER: 1, DEFAULT: 0 },
  ...over,
});

const WAVES = [['a', 'b'], ['c'], ['d']];

const SAMPLES: RehearsalSample[] = [
  sample({
    seed: 1,
    durationMs: 100,
    nodes: [node('a', 1, 0, 40), node('b', 1, 0, 50, ['pod-1'], false), node('c', 2, 50, null, [], null), node('d', 3, null, null), node('x', 9, 5, 6)],
    pauses: [pause('PDB:b:db/pdb', 30, 'pdb holds db-0'), pause('UNSAFE_TO_RESTART:c:vm-9', 90)],
    vmsLeftStopped: ['vm-9'],
    peakNodesOut: 2,
    durationSources: { WORKLOAD: 1, NODE: 2, CLUSTER: 3, DEFAULT: 4 },
  }),
  sample({
    seed: 2,
    durationMs: 200,
    nodes: [node('a', 1, 0, 60), node('b', 1, 10, 80), node('c', 2, 80, 190, [], null), node('d', 3, null, null)],
    pauses: [pause('PDB:b:db/pdb', 50, 'pdb holds db-1'), pause('PDB:b:db/pdb', 70, 'again')],
    peakNodesOut: 2,
  }),
  sample({
    seed: 3,
    durationMs: 300,
    outcome: 'FAILED',
    nodes: [node('a', 1, 0, 100, ['vm-2', 'vm-1'], false), node('b', 1, 0, null), node('c', 2, null, null, [], false), node('d', 3, null, null)],
    pauses: [pause('BUDGET::', 5)],
    vmsLeftStopped: ['vm-10', 'vm-9'],
    peakNodesOut: 3,
  }),
  sample({
    seed: 4,
    durationMs: 400,
    nodes: [node('a', 1, 20, 120, ['vm-1', 'vm-2'], false), node('b', 1, 20, 140), node('c', 2, 140, 400, [], true), node('d', 3, null, null)],
    pauses: [pause('PDB:b:db/pdb', 20), pause('UNSAFE_TO_RESTART:c:vm-9', 150)],
    vmsLeftStopped: ['vm-9', 'vm-9'],
  }),
];

describe('aggregateSamples', () => {
  const report = aggregateSamples(SAMPLES, WAVES);

  it('total duration over every sample, outcomes, peak and sources', () => {
    expect(report.samples).toBe(4);
    expect(report.durationMs).toEqual({ p10: 100, p50: 250, p90: 400 });
    expect(report.outcomes).toEqual({ SUCCEEDED: 0, FAILED: 1, CANCELLED: 0, GAVE_UP: 3 });
    expect(report.peakNodesOut).toBe(3);
    expect(report.durationSources).toEqual({ WORKLOAD: 1, NODE: 2, CLUSTER: 6, DEFAULT: 4 });
  });

  it('waves: first node in to last node back, still out at the end counts to the end; unreached waves named', () => {
    expect(report.waves).toEqual([
      { wave: 1, nodeIds: ['a', 'b'], startMs: { p10: 0, p50: 0, p90: 20 }, durationMs: { p10: 50, p50: 100, p90: 300 } },
      { wave: 2, nodeIds: ['c'], startMs: { p10: 50, p50: 80, p90: 140 }, durationMs: { p10: 50, p50: 110, p90: 260 } },
    ]);
    expect(report.wavesNotReached).toEqual([3]);
  });

  it('nodes in plan order (then the ones outside it), with what most samples leave', () => {
    expect(report.nodes).toEqual([
      {
        nodeId: 'a',
        wave: 1,
        startMs: { p10: 0, p50: 0, p90: 20 },
        durationMs: { p10: 40, p50: 80, p90: 100 },
        // Two samples leave nothing, two leave both VMs: the tie goes to the reading that leaves more.
        leftOnNode: ['vm-1', 'vm-2'],
        safeToRestart: false,
        leftOnNodeProbabilities: [
          { workload: 'vm-1', probability: 0.5 },
          { workload: 'vm-2', probability: 0.5 },
        ],
      },
      {
        nodeId: 'b',
        wave: 1,
        startMs: { p10: 0, p50: 5, p90: 20 },
        durationMs: { p10: 50, p50: 95, p90: 300 },
        leftOnNode: [],
        safeToRestart: true,
        leftOnNodeProbabilities: [{ workload: 'pod-1', probability: 0.25 }],
      },
      {
        nodeId: 'c',
        wave: 2,
        startMs: { p10: 50, p50: 80, p90: 140 },
        durationMs: { p10: 50, p50: 110, p90: 260 },
        leftOnNode: [],
        safeToRestart: null,
        leftOnNodeProbabilities: [],
      },
      { nodeId: 'd', wave: 3, startMs: null, durationMs: null, leftOnNode: [], safeToRestart: true, leftOnNodeProbabilities: [] },
      {
        nodeId: 'x',
        wave: 9,
        startMs: { p10: 5, p50: 5, p90: 5 },
        durationMs: { p10: 1, p50: 1, p90: 1 },
        leftOnNode: [],
        safeToRestart: true,
        leftOnNodeProbabilities: [],
      },
    ]);
  });

  it('pauses grouped by key, probability = fraction of samples, typical time = median first hit, first one first', () => {
    expect(report.pauses).toEqual([
      { key: 'BUDGET::', reason: 'BUDGET', nodeId: null, workload: null, message: 'BUDGET::', probability: 0.25, typicalAtMs: 5 },
      { key: 'PDB:b:db/pdb', reason: 'PDB', nodeId: 'b', workload: 'db/pdb', message: 'pdb holds db-0', probability: 0.75, typicalAtMs: 30 },
      {
        key: 'UNSAFE_TO_RESTART:c:vm-9',
        reason: 'UNSAFE_TO_RESTART',
        nodeId: 'c',
        workload: 'vm-9',
        message: 'UNSAFE_TO_RESTART:c:vm-9',
        probability: 0.5,
        typicalAtMs: 120,
      },
    ]);
  });

  it('VMs left stopped, each counted once per sample, most likely first', () => {
    expect(report.vmsLeftStopped).toEqual([
      { vmId: 'vm-9', probability: 0.75 },
      { vmId: 'vm-10', probability: 0.25 },
    ]);
  });

  it('a tie between safe and not safe reads not safe', () => {
    const tie = aggregateSamples(
      [sample({ seed: 1, durationMs: 1, nodes: [node('a', 1, 0, 1, [], true)] }), sample({ seed: 2, durationMs: 1, nodes: [node('a', 1, 0, 1, [], false)] })],
      [['a']],
    );
    expect(tie.nodes[0]!.safeToRestart).toBe(false);
  });

  it('a tie between leaving less and leaving more reads more', () => {
    const tie = aggregateSamples(
      [
        sample({ seed: 1, durationMs: 1, nodes: [node('a', 1, 0, 1, [], true)] }),
        sample({ seed: 2, durationMs: 1, nodes: [node('a', 1, 0, 1, ['pod-1'], true)] }),
      ],
      [['a']],
    );
    expect(tie.nodes[0]!.leftOnNode).toEqual(['pod-1']);
  });

  it('a pause hit again earlier in its sample counts from its first hit', () => {
    const r = aggregateSamples([sample({ seed: 1, durationMs: 100, nodes: [], pauses: [pause('PDB:a:p', 70, 'late'), pause('PDB:a:p', 10, 'early')] })], []);
    expect(r.pauses.map((p) => [p.probability, p.typicalAtMs, p.message])).toEqual([[1, 10, 'early']]);
  });

  it('refuses no samples', () => {
    expect(() => aggregateSamples([], WAVES)).toThrow('a rehearsal report needs at least one sample');
  });
});
