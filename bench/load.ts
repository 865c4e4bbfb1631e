import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ChildMessage, LoadSpec, PhaseResult } from './load-client.ts';

export type { LoadSpec, PhaseResult };

/**
 * Runs `bench/load-client.ts` in a child process against `spec.url` (loopback only):
 * warm-up, then `beforeMeasure()` (e.g. snapshot counters; no request is in flight
 * then), then the measured phase, whose result is returned.
 */
export async function runLoad(spec: LoadSpec, beforeMeasure: () => void = () => {}): Promise<PhaseResult> {
  const host = new URL(spec.url).hostname;
  if (host !== '127.0.0.1' && host !== 'localhost' && host !== '[::1]') throw new Error(`load is for loopback servers only, not ${spec.url}`);
  const child = fork(fileURLToPath(new URL('./load-client.ts', import.meta.url)), [], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  try {
    return await new Promise<PhaseResult>((resolve, reject) => {
      child.on('error', reject);
      child.on('exit', (code) => reject(new Error(`load client exited (code ${code}) before reporting`)));
      child.on('message', (message: ChildMessage) => {
        if (message.type === 'warm') {
          if (message.warmup.errors > 0) {
            reject(new Error(`warm-up against ${spec.url}: ${message.warmup.errors} failed requests, first: ${message.warmup.firstError}`));
            return;
          }
          beforeMeasure();
          child.send({ type: 'measure' });
        } else resolve(message.result);
      });
      child.send({ type: 'start', spec });
    });
  } finally {
    if (child.exitCode === null) child.kill();
  }
}

/** The q-quantile (0..1) of ascending `sorted`, nearest-rank. */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank]!;
}
