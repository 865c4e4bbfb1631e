import type { DrawnDuration, DurationSampler, HistoryRecord, RehearsedAction } from '../src/domain/rehearsal/types.ts';

/**
 * The worker's sampler until src/domain/rehearsal/history.ts (`createDurationSampler`, issue 33)
 * is merged, which replaces it: a duration of an earlier run of the same action, picked at
 * random (seeded) from the workload's own history, else its node's, else the cluster's, else
 * the request's default.
 */
export function historySampler(history: readonly HistoryRecord[], seed: number, defaults: Partial<Record<RehearsedAction, number>> = {}): DurationSampler {
  let state = seed >>> 0;
  // mulberry32: small, seeded, and the same sequence on every machine.
  const random = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const pick = (records: HistoryRecord[]) => records[Math.floor(random() * records.length)]!.durationMs;
  return {
    draw(action, workloadId, nodeId): DrawnDuration {
      const same = history.filter((r) => r.action === action);
      const workload = same.filter((r) => r.workloadId === workloadId);
      if (workload.length) return { ms: pick(workload), source: 'WORKLOAD' };
      const node = nodeId === null ? [] : same.filter((r) => r.nodeId === nodeId);
      if (node.length) return { ms: pick(node), source: 'NODE' };
      if (same.length) return { ms: pick(same), source: 'CLUSTER' };
      return { ms: defaults[action] ?? 0, source: 'DEFAULT' };
    },
  };
}
