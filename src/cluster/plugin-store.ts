import { BackendError } from './errors.ts';

/**
 * The gateway's database as a plugin sees it: where a plugin that acts as a controller
 * (the pageserver plugin) keeps its registered nodes, each shard's intent and the
 * generation last issued for it, so that none of it lives in a plugin's memory or files
 * (neon:C4, neon:L1, neon:L3). The gateway implements it on its own database (src/store);
 * plugins see only this interface.
 *
 * Deliberately small and dialect-neutral: every method is one statement or one
 * transaction, the records are JSON beside the two columns that must change atomically
 * (`generation`, `generationNodeId`), and nothing assumes SQLite.
 */

/** A node a plugin registered. `deleted` is a tombstone (neon:L4, neon:L7): the id may not come back. */
export interface StoredNode {
  id: string;
  lifecycle: 'active' | 'deleted';
  /** The plugin's own fields (addresses, zone), validated by the plugin when read. */
  attrs: Record<string, unknown>;
}

/** A shard's intent. `generation` and `generationNodeId` change only through the generation methods. */
export interface StoredShard {
  id: string;
  /** The highest generation issued for the shard (0: none yet). */
  generation: number;
  /** The node the current generation was issued to (Neon's `generation_pageserver`). */
  generationNodeId: string | null;
  /** Attached node, secondaries, policies…: the plugin's own fields. */
  intent: Record<string, unknown>;
}

/**
 * ha:L3: a write of the plugin store refused because this replica does not lead — it stood
 * by already, or the database's fence found its epoch superseded (then the replica stands by
 * at once, as when an operation's commit is refused). Nothing of the write was stored.
 * `Unavailable`: the caller (an upcall, a REST request) may retry, and reaches the leader.
 */
export class PluginStoreFencedError extends BackendError {
  constructor(
    message: string,
    /** true: the database refused it (this replica's epoch was superseded); false: refused before it was sent (a stand-by). */
    readonly refusedByDatabase: boolean,
  ) {
    super('Unavailable', message);
  }
}

/**
 * ha:L3, ha:L7: every write of the store a plugin is given is fenced by the leader's epoch
 * on PostgreSQL with replicas: it runs in one transaction that starts with the fence, so it
 * commits only while this replica's epoch still leads (by the database, not the process),
 * and it rejects with `PluginStoreFencedError` otherwise — on a stand-by before anything is
 * sent. Generations too: a deposed leader issues none. (SQLite: one process, no fence.)
 */
export interface PluginStore {
  /**
   * The same store without the fence, for what every replica writes while the plugin starts
   * (before any replica can lead: the gateway's leadership starts after the plugins): seed
   * nodes from the config, a one-time legacy import, generations seen on the backend raised,
   * entities only the backend knows adopted. Only writes that are safe from any replica at
   * any time belong there — idempotent, insert-if-absent or monotone (a raise never lowers a
   * generation); never the leader's background work (docs/rules.md ha:L3).
   */
  forStartUp(): PluginStore;

  nodes(): Promise<StoredNode[]>;
  /** Inserts or replaces one node. */
  putNode(node: StoredNode): Promise<void>;
  /** Forgets a node row altogether (a tombstone removed, neon:L7). */
  removeNode(id: string): Promise<void>;

  shards(): Promise<StoredShard[]>;
  /** Creates the shards that do not exist yet (with their generation), in one transaction; existing ones are left as they are. */
  createShards(shards: readonly StoredShard[]): Promise<void>;
  /** Replaces the intents of existing shards, in one transaction; generations are untouched. */
  putIntents(intents: readonly { id: string; intent: Record<string, unknown> }[]): Promise<void>;
  removeShards(ids: readonly string[]): Promise<void>;

  /**
   * Issues a new generation to `nodeId`: `generation + 1` and `generationNodeId = nodeId`
   * in one atomic statement (neon:C4). Resolves with the new generation once committed.
   */
  incrementGeneration(shardId: string, nodeId: string): Promise<number>;
  /**
   * neon:L9: the stored generation of each shard named, read in the same transaction as this
   * replica's lease check (a stand-by's or a deposed leader's read is refused, typed
   * `PluginStoreFencedError`). Shards not stored are left out.
   */
  leaderGenerations(shardIds: readonly string[]): Promise<Map<string, number>>;
  /** Raises the generation to at least `atLeast` (a generation seen on a pageserver was issued); resolves with the generation now stored. */
  raiseGeneration(shardId: string, atLeast: number): Promise<number>;
  /**
   * Re-attach (neon:L3): in one transaction, `generation + 1` for every shard whose
   * generation was issued to `nodeId`. Resolves with those shards and their new generations.
   */
  reAttach(nodeId: string): Promise<{ id: string; generation: number }[]>;

  /** Small facts the plugin keeps (e.g. that a legacy state file was imported). */
  getMeta(key: string): Promise<string | null>;
  setMeta(key: string, value: string): Promise<void>;
}
