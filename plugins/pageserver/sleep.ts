import type { Clock } from '../../src/cluster/clock.ts';

/** Stopped by a cancel: a newer reconcile, `cancel_reconcile` (neon:W6), the backend closing, or an operation's cancel in neon:C6/C7. */
export class Cancelled extends Error {
  override readonly name = 'Cancelled';
}

/** An operation's cancel ended a wait of neon:C6 or neon:C7: what was issued is completed by a direct attach at once. */
export class OperationCancelled extends Cancelled {}

export const reasonOf = (signal: AbortSignal) => (signal.reason instanceof Error ? signal.reason.message : 'cancelled');

/** Sleeps on the clock; a cancel ends it early with Cancelled. */
export async function sleepUnless(clock: Clock, ms: number, ...signals: (AbortSignal | undefined)[]): Promise<void> {
  const live = signals.filter((s): s is AbortSignal => s !== undefined);
  const fired = live.find((s) => s.aborted);
  if (fired) throw new Cancelled(reasonOf(fired));
  await new Promise<void>((resolve, reject) => {
    const cleanUp = () => {
      cancelTimer();
      for (const s of live) s.removeEventListener('abort', onAbort);
    };
    const cancelTimer = clock.setTimer(ms, () => {
      cleanUp();
      resolve();
    });
    const onAbort = (e: Event) => {
      cleanUp();
      reject(new Cancelled(reasonOf(e.target as AbortSignal)));
    };
    for (const s of live) s.addEventListener('abort', onAbort, { once: true });
  });
}
