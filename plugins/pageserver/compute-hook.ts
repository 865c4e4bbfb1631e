import type { LeaseAuthority } from '../../src/cluster/authority.ts';
import type { Clock } from '../../src/cluster/clock.ts';
import { SENDER_HEADER } from '../../src/cluster/plugin.ts';
import { HOOK, neonBackoffMs } from './neon-retry.ts';
import { sleepUnless } from './sleep.ts';

/** What one notify call came to (neon:C13). */
export type NotifyOutcome =
  | { kind: 'ok' }
  /** No hook is configured (the Decision under neon:C7): nothing was sent. */
  | { kind: 'skipped' }
  /** A sharded tenant with a shard that has no node yet: nothing to send, counts as success (neon:C12). */
  | { kind: 'notReady' }
  | { kind: 'busy' }
  | { kind: 'fatal'; status: number }
  | { kind: 'unexpected'; status: number }
  /** Retries used up on 429 / 502 / 503 / 504 / transport errors. */
  | { kind: 'failed'; detail: string }
  | { kind: 'cancelled' };

export const notifySucceeded = (o: NotifyOutcome) => o.kind === 'ok' || o.kind === 'skipped' || o.kind === 'notReady';

export function describeNotify(o: NotifyOutcome): string {
  switch (o.kind) {
    case 'ok':
      return 'notified';
    case 'skipped':
      return 'no compute hook configured: compute not notified';
    case 'notReady':
      return 'not every shard of the tenant has a node yet: not notified';
    case 'busy':
      return 'compute notification refused (423), retrying';
    case 'fatal':
      return `compute notification refused (${o.status})`;
    case 'unexpected':
      return `compute notification answered ${o.status}`;
    case 'failed':
      return `compute notification failed: ${o.detail}`;
    case 'cancelled':
      return 'compute notification cancelled';
  }
}

export interface ShardUpdate {
  tenantId: string;
  shardNumber: number;
  shardCount: number;
  stripeSize: number;
  nodeId: string;
  preferredZone: string | null;
}

interface TenantState {
  shardCount: number;
  stripeSize: number;
  preferredZone: string | null;
  nodes: Map<number, number>;
  /** The body last answered 2xx (not re-sent while it stays the same). */
  applied: string | null;
  /** One send at a time for the tenant (Neon's per-tenant send lock). */
  sending: Semaphore;
}

/** A small counting semaphore: at most `limit` holders at once, the rest wait in order. */
class Semaphore {
  private held = 0;
  private readonly waiters: (() => void)[] = [];
  constructor(private readonly limit: number) {}
  async acquire(): Promise<() => void> {
    if (this.held >= this.limit) await new Promise<void>((resolve) => this.waiters.push(resolve));
    this.held++;
    return () => {
      this.held--;
      this.waiters.shift()?.();
    };
  }
}

/**
 * Neon's `ComputeHook` (compute_hook.rs) for the `notify-attach` hook: one body per tenant
 * naming the last known node of every shard (neon:C12), Neon's answer handling and
 * retries (neon:C13), at most 32 calls in flight with the permit held across retries.
 */
export class ComputeHook {
  private readonly tenants = new Map<string, TenantState>();
  private readonly permits = new Semaphore(HOOK.concurrency);
  private active = 0;

  constructor(
    private readonly config: {
      clock: Clock;
      /** Neon's `--control-plane-url`; absent: no hook. */
      url: string | undefined;
      token: string | undefined;
      log: { info(obj: object, msg?: string): void; warn(obj: object, msg?: string): void };
      /** ha:L8: compute notifications only from the leader, checked as each is sent; a stand-by's is cancelled. Absent: always. */
      mayAct?: () => boolean;
      /** ha:L3, ha:L9: the authority each notification is sent under (checked first, named, its signal aborts it). Absent: not named. */
      authority?: () => LeaseAuthority;
    },
  ) {}

  get configured(): boolean {
    return this.config.url !== undefined;
  }

  /** Whether notifications carry a bearer token (a rehearsal's snapshot says so, never the token). */
  get tokenRequired(): boolean {
    return this.config.token !== undefined;
  }

  /** Requests sent and not yet answered. */
  get pending(): number {
    return this.active;
  }

  /**
   * Learns where a shard is without sending anything: at start every shard of the intent, so
   * that the first notification of a sharded tenant after a restart names all its shards
   * (otherwise it would be "not ready" and count as sent, neon:C12). Neon's startup reconcile
   * does the same by notifying every tenant; here the next notification of each sends it.
   */
  remember(update: ShardUpdate): void {
    this.body(update);
  }

  async notify(update: ShardUpdate, signal?: AbortSignal): Promise<NotifyOutcome> {
    if (!this.config.url) return { kind: 'skipped' };
    if (this.body(update) === null) return { kind: 'notReady' };
    const state = this.tenants.get(update.tenantId)!;
    // neon:C12: one send at a time per tenant, its body read once it may go, as Neon's send lock
    // does: two sends in flight could be answered in the other order and leave the computes on
    // the older view (pageserver crash campaign, seed 1 round 37).
    const unlock = await state.sending.acquire();
    try {
      const body = this.render(state, update.tenantId);
      if (body === null) return { kind: 'notReady' };
      if (state.applied === body) return { kind: 'ok' };
      const release = await this.permits.acquire();
      try {
        const outcome = await this.send(body, signal);
        if (outcome.kind === 'ok') state.applied = body;
        return outcome;
      } finally {
        release();
      }
    } finally {
      unlock();
    }
  }

  /** The tenant's body with this shard's new node, or null while a shard of a sharded tenant has none. */
  private body(u: ShardUpdate): string | null {
    let state = this.tenants.get(u.tenantId);
    if (!state || state.shardCount !== u.shardCount) {
      state = {
        shardCount: u.shardCount,
        stripeSize: u.stripeSize,
        preferredZone: u.preferredZone,
        nodes: new Map(),
        applied: null,
        sending: new Semaphore(1),
      };
      this.tenants.set(u.tenantId, state);
    }
    state.nodes.set(u.shardNumber, Number(u.nodeId));
    state.preferredZone = u.preferredZone;
    state.stripeSize = u.stripeSize;
    return this.render(state, u.tenantId);
  }

  /** The tenant's body as the hook knows it now, or null while a shard of a sharded tenant has no node. */
  private render(state: TenantState, tenantId: string): string | null {
    if (state.nodes.size < Math.max(1, state.shardCount)) return null;
    const shards = [...state.nodes].sort(([a], [b]) => a - b).map(([shard_number, node_id]) => ({ node_id, shard_number }));
    return JSON.stringify({
      tenant_id: tenantId,
      preferred_az: state.preferredZone,
      stripe_size: state.shardCount <= 1 ? null : state.stripeSize,
      shards,
    });
  }

  private async send(body: string, caller?: AbortSignal): Promise<NotifyOutcome> {
    const url = `${this.config.url!.replace(/\/+$/, '')}/notify-attach`;
    // ha:L9: the epoch that issued the notification, for all its retries; its end cancels them.
    const authority = this.config.authority?.();
    const signal = authority && caller ? AbortSignal.any([caller, authority.signal]) : (authority?.signal ?? caller);
    let lastFailure = '';
    for (let attempt = 1; attempt <= HOOK.retries + 1; attempt++) {
      if (signal?.aborted) return { kind: 'cancelled' };
      const result = await this.once(url, body, signal, authority);
      if (typeof result === 'number') {
        if (result >= 200 && result < 300) return { kind: 'ok' };
        if (result === 423) return { kind: 'busy' };
        if (result === 400 || result === 401 || result === 403) return { kind: 'fatal', status: result };
        if (result !== 429 && result !== 502 && result !== 503 && result !== 504) return { kind: 'unexpected', status: result };
        lastFailure = `answered ${result}`;
        if (result === 429 && !(await this.pause(HOOK.slowdownMs, signal))) return { kind: 'cancelled' };
      } else if (result === 'cancelled') {
        return { kind: 'cancelled' };
      } else {
        lastFailure = result;
      }
      if (attempt === 4) this.config.log.warn({ url, failure: lastFailure }, `compute notification still failing after 3 retries: ${lastFailure}`);
      const wait = neonBackoffMs(attempt);
      if (wait > 0 && attempt <= HOOK.retries && !(await this.pause(wait, signal))) return { kind: 'cancelled' };
    }
    return { kind: 'failed', detail: `${lastFailure} (${HOOK.retries + 1} attempts)` };
  }

  /** False when a cancel ended the wait. */
  private pause(ms: number, signal: AbortSignal | undefined): Promise<boolean> {
    return sleepUnless(this.config.clock, ms, signal).then(
      () => true,
      () => false,
    );
  }

  /** One request: its status, `cancelled`, or why it failed in transport. */
  private async once(url: string, body: string, signal: AbortSignal | undefined, authority: LeaseAuthority | undefined): Promise<number | string> {
    if (!(this.config.mayAct?.() ?? true) || authority?.leads === false) return 'cancelled';
    try {
      authority?.assertValid();
    } catch {
      return 'cancelled';
    }
    const controller = new AbortController();
    const onAbort = () => controller.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    let timedOut = false;
    const cancelTimer = this.config.clock.setTimer(HOOK.requestTimeoutMs, () => {
      timedOut = true;
      controller.abort();
    });
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (this.config.token) headers.authorization = `Bearer ${this.config.token}`;
    if (authority) headers[SENDER_HEADER] = authority.tag();
    this.active++;
    try {
      const res = await fetch(url, { method: 'PUT', headers, body, signal: controller.signal });
      await res.text();
      return res.status;
    } catch (e) {
      if (timedOut) return `timed out after ${HOOK.requestTimeoutMs} ms`;
      if (signal?.aborted) return 'cancelled';
      return (e as Error).message;
    } finally {
      this.active--;
      cancelTimer();
      signal?.removeEventListener('abort', onAbort);
    }
  }
}
