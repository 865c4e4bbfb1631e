import { underAuthority } from '../../src/cluster/authority.ts';
import { BackendError } from '../../src/cluster/errors.ts';
import type { CutOverProgress } from '../../src/cluster/shard-control.ts';
import { describeNotify, notifySucceeded } from './compute-hook.ts';
import { PageserverRequestError } from './http-client.ts';
import type { ShardIntent } from './intent.ts';
import { liveMigrate } from './live-migration.ts';
import {
  Cancelled,
  confHeld,
  confKey,
  notifyCompute,
  observedAs,
  putLocation,
  reasonOf,
  ReconcileFailure,
  ReconcileRun,
  type ReconcileDeps,
} from './location-calls.ts';
import { CALLS, RECONCILER_CONCURRENCY } from './neon-retry.ts';
import type { LocationConfig } from './wire.ts';

export interface ReconcileOptions {
  /** neon:H5: user requests and migrations run high; background and failover reconciles normal. */
  priority?: 'normal' | 'high';
  /** neon:C3 bounds for this reconcile's warm-up. */
  warmup?: { timeoutMs: number; requestTimeoutMs: number };
  onProgress?: (progress: CutOverProgress) => void;
  /** An operation's cancel: ends the waits of neon:C6 and neon:C7 (neon:C11). */
  signal?: AbortSignal;
}

export interface ReconcileOutcome {
  notes: string[];
}

interface InFlight {
  controller: AbortController;
  promise: Promise<ReconcileOutcome>;
}

/**
 * neon:H5's reconcile limits: 128 normal and 256 high-priority units; high may borrow
 * normal units; the rest wait in order.
 */
class ReconcileUnits {
  private normal = 0;
  private high = 0;
  private readonly waiting: { priority: 'normal' | 'high'; go: () => void }[] = [];

  async acquire(priority: 'normal' | 'high'): Promise<() => void> {
    const take = (): (() => void) | null => {
      if (priority === 'high' && this.high < RECONCILER_CONCURRENCY.high) {
        this.high++;
        return () => this.release('high');
      }
      if (this.normal < RECONCILER_CONCURRENCY.normal) {
        this.normal++;
        return () => this.release('normal');
      }
      return null;
    };
    for (;;) {
      const release = take();
      if (release) return release;
      await new Promise<void>((go) => this.waiting.push({ priority, go }));
    }
  }

  private release(pool: 'normal' | 'high'): void {
    if (pool === 'high') this.high--;
    else this.normal--;
    for (const w of this.waiting.splice(0)) w.go();
  }
}

/**
 * Drives each shard's observed locations to its intent (Neon's `Reconciler::reconcile`):
 * refresh an unknown attached location, the live migration when its conditions hold
 * (neon:C1–C9), else a direct attach (a new generation unless already exactly as wanted,
 * `AttachedSingle` with `?lazy=true`, one notification, neon:C14), then secondaries and
 * detaches. One reconcile per shard at a time: a newer one cancels and joins the old
 * (neon:C11). A background pass retries what is left every `backgroundIntervalMs` (neon:C14).
 */
export class Reconciler {
  private readonly inFlight = new Map<string, InFlight>();
  private readonly units = new ReconcileUnits();
  private readonly settledListeners = new Set<(shardId: string) => void>();
  private cancelBackground: (() => void) | undefined;
  private closed = false;

  constructor(
    private readonly deps: ReconcileDeps,
    private readonly backgroundIntervalMs: number,
  ) {}

  get isClosed(): boolean {
    return this.closed;
  }

  reconciling(shardId: string): boolean {
    return this.inFlight.has(shardId);
  }

  /** Hears the end of every reconcile (waiters check the shard again). */
  onSettled(listener: (shardId: string) => void): () => void {
    this.settledListeners.add(listener);
    return () => this.settledListeners.delete(listener);
  }

  /** Starts a reconcile of the shard, cancelling (and waiting for) the one in flight. */
  run(shardId: string, options: ReconcileOptions = {}): Promise<ReconcileOutcome> {
    if (this.closed) return Promise.reject(new BackendError('Unavailable', 'the pageserver backend is closed'));
    const previous = this.inFlight.get(shardId);
    previous?.controller.abort(new Error('superseded by a newer reconcile of the shard'));
    const controller = new AbortController();
    const entry: InFlight = { controller, promise: Promise.resolve({ notes: [] }) };
    const reconcile = async () => {
      if (previous) await previous.promise.catch(() => {});
      const release = await this.units.acquire(options.priority ?? 'normal');
      try {
        return await this.reconcileOnce(shardId, controller.signal, options);
      } finally {
        release();
      }
    };
    // ha:L9: a background reconcile keeps the epoch it was started under: after a step-down it sends nothing more, reads included.
    const authority = this.deps.authority?.();
    // ...and it ends with that epoch, rather than retrying refused requests while it holds the
    // shard, which would keep a later epoch's reconciles of the shard waiting behind it.
    const epochEnded = () => controller.abort(authority?.signal.reason ?? new Error('stepped down'));
    if (authority?.signal.aborted) epochEnded();
    else authority?.signal.addEventListener('abort', epochEnded, { once: true });
    entry.promise = authority ? underAuthority(authority, reconcile) : reconcile();
    this.inFlight.set(shardId, entry);
    void entry.promise
      .catch(() => {})
      .finally(() => {
        authority?.signal.removeEventListener('abort', epochEnded);
        if (this.inFlight.get(shardId) === entry) this.inFlight.delete(shardId);
        for (const l of this.settledListeners) l(shardId);
      });
    return entry.promise;
  }

  /** A reconcile nobody waits for (`why` names who started it): a failure is logged, a cancel is not (the background pass retries either). */
  spawn(shardId: string, why: string, options: ReconcileOptions = {}): void {
    this.run(shardId, options).catch((e: unknown) => {
      if (e instanceof ReconcileFailure && e.cancelled) return;
      this.deps.log.warn({ shard: shardId, err: e }, `${why} reconcile of shard ${shardId} failed: ${describe(e)}`);
    });
  }

  /** neon:W6: fires the reconcile's cancel and waits for it to stop; false when none ran. */
  async cancel(shardId: string, why = 'cancelled by cancel_reconcile'): Promise<boolean> {
    const entry = this.inFlight.get(shardId);
    if (!entry) return false;
    entry.controller.abort(new Error(why));
    await entry.promise.catch(() => {});
    return true;
  }

  /** Whether observed and intent differ, a location is unknown on an available node, or a notification is pending (Neon's `get_reconcile_needed`). */
  needsReconcile(shard: ShardIntent): boolean {
    const { observed, nodes } = this.deps;
    if (shard.pendingComputeNotification) return true;
    // neon:W10: nothing can be sent while the tenant's config is unknown.
    if (shard.tenantConfig === null) return false;
    const here = observed.of(shard.id);
    for (const [nodeId, o] of here) if (o === 'unknown' && nodes.available(nodeId)) return true;
    const held = (nodeId: string, mode: 'AttachedSingle' | 'Secondary', generation?: number) =>
      observedAs(this.deps, shard.id, nodeId, mode, generation) && confHeld(this.deps, shard, nodeId);
    if (nodes.available(shard.attachedNodeId) && !held(shard.attachedNodeId, 'AttachedSingle', shard.generation)) return true;
    for (const s of shard.secondaryNodeIds) if (nodes.available(s) && !held(s, 'Secondary')) return true;
    for (const nodeId of here.keys()) {
      if (nodeId !== shard.attachedNodeId && !shard.secondaryNodeIds.includes(nodeId) && nodes.available(nodeId)) return true;
    }
    return false;
  }

  /** neon:C14: every `backgroundIntervalMs`, shards that need it and have no reconcile in flight (not Pause or Stop, neon:W8). */
  startBackground(): void {
    if (this.closed) return;
    this.cancelBackground = this.deps.clock.setTimer(this.backgroundIntervalMs, () => {
      this.backgroundPass();
      this.startBackground();
    });
  }

  backgroundPass(): void {
    // ha:L8: a stand-by reconciles nothing: its copy of the intent may be old, and the leader acts.
    if (!(this.deps.mayAct?.() ?? true)) return;
    for (const shard of this.deps.intents.sortedShards()) {
      if (shard.policy === 'PAUSE' || shard.policy === 'STOP' || this.inFlight.has(shard.id)) continue;
      if (!this.needsReconcile(shard)) continue;
      this.spawn(shard.id, 'background');
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.cancelBackground?.();
    for (const e of this.inFlight.values()) e.controller.abort(new Error('the pageserver backend is closed'));
    await Promise.allSettled([...this.inFlight.values()].map((e) => e.promise));
  }

  private async reconcileOnce(shardId: string, cancel: AbortSignal, options: ReconcileOptions): Promise<ReconcileOutcome> {
    const shard = this.deps.intents.shards.get(shardId);
    if (!shard) return { notes: [] };
    const run = new ReconcileRun(cancel, options.signal, options.onProgress);
    if (shard.policy === 'STOP') {
      // neon:W8: a stopped shard gets no pageserver calls at all.
      run.notes.push('shard policy STOP: no pageserver calls');
      return { notes: run.notes };
    }
    try {
      const refreshed = await this.refreshAttached(shard, run);
      await this.maybeLiveMigrate(shard, run, options);
      await this.attach(shard, run, refreshed);
      await this.secondariesAndDetaches(shard, run);
      return { notes: run.notes };
    } catch (e) {
      const cancelled = e instanceof Cancelled || (e instanceof PageserverRequestError && e.cancelled);
      const message = cancelled
        ? `reconcile of shard ${shardId} cancelled${run.phase ? ` in ${run.phase}` : ''}: ${e instanceof Cancelled ? e.message : reasonOf(cancel)}`
        : `reconcile of shard ${shardId} failed${run.phase ? ` in ${run.phase}` : ''}: ${describe(e)}`;
      throw new ReconcileFailure(message, shardId, run.issued, run.phase, e, cancelled);
    }
  }

  /** Neon's `maybe_refresh_observed`: an unknown attached location is read before acting, to spare a spurious generation. */
  private async refreshAttached(shard: ShardIntent, run: ReconcileRun): Promise<boolean> {
    const { observed, nodes, http } = this.deps;
    const nodeId = shard.attachedNodeId;
    if (observed.get(shard.id, nodeId) !== 'unknown' || !nodes.available(nodeId)) return false;
    const node = nodes.get(nodeId)!;
    try {
      const { json } = await http.request<LocationConfig | null>(node, 'GET', `/v1/location_config/${shard.id}`, { ...CALLS.refresh, signal: run.cancel });
      if (json === null) observed.set(shard.id, nodeId, 'unknown');
      else observed.set(shard.id, nodeId, { mode: json.mode, generation: json.generation, conf: confKey(json.tenant_conf) });
    } catch (e) {
      if (e instanceof PageserverRequestError && e.status === 404) observed.delete(shard.id, nodeId);
      else throw e;
    }
    return true;
  }

  /** The live path (Neon's `maybe_live_migrate`): D (the intended attached node) observed Secondary or holding nothing, and an available node observed `AttachedSingle`. */
  private async maybeLiveMigrate(shard: ShardIntent, run: ReconcileRun, options: ReconcileOptions): Promise<void> {
    const { observed, nodes } = this.deps;
    const dest = shard.attachedNodeId;
    const atDest = observed.get(shard.id, dest);
    if (atDest !== undefined && !(atDest !== 'unknown' && atDest.mode === 'Secondary')) return;
    const origin = [...observed.of(shard.id)].find(
      ([nodeId, o]) => nodeId !== dest && o !== 'unknown' && o.mode === 'AttachedSingle' && nodes.available(nodeId),
    )?.[0];
    if (!origin) return;
    if (!nodes.available(dest)) throw new BackendError('Unavailable', `pageserver ${dest} is OFFLINE`, { kind: 'node', id: dest });
    // neon:C15: a destination holding nothing is not given a secondary to warm first: the
    // cut-over attaches it AttachedMulti straight away (a pageserver takes it on an empty slot).
    // Warming first is prewarm's job (neon:W2), which builds the secondary while the origin
    // is still AttachedSingle.
    await liveMigrate(this.deps, run, shard, origin, dest, options.warmup ?? this.deps.warmup);
  }

  /** The general attached pass (direct attach) and neon:C14's pending notification, which must succeed before secondaries and detaches. */
  private async attach(shard: ShardIntent, run: ReconcileRun, refreshed: boolean): Promise<void> {
    const { intents } = this.deps;
    const dest = shard.attachedNodeId;
    const exact = observedAs(this.deps, shard.id, dest, 'AttachedSingle', shard.generation) && shard.generationNodeId === dest;
    if (exact && !confHeld(this.deps, shard, dest)) {
      // neon:W10: the same location with the tenant's config as stored now; no new generation.
      run.progress('DIRECT_ATTACH', `sending tenant ${shard.tenantId}'s config to node ${dest}`, dest);
      await putLocation(this.deps, run, shard, dest, 'AttachedSingle', shard.generation);
    }
    if (exact) {
      if (refreshed || shard.pendingComputeNotification) await this.notifyOrFail(shard, run);
      return;
    }
    if (!this.deps.nodes.available(dest))
      throw new BackendError('Unavailable', `pageserver ${dest} is OFFLINE: shard ${shard.id} cannot be attached there`, { kind: 'node', id: dest });
    await this.staleOtherSingles(shard, run);
    run.progress('DIRECT_ATTACH', `attaching node ${dest} AttachedSingle`, dest);
    const generation = await intents.issueGeneration(shard, dest);
    run.issued = true;
    await putLocation(this.deps, run, shard, dest, 'AttachedSingle', generation, { lazy: true });
    this.deps.log.info({ shard: shard.id, node: dest, generation }, `shard ${shard.id} attached to node ${dest} (generation ${generation})`);
    await this.notifyOrFail(shard, run);
  }

  /**
   * neon:C1's order kept on the direct path: a reachable node still `AttachedSingle` (a cut-over
   * a killed gateway left with the destination `AttachedMulti`) goes `AttachedStale` before a
   * newer generation is attached anywhere, so no two pageservers hold the shard
   * `AttachedSingle` at once. An unreachable one keeps its stale attachment (neon:H5).
   */
  private async staleOtherSingles(shard: ShardIntent, run: ReconcileRun): Promise<void> {
    const { observed, nodes } = this.deps;
    for (const [nodeId, o] of [...observed.of(shard.id)]) {
      if (nodeId === shard.attachedNodeId || o === 'unknown' || o.mode !== 'AttachedSingle' || !nodes.available(nodeId)) continue;
      run.progress('ORIGIN_STALE', `setting node ${nodeId} AttachedStale before attaching node ${shard.attachedNodeId}`, nodeId);
      await putLocation(this.deps, run, shard, nodeId, 'AttachedStale', o.generation, { flushMs: CALLS.flushMs });
    }
  }

  private async notifyOrFail(shard: ShardIntent, run: ReconcileRun): Promise<void> {
    run.progress('COMPUTE_NOTIFY', `notifying compute of node ${shard.attachedNodeId}`, shard.attachedNodeId);
    const outcome = await notifyCompute(this.deps, shard, run.cancel);
    if (outcome.kind === 'skipped') run.notes.push('compute notification skipped: no compute hook configured (controlPlane)');
    if (notifySucceeded(outcome)) {
      if (shard.pendingComputeNotification) await this.deps.intents.update(shard, { pendingComputeNotification: false });
      return;
    }
    run.checkCancelled();
    if (!shard.pendingComputeNotification) await this.deps.intents.update(shard, { pendingComputeNotification: true });
    run.notes.push(`${describeNotify(outcome)}: the notification is pending`);
    throw new BackendError(
      'Transient',
      `${describeNotify(outcome)}; shard ${shard.id} stays attached to node ${shard.attachedNodeId} with the notification pending`,
      {
        kind: 'shard',
        id: shard.id,
      },
    );
  }

  /** Intended secondaries `Secondary {warm: true}`, other locations `Detached`; unavailable nodes are skipped and left unknown. */
  private async secondariesAndDetaches(shard: ShardIntent, run: ReconcileRun): Promise<void> {
    const { observed, nodes } = this.deps;
    const changes: { nodeId: string; mode: 'Secondary' | 'Detached' }[] = [];
    for (const nodeId of shard.secondaryNodeIds) {
      if (observedAs(this.deps, shard.id, nodeId, 'Secondary') && confHeld(this.deps, shard, nodeId)) continue;
      if (nodes.available(nodeId)) changes.push({ nodeId, mode: 'Secondary' });
      else if (nodes.get(nodeId)) observed.set(shard.id, nodeId, 'unknown');
    }
    for (const nodeId of [...observed.of(shard.id).keys()]) {
      if (nodeId === shard.attachedNodeId || shard.secondaryNodeIds.includes(nodeId)) continue;
      if (!nodes.get(nodeId)) observed.delete(shard.id, nodeId);
      else changes.push({ nodeId, mode: 'Detached' });
    }
    let first: unknown = null;
    for (const c of changes) {
      run.checkCancelled();
      try {
        await putLocation(this.deps, run, shard, c.nodeId, c.mode, null);
      } catch (e) {
        first ??= e;
      }
    }
    if (first) throw first;
  }
}

const describe = (e: unknown) => (e instanceof Error ? e.message : String(e));
