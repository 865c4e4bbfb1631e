/**
 * Which replica leads (ha:L1–L3, ha:L5, ha:L6). One leader at a time holds the lease row;
 * the others stand by and try to take it every renew interval. The leader renews it every
 * `leaseRenewMs`; by its own monotonic clock it counts its lease as good only until
 * `leaseTtlMs − safety margin` after it sent the last successful renewal, so it stops acting
 * before the database could let anyone else take over, even when it was frozen (SIGSTOP)
 * or the database went away. Every transaction of its operations starts with the fence
 * (ha:L7), so a write it still attempts after that is refused by the database.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { performance } from 'node:perf_hooks';
import { EpochAuthority, standbyAuthority, type LeaseAuthority } from '../cluster/authority.ts';
import { UnavailableError } from '../domain/errors.ts';
import type { Logger } from '../logger.ts';
import type { PendingWrite } from '../store/pending-write.ts';
import type { LeaseStore } from './lease-store.ts';

export type Role = 'leader' | 'standby';

export interface LeadershipStatus {
  role: Role;
  /** This replica's id in the lease row. */
  holder: string;
  /** The epoch this replica leads at; null on a stand-by. */
  epoch: number | null;
  /** Until when this replica counts its lease as good (wall-clock ms); null on a stand-by. */
  leaseValidUntil: number | null;
  /** Whether the last exchange with the database succeeded. */
  database: 'up' | 'down';
  /** Times this replica became leader. */
  takeovers: number;
}

export interface Leadership {
  status(): LeadershipStatus;
  /** True while this replica leads and its lease is good by its own monotonic clock: the gate of every backend action (ha:L2). */
  canAct(): boolean;
  /**
   * ha:L9: the authority backend requests are sent under now: this epoch's while it leads
   * (ended, aborting what is in flight, the instant it stops), else the stand-by's (reads only).
   */
  authority(): LeaseAuthority;
  /** The statements that open a transaction of the leader's operations (ha:L7); throws UnavailableError on a stand-by. */
  fence(): PendingWrite[];
  /** Hears every change of role; returns the unsubscribe function. */
  onChange(listener: (status: LeadershipStatus) => void): () => void;
  /** First try to lead, then the renew / acquire loop. */
  start(): Promise<void>;
  /** A transaction was refused by the fence, or a run found the lease gone: stand by at once. */
  lost(reason: string): void;
  /** Gives the lease up (stepDown, SIGTERM: ha:L5) and stands by; does not try again for one lease. */
  stepDown(reason: string): Promise<boolean>;
  /** The current leader as the database says (GET /control/v1/leader). */
  leader(): Promise<{ address: string; epoch: number; expiresAt: Date } | null>;
  /** Stops the loop and releases the lease if held. */
  stop(): Promise<void>;
}

/** One process on its own SQLite file: always the leader, nothing to fence. */
export function soleLeadership(): Leadership {
  const status: LeadershipStatus = { role: 'leader', holder: 'sole', epoch: null, leaseValidUntil: null, database: 'up', takeovers: 0 };
  const listeners = new Set<(status: LeadershipStatus) => void>();
  // Alone, nobody can take over: an authority that never ends (and so need not follow each call).
  const authority = new EpochAuthority({ holder: 'sole', epoch: 0, endless: true, monotonic: () => 0, deadline: () => Infinity, expired: () => {} });
  return {
    status: () => ({ ...status }),
    canAct: () => true,
    authority: () => authority,
    fence: () => [],
    onChange: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    // It leads from the start; saying so once starts the operations.
    start: async () => {
      for (const listener of listeners) listener({ ...status });
    },
    lost: () => {},
    stepDown: async () => false,
    leader: async () => null,
    stop: async () => {},
  };
}

interface LeaseSettings {
  leaseTtlMs: number;
  leaseRenewMs: number;
}

export interface PostgresLeadershipDeps extends LeaseSettings {
  lease: LeaseStore;
  /** Where this replica serves (`http://host:port`), for GET /control/v1/leader. */
  address: () => string;
  log: Logger;
  /** Monotonic milliseconds; default performance.now. */
  monotonic?: () => number;
}

/** A replica id that says where it runs: host, pid and a random part. */
function replicaId(): string {
  return `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
}

/**
 * How long a replica's transaction may sit idle before PostgreSQL ends it (ha:L4): half the
 * lease, so that a leader frozen inside a fenced transaction — holding the lease row's share
 * lock — is cut off before its lease expires and never holds off the take-over.
 */
export function idleInTransactionTimeoutMs({ leaseTtlMs }: Pick<LeaseSettings, 'leaseTtlMs'>): number {
  return Math.floor(leaseTtlMs / 2);
}

/** How long after the lease's expiry a stand-by tries to take it (the two clocks are the database's; this covers the round trip). */
const EXPIRY_SLACK_MS = 5;

/** How long before its database expiry the leader stops counting on its lease. */
function safetyMarginMs({ leaseTtlMs, leaseRenewMs }: LeaseSettings): number {
  return Math.min(Math.max(leaseRenewMs / 2, leaseTtlMs / 5), leaseTtlMs / 2);
}

export class PostgresLeadership implements Leadership {
  private role: Role = 'standby';
  private epoch: number | null = null;
  /** Monotonic ms until which the lease is good. */
  private validUntil = 0;
  private database: 'up' | 'down' = 'up';
  private takeovers = 0;
  private holdBackUntil = 0;
  private timer: NodeJS.Timeout | null = null;
  private watchdog: NodeJS.Timeout | null = null;
  private ticking: Promise<void> | null = null;
  private stopped = false;
  private readonly listeners = new Set<(status: LeadershipStatus) => void>();
  private readonly monotonic: () => number;
  readonly holder = replicaId();
  /** This epoch's authority while leading (ha:L9). */
  private epochAuthority: EpochAuthority | null = null;
  private readonly standby = standbyAuthority(this.holder);

  constructor(private readonly deps: PostgresLeadershipDeps) {
    this.monotonic = deps.monotonic ?? (() => performance.now());
  }

  authority(): LeaseAuthority {
    return this.canAct() && this.epochAuthority ? this.epochAuthority : this.standby;
  }

  status(): LeadershipStatus {
    const good = this.canAct();
    return {
      role: this.role,
      holder: this.holder,
      epoch: this.epoch,
      leaseValidUntil: good ? Date.now() + (this.validUntil - this.monotonic()) : null,
      database: this.database,
      takeovers: this.takeovers,
    };
  }

  canAct(): boolean {
    if (this.role !== 'leader') return false;
    if (this.monotonic() < this.validUntil) return true;
    // Checked where it is needed, not only when a timer fires: a process that was frozen
    // past its lease must not act before its timers have run.
    this.demote('lease not renewed in time');
    return false;
  }

  fence(): PendingWrite[] {
    if (!this.canAct() || this.epoch === null) throw new UnavailableError(`replica ${this.holder} is not the leader`);
    return [this.deps.lease.fence(this.holder, this.epoch)];
  }

  onChange(listener: (status: LeadershipStatus) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async start(): Promise<void> {
    this.stopped = false;
    await this.tick();
  }

  lost(reason: string): void {
    this.demote(reason);
  }

  async stepDown(reason: string): Promise<boolean> {
    await this.settled();
    if (this.role !== 'leader' || this.epoch === null) return false;
    const epoch = this.epoch;
    this.holdBackUntil = this.monotonic() + this.deps.leaseTtlMs;
    this.demote(reason);
    const released = await this.deps.lease.release(this.holder, epoch).catch(() => false);
    this.deps.log.info({ epoch, released }, `stepped down (${reason}): lease released for a stand-by to take`);
    return released;
  }

  async leader(): Promise<{ address: string; epoch: number; expiresAt: Date } | null> {
    const row = await this.deps.lease.current();
    return row.live && row.address && row.expiresAt ? { address: row.address, epoch: row.epoch, expiresAt: row.expiresAt } : null;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.settled();
    if (this.role === 'leader') await this.stepDown('shutting down');
    this.clearWatchdog();
  }

  /** The exchange with the database in flight, if any, but no longer than one renew interval (a hung database must not hold a shutdown). */
  private async settled(): Promise<void> {
    if (!this.ticking) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.ticking.catch(() => {}), new Promise<void>((resolve) => (timer = setTimeout(resolve, this.deps.leaseRenewMs)))]);
    clearTimeout(timer);
  }

  private async tick(): Promise<void> {
    if (this.stopped) return;
    let nextMs = this.deps.leaseRenewMs;
    const ticking = this.role === 'leader' ? this.renew() : this.tryAcquire();
    this.ticking = ticking.then(() => {});
    try {
      nextMs = Math.min(nextMs, (await ticking) ?? nextMs);
    } finally {
      this.ticking = null;
      if (!this.stopped) {
        this.timer = setTimeout(() => void this.tick(), nextMs);
        this.timer.unref();
      }
    }
  }

  /** Milliseconds until the held lease expires (by the database's clock), a little after it; undefined when unknown. */
  private async untilExpiry(): Promise<number | undefined> {
    const remaining = await this.deps.lease.remainingMs().catch(() => null);
    return remaining === null ? undefined : Math.ceil(remaining) + EXPIRY_SLACK_MS;
  }

  private async tryAcquire(): Promise<number | undefined> {
    if (this.monotonic() < this.holdBackUntil) return;
    const sentAt = this.monotonic();
    let got: Awaited<ReturnType<LeaseStore['acquire']>>;
    try {
      got = await this.deps.lease.acquire(this.holder, this.deps.address(), this.deps.leaseTtlMs);
      this.database = 'up';
    } catch (e) {
      this.databaseDown(e);
      return;
    }
    if (this.stopped) return;
    // ha:L4: another replica holds the lease: try again as it expires rather than up to a renew interval later.
    if (!got) return this.untilExpiry();
    this.role = 'leader';
    this.epoch = got.epoch;
    this.takeovers++;
    this.extend(sentAt);
    this.epochAuthority = new EpochAuthority({
      holder: this.holder,
      epoch: got.epoch,
      monotonic: this.monotonic,
      deadline: () => this.validUntil,
      expired: () => this.canAct(),
    });
    this.deps.log.info({ epoch: got.epoch, holder: this.holder }, `leader at epoch ${got.epoch}`);
    this.emit();
  }

  private async renew(): Promise<void> {
    const epoch = this.epoch!;
    const sentAt = this.monotonic();
    let until: Date | null;
    try {
      until = await this.deps.lease.renew(this.holder, epoch, this.deps.leaseTtlMs, this.deps.address());
      this.database = 'up';
    } catch (e) {
      // A replica that lost its database stops acting at once: it cannot prove its lease
      // (ha:L3), and none of its writes could commit. It stands by, keeps serving the reads
      // it can, and tries to take the lease again each interval: when the database is back
      // it rejoins, as leader once the lease is free, or as stand-by.
      this.databaseDown(e);
      this.demote('database unreachable');
      return;
    }
    if (this.role !== 'leader' || this.epoch !== epoch) return;
    if (!until) this.demote('lease lost (taken over or expired)');
    else this.extend(sentAt);
  }

  /** The lease is good until ttl − margin after the renewal was sent: the database counted from later than that. */
  private extend(sentAt: number): void {
    this.validUntil = sentAt + this.deps.leaseTtlMs - safetyMarginMs(this.deps);
    this.clearWatchdog();
    this.watchdog = setTimeout(() => this.canAct(), Math.max(0, this.validUntil - this.monotonic()) + 1);
    this.watchdog.unref();
  }

  private demote(reason: string): void {
    if (this.role !== 'leader') return;
    const epoch = this.epoch;
    this.role = 'standby';
    this.epoch = null;
    this.validUntil = 0;
    this.clearWatchdog();
    // ha:L9: every request in flight under this epoch is aborted before anyone hears of the change (and so before any further request).
    this.epochAuthority?.end(reason);
    this.epochAuthority = null;
    this.deps.log.warn({ epoch, reason }, `no longer the leader (${reason}): every run halted, standing by`);
    this.emit();
  }

  private databaseDown(e: unknown): void {
    if (this.database === 'up') this.deps.log.warn({ err: e }, 'database unreachable: the lease cannot be renewed or taken');
    this.database = 'down';
  }

  private clearWatchdog(): void {
    if (this.watchdog) clearTimeout(this.watchdog);
    this.watchdog = null;
  }

  private emit(): void {
    const status = this.status();
    for (const listener of this.listeners) listener(status);
  }
}
