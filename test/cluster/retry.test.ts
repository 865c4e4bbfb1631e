import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../support/virtual-clock.ts';
import { exponentialBackoff, retry } from '../../src/cluster/retry.ts';

class Flaky extends Error {}

/** An action that fails `failures` times, recording the clock at each attempt. */
function flaky(clock: VirtualClock, failures: number, error: () => Error = () => new Flaky('not yet')) {
  const at: number[] = [];
  const start = clock.now();
  return {
    at,
    action: async (attempt: number) => {
      at.push(clock.now() - start);
      if (attempt <= failures) throw error();
      return `done on attempt ${attempt}`;
    },
  };
}

/** Whether `promise` is still pending once queued work has run. */
async function pending(clock: VirtualClock, promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  await clock.advance(0);
  return !settled;
}

describe('retry', () => {
  it('returns the first success without setting a timer', async () => {
    const clock = new VirtualClock();
    const { action, at } = flaky(clock, 0);
    await expect(retry(action, { clock, maxAttempts: 3, delayMs: exponentialBackoff(100) })).resolves.toBe('done on attempt 1');
    expect(at).toEqual([0]);
    expect(clock.pendingTimers).toBe(0);
  });

  it('waits on the injected clock between attempts, doubling each time', async () => {
    const clock = new VirtualClock();
    const { action, at } = flaky(clock, 2);
    const retries: { attempt: number; delayMs: number }[] = [];
    const result = retry(action, { clock, maxAttempts: 5, delayMs: exponentialBackoff(100), onRetry: (_e, r) => retries.push(r) });
    expect(await pending(clock, result)).toBe(true);
    await clock.advance(99);
    expect(at).toEqual([0]);
    await clock.advance(1);
    expect(at).toEqual([0, 100]);
    await clock.advance(200);
    await expect(result).resolves.toBe('done on attempt 3');
    expect(at).toEqual([0, 100, 300]);
    expect(retries).toEqual([
      { attempt: 1, delayMs: 100 },
      { attempt: 2, delayMs: 200 },
    ]);
  });

  it('gives up after maxAttempts with the last error', async () => {
    const clock = new VirtualClock();
    let n = 0;
    const { action, at } = flaky(clock, Infinity, () => new Flaky(`failure ${++n}`));
    const result = retry(action, { clock, maxAttempts: 3, delayMs: () => 10 });
    result.catch(() => {});
    await clock.advance(1000);
    await expect(result).rejects.toThrow('failure 3');
    expect(at).toEqual([0, 10, 20]);
  });

  it('throws at once what may not be retried, and asks with the attempt number', async () => {
    const clock = new VirtualClock();
    const asked: number[] = [];
    const { action, at } = flaky(clock, Infinity);
    const result = retry(action, {
      clock,
      maxAttempts: 10,
      delayMs: () => 10,
      retryable: (e, attempt) => {
        asked.push(attempt);
        return e instanceof Flaky && attempt < 2;
      },
    });
    result.catch(() => {});
    await clock.advance(1000);
    await expect(result).rejects.toBeInstanceOf(Flaky);
    expect(at).toEqual([0, 10]);
    expect(asked).toEqual([1, 2]);
  });

  it('retries at once, without a timer, when the delay is 0', async () => {
    const clock = new VirtualClock();
    const { action, at } = flaky(clock, 2);
    const result = retry(action, { clock, maxAttempts: 3, delayMs: () => 0 });
    await expect(result).resolves.toBe('done on attempt 3');
    expect(at).toEqual([0, 0, 0]);
    expect(clock.pendingTimers).toBe(0);
  });

  it('with maxAttempts Infinity, retries until the predicate says no', async () => {
    const clock = new VirtualClock();
    const { action, at } = flaky(clock, 50);
    const result = retry(action, { clock, maxAttempts: Infinity, delayMs: () => 1 });
    await clock.advance(100);
    await expect(result).resolves.toBe('done on attempt 51');
    expect(at).toHaveLength(51);
  });
});

describe('exponentialBackoff', () => {
  it('doubles from the first delay and stops at the cap', () => {
    const backoff = exponentialBackoff(500, 3000);
    expect([1, 2, 3, 4, 5].map(backoff)).toEqual([500, 1000, 2000, 3000, 3000]);
    expect(exponentialBackoff(200)(10)).toBe(200 * 2 ** 9);
  });
});
