/**
 * ha:L4: a stand-by that finds the lease held tries to take it again as it expires (by the
 * database's clock), not up to a whole renew interval later. The lease store is a stand-in
 * that counts attempts; time is vitest's fake timers, so nothing here waits for real time.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import type { LeaseStore } from '../../src/leadership/lease-store.ts';
import { PostgresLeadership } from '../../src/leadership/leadership.ts';

afterEach(() => {
  vi.useRealTimers();
});

describe('a stand-by waiting for the lease', () => {
  it('ha:L4: tries again just after the holder’s lease expires, then takes it', async () => {
    vi.useFakeTimers();
    let attempts = 0;
    let expiresInMs = 300;
    const lease = {
      acquire: async () => {
        attempts++;
        return expiresInMs > 0 ? null : { epoch: 2, expiresAt: new Date() };
      },
      remainingMs: async () => expiresInMs,
    } as unknown as LeaseStore;
    const leadership = new PostgresLeadership({ lease, address: () => 'http://me', log: createLogger('silent'), leaseTtlMs: 10_000, leaseRenewMs: 2000 });
    await leadership.start();
    expect(attempts).toBe(1);
    // The holder's lease runs 300 ms more: the next try comes then (and a little after), not at the 2 s renew interval.
    expiresInMs = 0;
    await vi.advanceTimersByTimeAsync(299);
    expect(attempts).toBe(1);
    await vi.advanceTimersByTimeAsync(10);
    expect(attempts).toBe(2);
    expect(leadership.status()).toMatchObject({ role: 'leader', epoch: 2 });
    await leadership.stop().catch(() => {});
  });
});
