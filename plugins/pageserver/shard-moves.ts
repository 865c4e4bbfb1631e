import type { CutOverResult } from '../../src/cluster/backend.ts';
import { BackendError } from '../../src/cluster/errors.ts';
import type { PlaceOptions, ShardPlacement } from '../../src/cluster/shard-control.ts';
import { compareNodeIds } from '../../src/domain/compare.ts';
import type { ShardIntent } from './intent.ts';
import { observedAs, OperationCancelled, ReconcileFailure, type ReconcileDeps } from './location-calls.ts';
import type { Reconciler } from './reconciler.ts';

interface Waiter {
  shardId: string;
  nodeId: string;
  resolve(): void;
  reject(e: Error): void;
}

/**
 * Intent changes that move a shard, and waiting until they hold. The intent is persisted
 * first, then reconciled. A failure before a generation was issued to the new node (neon:C1–C3)
 * puts the intent back: the shard stays where it was. A failure after it (neon:C4 on) rolls
 * forward: the intent stays, the background pass (or at once, after an operation's cancel)
 * completes it by a direct attach, and the promise resolves once the new node holds the
 * shard `AttachedSingle` (neon:C10, issue 11 point 1).
 */
export class ShardMoves {
  private readonly waiters = new Set<Waiter>();
  private readonly configWaiters = new Set<{ shard: ShardIntent; resolve(): void }>();

  constructor(
    private readonly deps: ReconcileDeps,
    private readonly reconciler: Reconciler,
    private readonly shardChanged: (shard: ShardIntent) => void,
  ) {
    reconciler.onSettled(() => this.recheck());
  }

  /** Looks at every waiter again (a reconcile ended, a node changed). */
  recheck(): void {
    for (const w of [...this.configWaiters]) {
      if (w.shard.tenantConfig === null) continue;
      this.configWaiters.delete(w);
      w.resolve();
    }
    for (const w of [...this.waiters]) {
      const shard = this.deps.intents.shards.get(w.shardId);
      if (!shard || shard.attachedNodeId !== w.nodeId) {
        this.waiters.delete(w);
        w.reject(
          new BackendError(
            'Conflict',
            `shard ${w.shardId} was placed elsewhere (now attached to node ${shard?.attachedNodeId ?? 'none'}) before node ${w.nodeId} held it`,
            { kind: 'shard', id: w.shardId },
          ),
        );
      } else if (this.holds(shard, w.nodeId)) {
        this.waiters.delete(w);
        w.resolve();
      } else if (!this.deps.nodes.available(w.nodeId)) {
        this.waiters.delete(w);
        w.reject(new BackendError('Unavailable', `node ${w.nodeId} went OFFLINE before it held shard ${w.shardId}`, { kind: 'node', id: w.nodeId }));
      }
    }
  }

  /** The node holds the shard `AttachedSingle` with the generation issued to it. */
  holds(shard: ShardIntent, nodeId: string): boolean {
    return shard.generationNodeId === nodeId && observedAs(this.deps, shard.id, nodeId, 'AttachedSingle', shard.generation);
  }

  whenAttached(shardId: string, nodeId: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.waiters.add({ shardId, nodeId, resolve, reject });
      this.recheck();
    });
  }

  /**
   * Sets the shard's placement and reconciles at high priority. Resolves once the attached
   * node holds it; rejects only when nothing was issued to it (the intent is then put back,
   * unless `keepIntent`).
   */
  async place(
    shard: ShardIntent,
    target: ShardPlacement,
    options: PlaceOptions & { priority?: 'normal' | 'high'; failover?: boolean } = {},
  ): Promise<CutOverResult> {
    if (shard.tenantConfig === null) await this.whenConfigKnown(shard, options);
    const before: ShardPlacement = { attachedNodeId: shard.attachedNodeId, secondaryNodeIds: [...shard.secondaryNodeIds] };
    const secondaryNodeIds = [...new Set(target.secondaryNodeIds)].filter((n) => n !== target.attachedNodeId).sort(compareNodeIds);
    await this.setPlacement(shard, { attachedNodeId: target.attachedNodeId, secondaryNodeIds });
    const dest = target.attachedNodeId;
    try {
      const out = await this.reconciler.run(shard.id, { priority: options.priority ?? 'high', ...options });
      if (this.holds(shard, dest) || shard.policy === 'STOP') return noteOf(out.notes);
      // Something else moved it meanwhile, or the reconcile was superseded: wait for it.
      await this.whenAttached(shard.id, dest);
      return noteOf(out.notes);
    } catch (e) {
      const failure = e instanceof ReconcileFailure ? e : null;
      if (failure && !failure.issued && options.failover && !this.reconciler.isClosed && shard.attachedNodeId === dest && this.deps.nodes.available(dest)) {
        // neon:H9: a failover never falls back onto the lost node. Whatever failed before the
        // generation (a database error, a superseding reconcile) leaves the intent on the target;
        // the newer reconcile or the background pass attaches it there.
        return this.rollForward(shard, dest, failure, options);
      }
      if (!failure?.issued) {
        // Nothing was issued to the new node: the shard stays on the old one.
        // (Not to a node that is gone meanwhile: a deleted one keeps nothing.)
        if (!options.keepIntent && shard.attachedNodeId === dest && before.attachedNodeId !== dest && this.deps.nodes.get(before.attachedNodeId)) {
          await this.setPlacement(shard, before);
          this.reconciler.spawn(shard.id, `re-establishing node ${before.attachedNodeId}:`);
        }
        throw e;
      }
      return this.rollForward(shard, dest, failure, options);
    }
  }

  /** neon:W10: a move waits, named on its step, until the tenant's config is read from a pageserver that holds it (its activation). */
  private async whenConfigKnown(shard: ShardIntent, options: PlaceOptions): Promise<void> {
    options.onProgress?.({
      phase: 'TENANT_CONFIG',
      description: `waiting for tenant ${shard.tenantId}'s config: no pageserver holding it has answered since start-up`,
      nodeId: null,
    });
    await new Promise<void>((resolve, reject) => {
      const waiter = { shard, resolve };
      this.configWaiters.add(waiter);
      options.signal?.addEventListener('abort', () => {
        this.configWaiters.delete(waiter);
        reject(new BackendError('Unavailable', `cancelled while waiting for tenant ${shard.tenantId}'s config`, { kind: 'shard', id: shard.id }));
      });
    });
  }

  private async rollForward(shard: ShardIntent, dest: string, failure: ReconcileFailure, options: PlaceOptions): Promise<CutOverResult> {
    options.onProgress?.({
      phase: 'ROLLING_FORWARD',
      description: `rolling forward to node ${dest} after: ${failure.message}`,
      nodeId: dest,
    });
    this.deps.log.warn({ shard: shard.id, node: dest, err: failure }, `shard ${shard.id}: ${failure.message}; rolling forward to node ${dest}`);
    if (failure.cause instanceof OperationCancelled) {
      // The operation's cancel: complete what was issued now, by a direct attach.
      this.reconciler.spawn(shard.id, 'cancelled operation', { priority: 'high' });
    }
    await this.whenAttached(shard.id, dest);
    return { note: `rolled forward: ${failure.message}` };
  }

  private async setPlacement(shard: ShardIntent, p: ShardPlacement): Promise<void> {
    if (shard.attachedNodeId === p.attachedNodeId && shard.secondaryNodeIds.join() === p.secondaryNodeIds.join()) return;
    await this.deps.intents.update(shard, p);
    this.shardChanged(shard);
  }
}

function noteOf(notes: string[]): CutOverResult {
  return notes.length ? { note: notes.join('; ') } : {};
}
