/**
 * Wakes the readers of the event log when new events were committed (ha:E1), so that a
 * subscriber on any replica hears of them at once instead of at its next poll. The log table
 * stays the source of truth: a wake-up carries at most the newest `seq`, and readers read
 * the rows from the table, from their own cursor (ha:E2), so a lost or doubled wake-up
 * never loses or doubles an event.
 */
export class EventWakeup {
  private waiters = new Set<() => void>();

  /** Resolves at the next wake-up, or after `fallbackMs` (the poll that covers a lost one). */
  wait(fallbackMs: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, fallbackMs);
      timer.unref();
      this.waiters.add(done);
    });
  }

  /** New events were committed (here, or on another replica: PostgreSQL NOTIFY). */
  notify(): void {
    const waiters = [...this.waiters];
    this.waiters.clear();
    for (const wake of waiters) wake();
  }
}
