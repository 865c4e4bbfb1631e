import type { Observed } from './intent.ts';

/**
 * What the controller believes each pageserver holds for each shard (Neon's
 * `ObservedState`). In memory only: after a gateway restart it is read again from the
 * pageservers (start-up discovery, then each node's activation, neon:H4). A node with no
 * entry for a shard holds nothing that we know of; `unknown` means a call that may have
 * changed it failed or has not answered, or the node is offline.
 */
export class ObservedState {
  private readonly byShard = new Map<string, Map<string, Observed>>();

  of(shardId: string): ReadonlyMap<string, Observed> {
    return this.byShard.get(shardId) ?? new Map();
  }

  get(shardId: string, nodeId: string): Observed | undefined {
    return this.byShard.get(shardId)?.get(nodeId);
  }

  set(shardId: string, nodeId: string, observed: Observed): void {
    let m = this.byShard.get(shardId);
    if (!m) this.byShard.set(shardId, (m = new Map()));
    m.set(nodeId, observed);
  }

  /** neon:W10: the location's config no longer counts as the wanted one (a config change): the next reconcile sends it. */
  markConfStale(shardId: string, nodeId: string): void {
    const o = this.get(shardId, nodeId);
    if (o !== undefined && o !== 'unknown') this.set(shardId, nodeId, { ...o, conf: 'stale' });
  }

  delete(shardId: string, nodeId: string): void {
    this.byShard.get(shardId)?.delete(nodeId);
  }

  /** neon:H5a: every location on the node becomes unknown. */
  unknownOn(nodeId: string): void {
    for (const m of this.byShard.values()) if (m.has(nodeId)) m.set(nodeId, 'unknown');
  }

  /** neon:L4 (`force`): the node's locations are forgotten. */
  forgetNode(nodeId: string): void {
    for (const m of this.byShard.values()) m.delete(nodeId);
  }

  forgetShard(shardId: string): void {
    this.byShard.delete(shardId);
  }

  /** Shards the node holds a location of, as far as we know. */
  shardsOn(nodeId: string): string[] {
    return [...this.byShard].filter(([, m]) => m.has(nodeId)).map(([id]) => id);
  }
}
