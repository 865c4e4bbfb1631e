/** The simulator's time: the wall clock by default; tests pass a virtual one (same shape as the gateway's Clock). */
export interface SimClock {
  now(): number;
  setTimer(ms: number, fn: () => void): () => void;
}

export const wallClock: SimClock = {
  now: () => Date.now(),
  setTimer(ms, fn) {
    const handle = setTimeout(fn, ms);
    return () => clearTimeout(handle);
  },
};
