import { describe, expect, it } from 'vitest';
import { etaAt, expectedDuration, FinishedDurations, overBy, stallsAt } from '../../src/domain/stall.ts';

// Literals, not imported from the code under test: a changed value must fail here (issue 26).
const STALL_FLOOR_MS = 1_000;

function medianOf(values: number[]): number | null {
  const durations = new FinishedDurations();
  for (const v of values) durations.add(v);
  return durations.median();
}

describe('stall rules (issue 17, point 7)', () => {
  it('expects the median of finished steps, else the declared latency, else the configured default', () => {
    expect(medianOf([])).toBeNull();
    expect(medianOf([30, 10, 20])).toBe(20);
    expect(medianOf([10, 20, 30, 40])).toBe(25);
    expect(medianOf([40, 40, 10, 10, 20, 5, 90])).toBe(20);
    expect(expectedDuration({ finishedMedian: medianOf([30, 10, 20]), declaredMs: 500, defaultMs: 60_000 })).toBe(20);
    expect(expectedDuration({ finishedMedian: null, declaredMs: 500, defaultMs: 60_000 })).toBe(500);
    expect(expectedDuration({ finishedMedian: null, declaredMs: null, defaultMs: 60_000 })).toBe(60_000);
  });

  it('keeps the median of many durations added in any order (checked against sorting them)', () => {
    const durations = new FinishedDurations();
    const seen: number[] = [];
    let x = 7;
    for (let i = 0; i < 2_000; i++) {
      x = (x * 48_271) % 2_147_483_647;
      const ms = x % 5_000;
      durations.add(ms);
      seen.push(ms);
      const sorted = [...seen].sort((a, b) => a - b);
      const mid = sorted.length >> 1;
      const expected = sorted.length % 2 ? sorted[mid] : Math.round((sorted[mid - 1]! + sorted[mid]!) / 2);
      if (durations.median() !== expected) throw new Error(`after ${i + 1} durations the median is ${durations.median()}, expected ${expected}`);
    }
    expect(durations.median()).not.toBeNull();
  });

  it('stalls past twice the expected duration; how far over counts from the expected duration', () => {
    expect(stallsAt(1000, 800)).toBe(2600);
    // however short the expectation, never before the floor
    expect(stallsAt(1000, 30)).toBe(1000 + STALL_FLOOR_MS);
    expect(overBy({ since: 1000, expectedMs: 30 }, 31_000)).toBe(29_970);
    expect(overBy({ since: 1000, expectedMs: 30 }, 1010)).toBe(0);
  });

  it('the ETA is never in the past, grows while nothing finishes, and is null with a reason when nothing can be estimated', () => {
    const base = { firstStartAt: 0, finished: 2, planned: 2, moving: 1, stalled: 1 };
    const early = etaAt({ ...base, now: 1_000 }).at!;
    const late = etaAt({ ...base, now: 61_000 }).at!;
    expect(early).toBeGreaterThanOrEqual(1_000);
    expect(late).toBeGreaterThan(early + 60_000);
    expect(etaAt({ ...base, now: 5, planned: 0, stalled: 1 })).toEqual({ at: null, unknownReason: 'STALLED' });
    expect(etaAt({ ...base, now: 5, finished: 0, stalled: 0 })).toEqual({ at: null, unknownReason: 'NOTHING_FINISHED' });
    expect(etaAt({ ...base, now: 5, planned: 0, moving: 0 })).toEqual({ at: 5, unknownReason: null });
  });
});
