/**
 * A rehearsal's report (issue 33): N seeded samples of a rollout folded into what an operator
 * plans with — quantiles of time, the pauses with how often they happened, what is left. Pure.
 */
import { compareNatural, compareNodeIds } from '../compare.ts';
import { InvalidInputError } from '../errors.ts';
import type { DurationSource, Quantiles, RehearsalReport, RehearsalSample, ReportPause, SampleNode, SamplePause } from './types.ts';

/**
 * The q-quantile of `values` as a prediction from samples (Hyndman & Fan type 6, the Weibull
 * plotting position): h = (n + 1)·q, counted from 1 and held within 1…n, then linear
 * interpolation between the order statistics x[⌊h⌋] and x[⌊h⌋+1]. Of the next run, drawn like
 * the samples, a fraction q is expected below it: so the p10–p90 of 20 samples is an 80 %
 * interval for the real run. (Type 7, R's and NumPy's default, gives ~72 % with 20 samples.)
 * It never leaves the range of what was drawn; rounded to whole ms. Throws on an empty list.
 */
export function quantile(values: readonly number[], q: number): number {
  if (!values.length) throw new InvalidInputError('values', '[]', 'a quantile of no values');
  const sorted = [...values].sort((a, b) => a - b);
  const h = Math.min(Math.max((sorted.length + 1) * q, 1), sorted.length) - 1;
  const lo = Math.floor(h);
  const hi = Math.min(lo + 1, sorted.length - 1);
  return Math.round(sorted[lo]! + (h - lo) * (sorted[hi]! - sorted[lo]!));
}

export const quantiles = (values: readonly number[]): Quantiles => ({ p10: quantile(values, 0.1), p50: quantile(values, 0.5), p90: quantile(values, 0.9) });

const quantilesOrNull = (values: readonly number[]): Quantiles | null => (values.length ? quantiles(values) : null);

/** A node's or wave's span in one sample: still out when the sample ended counts to its end. */
function span(started: number | null, finished: number | null, sampleEnd: number): { start: number; duration: number } | null {
  if (started === null) return null;
  return { start: started, duration: Math.max(0, (finished ?? sampleEnd) - started) };
}

/**
 * The report of `samples`, for the plan's `waves` (node ids, first wave first).
 * - durations: quantiles over every sample; a sample that gave up or failed counts with the time
 *   it reached (a lower bound, and `outcomes` says how many did);
 * - a node or wave: its start and duration over the samples in which it started; one still out
 *   when its sample ended counts until that end; a wave starts with its first node and ends with
 *   its last; a wave no sample started is left out of `waves` and named in `wavesNotReached`;
 * - pauses: grouped by key; probability = the fraction of samples that hit it at least once;
 *   `typicalAtMs` = the median of each such sample's first hit; first one first;
 * - what is left on a node and `safeToRestart`: the value most samples show (ties: the one that
 *   leaves more, then not safe — the cautious reading), with every workload's own probability;
 * - peak nodes out: the most over all samples; duration sources: summed over the samples.
 */
export function aggregateSamples(samples: readonly RehearsalSample[], waves: readonly (readonly string[])[]): RehearsalReport {
  if (!samples.length) throw new InvalidInputError('samples', '0', 'a rehearsal report needs at least one sample');
  const n = samples.length;
  const nodeOf = samples.map((s) => new Map(s.nodes.map((node) => [node.nodeId, node])));

  const planned = waves.flatMap((w, i) => w.map((nodeId) => ({ nodeId, wave: i + 1 })));
  const known = new Set(planned.map((p) => p.nodeId));
  const extra = [...new Map(samples.flatMap((s) => s.nodes.filter((node) => !known.has(node.nodeId)).map((node) => [node.nodeId, node.wave] as const)))]
    .sort(([a], [b]) => compareNodeIds(a, b))
    .map(([nodeId, wave]) => ({ nodeId, wave }));

  const nodes = [...planned, ...extra].map(({ nodeId, wave }) => {
    const seen = samples.flatMap((s, i) => {
      const node = nodeOf[i]!.get(nodeId);
      return node ? [{ node, end: s.durationMs }] : [];
    });
    const spans = seen.flatMap(({ node, end }) => span(node.startedAtMs, node.finishedAtMs, end) ?? []);
    const left = leftOnNode(seen.map((x) => x.node));
    return {
      nodeId,
      wave,
      startMs: quantilesOrNull(spans.map((x) => x.start)),
      durationMs: quantilesOrNull(spans.map((x) => x.duration)),
      ...left,
    };
  });

  const waveRows: RehearsalReport['waves'] = [];
  const wavesNotReached: number[] = [];
  waves.forEach((nodeIds, i) => {
    const spans = samples.flatMap((s, k) => {
      const members = nodeIds.map((id) => nodeOf[k]!.get(id));
      const starts = members.flatMap((m) => (m?.startedAtMs != null ? [m.startedAtMs] : []));
      if (!starts.length) return [];
      const finishes = members.map((m) => m?.finishedAtMs ?? null);
      const end = finishes.every((f) => f !== null) ? Math.max(...(finishes as number[])) : null;
      return [span(Math.min(...starts), end, s.durationMs)!];
    });
    if (!spans.length) wavesNotReached.push(i + 1);
    else
      waveRows.push({ wave: i + 1, nodeIds: [...nodeIds], startMs: quantiles(spans.map((x) => x.start)), durationMs: quantiles(spans.map((x) => x.duration)) });
  });

  const outcomes: RehearsalReport['outcomes'] = { SUCCEEDED: 0, FAILED: 0, CANCELLED: 0, GAVE_UP: 0 };
  const durationSources: Record<DurationSource, number> = { WORKLOAD: 0, NODE: 0, CLUSTER: 0, DEFAULT: 0 };
  const stopped = new Map<string, number>();
  for (const s of samples) {
    outcomes[s.outcome]++;
    for (const source of Object.keys(durationSources) as DurationSource[]) durationSources[source] += s.durationSources[source] ?? 0;
    for (const vmId of new Set(s.vmsLeftStopped)) stopped.set(vmId, (stopped.get(vmId) ?? 0) + 1);
  }

  return {
    samples: n,
    durationMs: quantiles(samples.map((s) => s.durationMs)),
    waves: waveRows,
    wavesNotReached,
    nodes,
    pauses: groupPauses(samples),
    vmsLeftStopped: [...stopped]
      .map(([vmId, count]) => ({ vmId, probability: count / n }))
      .sort((a, b) => b.probability - a.probability || compareNatural(a.vmId, b.vmId)),
    peakNodesOut: Math.max(...samples.map((s) => s.peakNodesOut)),
    outcomes,
    durationSources,
  };
}

function groupPauses(samples: readonly RehearsalSample[]): ReportPause[] {
  const groups = new Map<string, { first: SamplePause; at: number[] }>();
  for (const s of samples) {
    const firstHit = new Map<string, SamplePause>();
    for (const p of s.pauses) if (!firstHit.has(p.key) || p.atMs < firstHit.get(p.key)!.atMs) firstHit.set(p.key, p);
    for (const [key, p] of firstHit) {
      const group = groups.get(key);
      if (group) group.at.push(p.atMs);
      else groups.set(key, { first: p, at: [p.atMs] });
    }
  }
  return [...groups]
    .map(([key, { first, at }]) => ({
      key,
      reason: first.reason,
      nodeId: first.nodeId,
      workload: first.workload,
      message: first.message,
      probability: at.length / samples.length,
      typicalAtMs: quantile(at, 0.5),
    }))
    .sort((a, b) => a.typicalAtMs - b.typicalAtMs || compareNatural(a.key, b.key));
}

/** The cautious mode: most samples first, then more left, then not safe before unknown before safe. */
function leftOnNode(seen: readonly SampleNode[]): {
  leftOnNode: string[];
  safeToRestart: boolean | null;
  leftOnNodeProbabilities: { workload: string; probability: number }[];
} {
  const readings = new Map<string, { left: string[]; safe: boolean | null; count: number }>();
  const each = new Map<string, number>();
  for (const node of seen) {
    const left = [...new Set(node.leftOnNode)].sort(compareNatural);
    for (const w of left) each.set(w, (each.get(w) ?? 0) + 1);
    const key = JSON.stringify([left, node.safeToRestart]);
    const reading = readings.get(key);
    if (reading) reading.count++;
    else readings.set(key, { left, safe: node.safeToRestart, count: 1 });
  }
  const caution = (safe: boolean | null) => (safe === false ? 0 : safe === null ? 1 : 2);
  const [mode] = [...readings.values()].sort(
    (a, b) => b.count - a.count || b.left.length - a.left.length || caution(a.safe) - caution(b.safe) || compareNatural(a.left.join(','), b.left.join(',')),
  );
  return {
    leftOnNode: mode?.left ?? [],
    safeToRestart: mode?.safe ?? null,
    leftOnNodeProbabilities: [...each]
      .map(([workload, count]) => ({ workload, probability: count / seen.length }))
      .sort((a, b) => b.probability - a.probability || compareNatural(a.workload, b.workload)),
  };
}
