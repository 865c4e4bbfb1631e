/** Test doubles of the rehearsal's worker and report (issue 33): the API's and the CLI's tests run the gateway's side for real around them. */
import type { RehearsalReport, RehearsalSample } from '../../src/domain/rehearsal/types.ts';
import type { RehearsalRequest } from '../../src/rehearsal/request.ts';

/** The worker's test double: each call waits until the test settles it. */
export function workerDouble() {
  const calls: { request: RehearsalRequest; resolve: (s: RehearsalSample[]) => void; reject: (e: Error) => void; signal?: AbortSignal }[] = [];
  const runSamples = (request: RehearsalRequest, options: { signal?: AbortSignal; onProgress?: (done: number, total: number) => void }) =>
    new Promise<RehearsalSample[]>((resolve, reject) => {
      options.onProgress?.(1, request.samples);
      calls.push({ request, resolve, reject, ...(options.signal && { signal: options.signal }) });
      options.signal?.addEventListener('abort', () => reject(options.signal!.reason as Error), { once: true });
    });
  return { calls, runSamples };
}

export const sample = (seed: number, durationMs: number): RehearsalSample => ({
  seed,
  durationMs,
  outcome: 'SUCCEEDED',
  nodes: [],
  pauses: [],
  vmsLeftStopped: [],
  peakNodesOut: 1,
  durationSources: { WORKLOAD: 0, NODE: 0, CLUSTER: 0, DEFAULT: 3 },
});

/** A small real aggregation for the double's samples: the report shape, with what the test checks computed from them. */
export function aggregate(samples: RehearsalSample[], waves: string[][]): RehearsalReport {
  const d = samples.map((s) => s.durationMs).sort((a, b) => a - b);
  const q = { p10: d[0]!, p50: d[Math.floor(d.length / 2)]!, p90: d.at(-1)! };
  return {
    samples: samples.length,
    durationMs: q,
    waves: waves.map((nodeIds, i) => ({ wave: i + 1, nodeIds, startMs: { p10: 0, p50: 0, p90: 0 }, durationMs: q })),
    nodes: waves.flatMap((w, i) => w.map((nodeId) => ({ nodeId, wave: i + 1, startMs: null, durationMs: null, leftOnNode: [], safeToRestart: true }))),
    pauses: [
      {
        key: 'UNSAFE_TO_RESTART:2:prod/vm-2-1',
        reason: 'UNSAFE_TO_RESTART',
        nodeId: '2',
        workload: 'prod/vm-2-1',
        message: 'm',
        probability: 0.5,
        typicalAtMs: 90_000,
      },
    ],
    vmsLeftStopped: [],
    peakNodesOut: 1,
    outcomes: { SUCCEEDED: samples.length, FAILED: 0, CANCELLED: 0, GAVE_UP: 0 },
    durationSources: { WORKLOAD: 0, NODE: 0, CLUSTER: 0, DEFAULT: 3 * samples.length },
  };
}
