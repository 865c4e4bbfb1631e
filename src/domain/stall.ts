/**
 * Stalls and honest ETAs (issue 17, point 7): a step is stalled when it has run longer than
 * STALL_FACTOR times its expected duration. The expected duration is, in this order, the
 * median of the operation's finished steps (what this cluster really takes), the backend's
 * declared latency for the action, or the configured default. Pure: the run and the
 * GraphQL fields both read stalls through here.
 */

/** A step running longer than this many times its expected duration is stalled. */
const STALL_FACTOR = 2;

/**
 * Never stalled before this long, however short the expectation: with zero-latency backends
 * (or a median of a few ms) queueing alone would otherwise flag every step of a large drain,
 * flooding the journal with stall events that say nothing an operator can act on.
 */
const STALL_FLOOR_MS = 1_000;

export interface StalledStep {
  workloadKind: string;
  workloadId: string;
  action: string;
  /** When the step started. */
  since: number;
  /** What it was expected to take. */
  expectedMs: number;
}

/**
 * The finished steps' durations, kept so that their median costs O(log n) per added step:
 * a drain of 100 000 shards asks for it at every step start, and sorting them all each time
 * made the engine quadratic. Two heaps: `low` (a max-heap) holds the smaller half.
 */
export class FinishedDurations {
  private readonly low = new Heap((a, b) => b - a);
  private readonly high = new Heap((a, b) => a - b);

  add(ms: number): void {
    if (this.low.size === 0 || ms <= this.low.peek()!) this.low.push(ms);
    else this.high.push(ms);
    if (this.low.size > this.high.size + 1) this.high.push(this.low.pop()!);
    else if (this.high.size > this.low.size) this.low.push(this.high.pop()!);
  }

  /** The median, or null when none finished. */
  median(): number | null {
    if (this.low.size === 0) return null;
    if (this.low.size > this.high.size) return this.low.peek()!;
    return Math.round((this.low.peek()! + this.high.peek()!) / 2);
  }
}

/** A binary heap; `before(a, b) < 0` puts a nearer the top. */
class Heap {
  private readonly items: number[] = [];
  constructor(private readonly before: (a: number, b: number) => number) {}

  get size(): number {
    return this.items.length;
  }

  peek(): number | undefined {
    return this.items[0];
  }

  push(value: number): void {
    const a = this.items;
    a.push(value);
    let i = a.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (this.before(a[i]!, a[parent]!) >= 0) break;
      [a[i], a[parent]] = [a[parent]!, a[i]!];
      i = parent;
    }
  }

  pop(): number | undefined {
    const a = this.items;
    const top = a[0];
    const last = a.pop();
    if (a.length === 0 || last === undefined) return top;
    a[0] = last;
    for (let i = 0; ;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let best = i;
      if (l < a.length && this.before(a[l]!, a[best]!) < 0) best = l;
      if (r < a.length && this.before(a[r]!, a[best]!) < 0) best = r;
      if (best === i) break;
      [a[i], a[best]] = [a[best]!, a[i]!];
      i = best;
    }
    return top;
  }
}

/** The first of: the median of finished steps, the backend's declared latency, the configured default; never below 1 ms. */
export function expectedDuration(input: { finishedMedian: number | null; declaredMs: number | null; defaultMs: number }): number {
  return Math.max(1, input.finishedMedian ?? input.declaredMs ?? input.defaultMs);
}

/** The instant at which a step that started at `startedAt` counts as stalled. */
export function stallsAt(startedAt: number, expectedMs: number): number {
  return startedAt + Math.max(STALL_FACTOR * expectedMs, STALL_FLOOR_MS);
}

/** How far over its expected duration a stalled step is, at `now`. */
export function overBy(step: Pick<StalledStep, 'since' | 'expectedMs'>, now: number): number {
  return Math.max(0, now - step.since - step.expectedMs);
}

/** Why an operation that runs shows no ETA. */
export type EtaUnknownReason = 'NOTHING_FINISHED' | 'STALLED';

/**
 * The completion estimate at `now`, from the observed rate of finished steps: never in the
 * past. While steps are stalled and nothing else is left to do, or while nothing has
 * finished, there is no estimate, and the reason says why; as a stall goes on, the rate
 * falls and the estimate grows.
 */
export function etaAt(input: {
  now: number;
  /** When the first step started (the operation's start when unknown). */
  firstStartAt: number;
  /** Steps with an outcome other than SKIPPED. */
  finished: number;
  planned: number;
  moving: number;
  stalled: number;
}): { at: number | null; unknownReason: EtaUnknownReason | null } {
  const { now, firstStartAt, finished, planned, moving, stalled } = input;
  if (planned + moving === 0) return { at: now, unknownReason: null };
  if (stalled > 0 && stalled >= planned + moving) return { at: null, unknownReason: 'STALLED' };
  if (finished === 0 || now <= firstStartAt) return { at: null, unknownReason: stalled ? 'STALLED' : 'NOTHING_FINISHED' };
  const perMs = finished / (now - firstStartAt);
  return { at: Math.max(now, Math.round(now + (planned + moving) / perMs)), unknownReason: null };
}
