import type { PluginStore } from '../../src/cluster/plugin-store.ts';
import { describeSchemaIssues } from '../../src/cluster/state-file.ts';
import { intentJson, nodeJson, storedIntentSchema, storedNodeSchema, type NodeRecord, type ShardIntent } from './intent.ts';

class PageserverStoreError extends Error {
  override readonly name = 'PageserverStoreError';
}

const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/**
 * The controller's intent (registered nodes, each shard's placement and generation) in
 * the gateway's database, with a copy in memory for reads. Every change is written to the
 * database before the copy changes and before anything that depends on it is sent; a
 * generation is issued by the database's own atomic increment (neon:C4).
 */
export class IntentStore {
  readonly shards = new Map<string, ShardIntent>();
  readonly nodes = new Map<string, NodeRecord>();
  /** Tombstoned node ids with their last registration (neon:L7). */
  readonly tombstones = new Map<string, NodeRecord>();

  /** Where writes go: the unfenced start-up store until `started()`, then the leader's fenced one (ha:L3). */
  private store: PluginStore;

  private constructor(private readonly leaderStore: PluginStore) {
    this.store = leaderStore.forStartUp();
  }

  static async load(store: PluginStore): Promise<IntentStore> {
    const s = new IntentStore(store);
    for (const row of await store.nodes()) {
      const parsed = storedNodeSchema.safeParse(row.attrs);
      if (!parsed.success) throw new PageserverStoreError(`stored pageserver ${row.id} is unreadable (${describeSchemaIssues(parsed.error)})`);
      const record: NodeRecord = { id: row.id, ...parsed.data };
      (row.lifecycle === 'deleted' ? s.tombstones : s.nodes).set(row.id, record);
    }
    for (const row of await store.shards()) {
      const parsed = storedIntentSchema.safeParse(row.intent);
      if (!parsed.success) throw new PageserverStoreError(`stored shard ${row.id} is unreadable (${describeSchemaIssues(parsed.error)})`);
      s.shards.set(row.id, {
        id: row.id,
        generation: row.generation,
        generationNodeId: row.generationNodeId,
        ...parsed.data,
        tenantConfig: parsed.data.tenantConfig ?? null,
      });
    }
    return s;
  }

  /**
   * ha:L3: start-up (seed nodes, the legacy import, discovery's raises and adoptions) is over;
   * from now on every write is the leader's background work or an action, fenced by its epoch
   * (refused with `PluginStoreFencedError` on a stand-by or a deposed leader).
   */
  started(): void {
    this.store = this.leaderStore;
  }

  /**
   * ha:L8: the copy in memory made again from the database, in place (the shard objects others
   * hold stay the same objects): a stand-by taking over acts on what the old leader wrote.
   */
  async reload(): Promise<void> {
    const fresh = await IntentStore.load(this.leaderStore);
    for (const id of [...this.shards.keys()]) if (!fresh.shards.has(id)) this.shards.delete(id);
    for (const [id, shard] of fresh.shards) {
      const mine = this.shards.get(id);
      if (mine) Object.assign(mine, shard);
      else this.shards.set(id, shard);
    }
    for (const [mine, theirs] of [
      [this.nodes, fresh.nodes],
      [this.tombstones, fresh.tombstones],
    ] as const) {
      mine.clear();
      for (const [id, record] of theirs) mine.set(id, record);
    }
  }

  get meta(): Pick<PluginStore, 'getMeta' | 'setMeta'> {
    return this.store;
  }

  sortedShards(): ShardIntent[] {
    return [...this.shards.values()].sort(byId);
  }

  /** New shards (adopted or imported), with the generations they come with. */
  async create(shards: ShardIntent[]): Promise<void> {
    await this.store.createShards(shards.map((s) => ({ id: s.id, generation: s.generation, generationNodeId: s.generationNodeId, intent: intentJson(s) })));
    for (const s of shards) if (!this.shards.has(s.id)) this.shards.set(s.id, structuredClone(s));
  }

  /** Writes `change` to the shard's intent: the database first, then the copy. */
  async update(shard: ShardIntent, change: Partial<Omit<ShardIntent, 'id' | 'generation' | 'generationNodeId'>>): Promise<void> {
    const next = { ...shard, ...change };
    await this.store.putIntents([{ id: shard.id, intent: intentJson(next) }]);
    Object.assign(shard, change);
  }

  /** neon:W10: the same change to several shards (a tenant's), in one write. */
  async updateMany(shards: readonly ShardIntent[], change: Partial<Omit<ShardIntent, 'id' | 'generation' | 'generationNodeId'>>): Promise<void> {
    await this.store.putIntents(shards.map((s) => ({ id: s.id, intent: intentJson({ ...s, ...change }) })));
    for (const s of shards) Object.assign(s, change);
  }

  /** neon:L9: the generations as the database holds them, read with the lease check. */
  leaderGenerations(shardIds: readonly string[]): Promise<Map<string, number>> {
    return this.store.leaderGenerations(shardIds);
  }

  /** neon:C4: generation + 1, issued to `nodeId`, committed before it is returned. */
  async issueGeneration(shard: ShardIntent, nodeId: string): Promise<number> {
    const generation = await this.store.incrementGeneration(shard.id, nodeId);
    shard.generation = generation;
    shard.generationNodeId = nodeId;
    return generation;
  }

  /** A generation seen on a pageserver was issued: never issue it again. */
  async raiseGeneration(shard: ShardIntent, atLeast: number): Promise<void> {
    if (atLeast <= shard.generation) return;
    shard.generation = await this.store.raiseGeneration(shard.id, atLeast);
  }

  /** neon:L3: one transaction gives every shard whose generation `nodeId` holds a new one. */
  async reAttach(nodeId: string): Promise<Map<string, number>> {
    const bumped = await this.store.reAttach(nodeId);
    for (const { id, generation } of bumped) {
      const shard = this.shards.get(id);
      if (shard) {
        shard.generation = generation;
        shard.generationNodeId = nodeId;
      }
    }
    return new Map(bumped.map((b) => [b.id, b.generation]));
  }

  async putNode(record: NodeRecord): Promise<void> {
    await this.store.putNode({ id: record.id, lifecycle: 'active', attrs: nodeJson(record) });
    this.tombstones.delete(record.id);
    this.nodes.set(record.id, record);
  }

  async tombstone(nodeId: string): Promise<void> {
    const record = this.nodes.get(nodeId) ?? this.tombstones.get(nodeId);
    if (!record) return;
    await this.store.putNode({ id: nodeId, lifecycle: 'deleted', attrs: nodeJson(record) });
    this.nodes.delete(nodeId);
    this.tombstones.set(nodeId, record);
  }

  async removeTombstone(nodeId: string): Promise<void> {
    await this.store.removeNode(nodeId);
    this.tombstones.delete(nodeId);
  }
}
