/**
 * Under whose authority a plugin request is sent (ha:L9). A leader's authority is its epoch
 * (and, inside an operation's run, that run); it ends — one abort signal — the instant the
 * replica stops leading, whatever stopped it (a refused renewal or fenced write, the lease's
 * deadline passed on the local monotonic clock, a step-down). A plugin takes the authority of
 * the call it is serving (`PluginContext.authority`) at each request: it checks it first
 * (`assertValid`, which also reads the lease deadline), names it in `x-lockkeeper-sender`
 * (`tag`) and passes its `signal` to the request, so that requests in flight are aborted at
 * step-down and a deposed leader's run sends nothing more — reads included — while a
 * stand-by's own reads go on under its stand-by authority (`holder@standby/discovery`).
 *
 * The authority a call runs under follows it through every await and timer it starts
 * (AsyncLocalStorage): a cut-over started at epoch 7 keeps epoch 7's authority, and so is
 * refused after epoch 7 ended, even when the replica has meanwhile become a stand-by or
 * leads again at a later epoch. Long-lived loops a plugin keeps (heartbeats, watches) must
 * be started outside any call, at the plugin's start, so that they take the replica's
 * authority of the moment at each request instead.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { BackendError } from './errors.ts';

export interface LeaseAuthority {
  /** Aborted when this authority ends (the epoch is over): requests in flight under it are aborted. */
  readonly signal: AbortSignal;
  /** Whether it may change the cluster (a leader's epoch); a stand-by's authority only reads. */
  readonly leads: boolean;
  /**
   * It can never end: the sole leader of a process on its own database, which nobody can depose
   * and whose plugins are handed no authority (start.ts). Calls under it are not carried
   * through their awaits (`underAuthority`): there is nothing to check or name that the
   * fallback (`issuingAuthority`'s current one) would not give, and carrying it would switch
   * on Node's promise hooks for every promise of the process (AsyncLocalStorage on Node 20).
   */
  readonly endless?: boolean;
  /** Who sends, for `x-lockkeeper-sender`: `holder@epoch/run-<id>`, `holder@epoch/background`, `holder@standby/discovery`. */
  tag(): string;
  /** Throws AuthorityLostError unless requests may still be sent under it; checks the lease deadline on the monotonic clock first. */
  assertValid(): void;
  /** The same authority for one operation's run: the same signal and checks, the run named in the tag. */
  forRun(runId: string): LeaseAuthority;
}

/** A request refused, or aborted, because the epoch it was issued under is over (ha:L9). */
export class AuthorityLostError extends BackendError {
  constructor(
    readonly sender: string,
    readonly reason: string,
  ) {
    super('Unavailable', `${sender}: no longer the leader (${reason}); nothing more is sent under this epoch (ha:L9)`);
  }
}

export interface EpochAuthorityDeps {
  holder: string;
  /** See LeaseAuthority.endless: set only where nothing can end the epoch (soleLeadership). */
  endless?: boolean;
  epoch: number;
  /** Monotonic milliseconds (performance.now in production; injected by tests). */
  monotonic: () => number;
  /** Monotonic ms until which the lease is good (moves on with every renewal). */
  deadline: () => number;
  /** The deadline has passed: the leadership steps down, which ends this authority (`end`). */
  expired: () => void;
}

/** A leader's authority for one epoch. */
export class EpochAuthority implements LeaseAuthority {
  readonly leads = true;
  readonly endless: boolean;
  private readonly controller = new AbortController();

  constructor(
    private readonly deps: EpochAuthorityDeps,
    private readonly scope = 'background',
    private readonly parent?: EpochAuthority,
  ) {
    this.endless = deps.endless === true;
  }

  get signal(): AbortSignal {
    return this.parent?.signal ?? this.controller.signal;
  }

  tag(): string {
    return `${this.deps.holder}@${this.deps.epoch}/${this.scope}`;
  }

  assertValid(): void {
    const { signal } = this;
    // The deadline is read here, not only when a timer fires: a process frozen past its lease
    // runs whatever was due first when it wakes, and that may be a request.
    if (!signal.aborted && this.deps.monotonic() >= this.deps.deadline()) {
      this.deps.expired();
      // The leadership ends the epoch as it steps down; in case it did not, the deadline alone ends it.
      if (!signal.aborted) this.end('lease not renewed in time');
    }
    if (signal.aborted) throw new AuthorityLostError(this.tag(), reasonOf(signal));
  }

  forRun(runId: string): LeaseAuthority {
    return new EpochAuthority(this.deps, `run-${runId}`, this.parent ?? this);
  }

  /** The epoch is over: aborts every request in flight under it, synchronously, before anything else runs. */
  end(reason: string): void {
    const root = this.parent ?? this;
    if (!root.controller.signal.aborted) root.controller.abort(new AuthorityLostError(root.tag(), reason));
  }
}

/** A stand-by's authority: reads only (its discovery and what it serves), never ended. */
export function standbyAuthority(holder: string): LeaseAuthority {
  const signal = new AbortController().signal;
  const authority: LeaseAuthority = {
    signal,
    leads: false,
    tag: () => `${holder}@standby/discovery`,
    assertValid: () => {},
    forRun: () => authority,
  };
  return authority;
}

function reasonOf(signal: AbortSignal): string {
  const reason: unknown = signal.reason;
  if (reason instanceof AuthorityLostError) return reason.reason;
  return reason instanceof Error ? reason.message : 'stepped down';
}

const issuing = new AsyncLocalStorage<LeaseAuthority>();

/** Runs `fn` — and everything it awaits or schedules — under `authority` (an endless one outside any other: as it is, see LeaseAuthority.endless). */
export function underAuthority<T>(authority: LeaseAuthority, fn: () => T): T {
  if (authority.endless && issuing.getStore() === undefined) return fn();
  return issuing.run(authority, fn);
}

/** `fn`, to be called later (from a queue, a callback), under the authority in force now. */
export function keepAuthority<A extends unknown[], R>(fn: (...args: A) => R): (...args: A) => R {
  const authority = issuing.getStore();
  return authority ? (...args) => issuing.run(authority, () => fn(...args)) : fn;
}

/** The authority of the call being served, else `current()` (the replica's authority now). */
export function issuingAuthority(current: () => LeaseAuthority): LeaseAuthority {
  return issuing.getStore() ?? current();
}
