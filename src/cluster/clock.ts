/**
 * Time as the core and the plugins see it. Production uses the system clock; tests use
 * VirtualClock (src/cluster/virtual-clock.ts) so that latencies, deadlines and heartbeats
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
    // A zero-length timer runs on the next turn of the loop: setTimeout's 1 ms minimum would
    // make every zero-latency step wait a timer tick.
    if (ms <= 0) {
      const immediate = setImmediate(fn);
      return () => clearImmediate(immediate);
    }
    const handle = setTimeout(fn, ms);
    return () => clearTimeout(handle);
  },
};
