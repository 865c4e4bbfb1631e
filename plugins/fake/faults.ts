import type { ActionKind, FaultSettings } from '../../src/cluster/backend.ts';
import { BackendError } from '../../src/cluster/errors.ts';
import { createPrng } from '../../src/domain/prng.ts';

type Subject = NonNullable<BackendError['subject']>;

/**
 * Injected faults. Failure decisions draw from a seeded PRNG, and only for kinds with a
 * non-zero rate, so a test that injects one rate sees the same sequence on every run.
 */
export class FaultInjector {
  private settings: FaultSettings = { failureRate: {}, stuck: [] };
  private readonly random: () => number;
  private readonly waiters = new Map<string, Set<() => void>>();

  constructor(seed: number) {
    this.random = createPrng(seed);
  }

  get(): FaultSettings {
    return { failureRate: { ...this.settings.failureRate }, stuck: [...this.settings.stuck] };
  }

  /** Merges: given rates replace theirs; a given `stuck` list replaces the whole list. */
  inject(faults: Partial<FaultSettings>): FaultSettings {
    for (const [kind, rate] of Object.entries(faults.failureRate ?? {})) {
      if (!(rate >= 0 && rate <= 1)) throw new BackendError('Rejected', `failure rate for ${kind} must be in [0, 1], got ${rate}`);
    }
    this.settings = {
      failureRate: { ...this.settings.failureRate, ...faults.failureRate },
      stuck: faults.stuck ? [...new Set(faults.stuck)] : this.settings.stuck,
    };
    this.releaseUnstuck();
    return this.get();
  }

  clear(): FaultSettings {
    this.settings = { failureRate: {}, stuck: [] };
    this.releaseUnstuck();
    return this.get();
  }

  /** Throws Transient when the dice say this action fails; nothing has changed yet when it does. */
  maybeFail(kind: ActionKind, subject: Subject): void {
    const rate = this.settings.failureRate[kind] ?? 0;
    if (rate > 0 && this.random() < rate) {
      throw new BackendError('Transient', `injected ${kind} failure on ${subject.kind} ${subject.id}`, subject);
    }
  }

  isStuck(id: string): boolean {
    return this.settings.stuck.includes(id);
  }

  /**
   * Resolves once `id` is not stuck (at once when it is not). A stuck move completes as
   * soon as the fault is lifted; `cancel` forgets the waiter when the move is aborted.
   */
  untilUnstuck(id: string): { promise: Promise<void>; cancel: () => void } {
    if (!this.settings.stuck.includes(id)) return { promise: Promise.resolve(), cancel: () => {} };
    let release!: () => void;
    const promise = new Promise<void>((resolve) => (release = resolve));
    const set = this.waiters.get(id) ?? new Set();
    set.add(release);
    this.waiters.set(id, set);
    return { promise, cancel: () => set.delete(release) };
  }

  private releaseUnstuck(): void {
    for (const [id, set] of this.waiters) {
      if (this.settings.stuck.includes(id)) continue;
      this.waiters.delete(id);
      for (const release of set) release();
    }
  }
}
