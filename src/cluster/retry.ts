/**
 * Retries with backoff on the injected clock, for plugins and the core alike.
 *
 * Hand-written rather than cockatiel@3 (the usual choice; v4 needs Node 22): cockatiel
 * waits with the global setTimeout and takes no clock, and every wait here must run on
 * the injected Clock so that tests on a VirtualClock stay deterministic and never sleep.
 * What is left is one small loop.
 */
import type { Clock } from './clock.ts';

export interface RetryOptions {
  clock: Clock;
  /** Attempts in all, the first included; Infinity retries until `retryable` says no. */
  maxAttempts: number;
  /** The wait after failed attempt `attempt` (1-based). At most 0 retries at once, without a timer. */
  delayMs: (attempt: number) => number;
  /** Whether `error` from attempt `attempt` may be retried (default: every error). Asked only while attempts are left. */
  retryable?: (error: unknown, attempt: number) => boolean;
  /** Called before each wait, e.g. to log or to record why the attempt failed. */
  onRetry?: (error: unknown, retry: { attempt: number; delayMs: number }) => void;
  /** Ends the retries: a wait in progress stops and the last error is thrown. */
  signal?: AbortSignal;
}

/** `initialMs`, doubling after every failed attempt, never more than `maxMs`. */
export function exponentialBackoff(initialMs: number, maxMs = Infinity): (attempt: number) => number {
  return (attempt) => Math.min(maxMs, initialMs * 2 ** (attempt - 1));
}

/** Runs `action` (given its 1-based attempt number) until it succeeds or may not be retried; rejects with the last error. */
export async function retry<T>(action: (attempt: number) => Promise<T>, options: RetryOptions): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await action(attempt);
    } catch (error) {
      if (attempt >= options.maxAttempts || options.signal?.aborted || !(options.retryable?.(error, attempt) ?? true)) throw error;
      const delayMs = options.delayMs(attempt);
      options.onRetry?.(error, { attempt, delayMs });
      if (delayMs > 0 && !(await sleepUnlessAborted(options.clock, delayMs, options.signal))) throw error;
    }
  }
}

/** Sleeps `ms` on the clock; resolves false at once when `signal` aborts first. */
function sleepUnlessAborted(clock: Clock, ms: number, signal: AbortSignal | undefined): Promise<boolean> {
  if (!signal) return clock.sleep(ms).then(() => true);
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onAbort = () => {
      cancel();
      resolve(false);
    };
    const cancel = clock.setTimer(ms, () => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    });
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
