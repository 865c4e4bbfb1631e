/**
 * Time as a simulator sees it. By default the wall clock; a test may pass its own (the
 * same virtual clock it gives the gateway), so that long polls, latencies and WAL catch-up
 * happen when the test moves time and never on their own. Structural: simulators import
 * nothing of the gateway, and the gateway's test clock fits this shape.
 */
export interface SimClock {
  now(): number;
  setTimer(ms: number, fn: () => void): () => void;
}

export const wallClock: SimClock = {
  now: () => Date.now(),
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

/**
 * Counts what a simulator is waiting on its clock for (a held answer, a long poll, a
 * latency), so that a test can tell "idle until time moves" from "still working".
 */
export class Waits {
  private count = 0;

  get pending(): number {
    return this.count;
  }

  /** Resolves after `ms` of `clock`'s time (or when `until` resolves first). */
  async sleep(clock: SimClock, ms: number, until?: Promise<unknown>): Promise<void> {
    this.count++;
    let cancel = () => {};
    try {
      await Promise.race([new Promise<void>((resolve) => (cancel = clock.setTimer(Math.max(0, ms), resolve))), ...(until ? [until] : [])]);
    } finally {
      cancel();
      this.count--;
    }
  }

  /** Counts `promise` as a wait until it settles. */
  async hold<T>(promise: Promise<T>): Promise<T> {
    this.count++;
    try {
      return await promise;
    } finally {
      this.count--;
    }
  }
}
