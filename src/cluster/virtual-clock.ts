import type { Clock } from './clock.ts';

/*
 * Product code since issue 33: a rehearsal runs the real engines on it, in a worker thread.
 * Tests import it through test/support/virtual-clock.ts.
 */

interface Timer {
  at: number;
  seq: number;
  fn: () => void;
}

/** A clock that only moves when told to. Timers due at the same instant fire in the order they were set. */
export class VirtualClock implements Clock {
  private current: number;
  private seq = 0;
  private timers: Timer[] = [];
  private readonly ioWaits: (() => Promise<void>)[] = [];

  constructor(start = Date.UTC(2026, 0, 1)) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.setTimer(ms, resolve));
  }

  setTimer(ms: number, fn: () => void): () => void {
    const timer: Timer = { at: this.current + Math.max(0, ms), seq: this.seq++, fn };
    this.timers.push(timer);
    return () => {
      this.timers = this.timers.filter((t) => t !== timer);
    };
  }

  /**
   * Also waits for `idle` (e.g. a PostgreSQL pool with no query in flight) before each timer:
   * a database across a socket answers later than SQLite's few event-loop turns, and time
   * must not run ahead of the writes it triggered.
   */
  waitForIo(idle: () => Promise<void>): void {
    this.ioWaits.push(idle);
  }

  get pendingTimers(): number {
    return this.timers.length;
  }

  /** When the next timer is due (null: none is set), so that a driver can move time straight there. */
  nextDueAt(): number | null {
    let at: number | null = null;
    for (const t of this.timers) if (at === null || t.at < at) at = t.at;
    return at;
  }

  /**
   * Moves time forward by `ms`, firing due timers in order and letting the promise
   * callbacks they trigger run before the next timer, so chains of sleeps behave as in
   * real time.
   */
  async advance(ms: number): Promise<void> {
    const target = this.current + ms;
    for (;;) {
      await this.settle();
      const next = this.nextDue(target);
      if (!next) break;
      this.timers = this.timers.filter((t) => t !== next);
      this.current = Math.max(this.current, next.at);
      next.fn();
    }
    this.current = target;
    await this.settle();
  }

  private async settle(): Promise<void> {
    await flushMicrotasks();
    for (const idle of this.ioWaits) {
      await idle();
      await flushMicrotasks();
    }
  }

  /** Advances until no timer is pending or `limitMs` has passed. */
  async runAll(limitMs = 24 * 3600_000): Promise<void> {
    await this.advance(limitMs);
  }

  private nextDue(target: number): Timer | undefined {
    let best: Timer | undefined;
    for (const t of this.timers) {
      if (t.at > target) continue;
      if (!best || t.at < best.at || (t.at === best.at && t.seq < best.seq)) best = t;
    }
    return best;
  }
}

/** Lets every queued promise callback run (several macrotask turns, for chained awaits). */
export async function flushMicrotasks(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}
