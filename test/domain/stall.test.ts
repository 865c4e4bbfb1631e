import { describe, expect, it } from 'vitest';
import { etaAt, expectedDuration, medianDuration, overBy, stallsAt } from '../../src/domain/stall.ts';

describe('stall rules (issue 17, point 7)', () => {
  it('expects the median of finished steps, else the declared latency, else the configured default', () => {
    expect(medianDuration([])).toBeNull();
    expect(medianDuration([30, 10, 20])).toBe(20);
    expect(medianDuration([10, 20, 30, 40])).toBe(25);
    expect(expectedDuration({ finishedDurations: [30, 10, 20], declaredMs: 500, defaultMs: 60_000 })).toBe(20);
    expect(expectedDuration({ finishedDurations: [], declaredMs: 500, defaultMs: 60_000 })).toBe(500);
    expect(expectedDuration({ finishedDurations: [], declaredMs: null, defaultMs: 60_000 })).toBe(60_000);
  });

  it('stalls past twice the expected duration; how far over counts from the expected duration', () => {
    expect(stallsAt(1000, 30)).toBe(1060);
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
