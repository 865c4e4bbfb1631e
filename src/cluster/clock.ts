/**
 * Time as the core and the plugins see it. Production uses the system clock; tests use
 * VirtualClock (test/support/virtual-clock.ts) so that latencies, deadlines and heartbeats
 * are deterministic.
 */
export interface Clock {
  now(): number;
  /** Resolves after `ms` of this clock's time. */
  sleep(ms: number): Promise<void>;
  setTimer(ms: number, fn: () => void): () => void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  setTimer(ms, fn) {
    const handle = setTimeout(fn, ms);
    return () => clearTimeout(handle);
  },
};
