/** A test double of the rehearsal's worker (issue 33): the API's and the CLI's tests run the gateway's side for real around them. */
import type { RehearsalSample } from '../../src/domain/rehearsal/types.ts';
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

/** A sample of a rollout of nodes 1 then 2, each half of it, with an UNSAFE_TO_RESTART pause on node 2 at `pauseAtMs` when given. */
export const sample = (seed: number, durationMs: number, pauseAtMs?: number): RehearsalSample => ({
  seed,
  durationMs,
  outcome: 'SUCCEEDED',
  nodes: [
    { nodeId: '1', wave: 1, startedAtMs: 0, finishedAtMs: durationMs / 2, leftOnNode: [], safeToRestart: true },
    { nodeId: '2', wave: 2, startedAtMs: durationMs / 2, finishedAtMs: durationMs, leftOnNode: [], safeToRestart: true },
  ],
  pauses:
    pauseAtMs === undefined
      ? []
      : [{ key: 'UNSAFE_TO_RESTART:2:prod/vm-2-1', reason: 'UNSAFE_TO_RESTART', nodeId: '2', workload: 'prod/vm-2-1', message: 'm', atMs: pauseAtMs }],
  vmsLeftStopped: [],
  peakNodesOut: 1,
  durationSources: { WORKLOAD: 0, NODE: 0, CLUSTER: 0, DEFAULT: 3 },
});
