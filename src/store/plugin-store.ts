import { PluginStoreFencedError, type PluginStore, type StoredNode, type StoredShard } from '../cluster/plugin-store.ts';
import { Prisma } from './generated/client.ts';
import type { PrismaClient } from './index.ts';
import type { PendingWrite } from './pending-write.ts';
import { NO_FENCE, type Fence } from './repositories.ts';

const json = (text: string): Record<string, unknown> => {
  const value: unknown = JSON.parse(text);
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
};

/** Callers per group commit at most (a failover's in flight is 128 by default). */
const MAX_GROUP = 256;

/** A write the group commit takes: one shard's whole intent, or its generation + 1 issued to a node. */
type GroupedWrite = { kind: 'intent'; id: string; intent: string } | { kind: 'generation'; id: string; nodeId: string };

interface QueuedWrite {
  write: GroupedWrite;
  resolve(value: unknown): void;
  reject(e: unknown): void;
}

/**
 * The plugin store (src/cluster/plugin-store.ts) on the gateway's database, one namespace
 * per plugin name. Generations change only through Prisma's atomic `increment`, which is
 * one `UPDATE … SET generation = generation + 1 … RETURNING` on every dialect Prisma
 * supports, so a generation is never issued twice however many callers race (neon:C4).
 *
 * ha:L3, ha:L7: every write is one transaction `[fence, write]` — the fence is the leader's
 * (`leaderFence`, as the operations' commits have it; nothing on SQLite) — so a deposed
 * leader's write, generations included, is refused whole by the database; the refusal
 * demotes the replica (`Fence.failed`) and rejects with `PluginStoreFencedError`. A
 * stand-by's write is refused before it is sent. `forStartUp()` is the unfenced store for
 * the writes of a plugin's start (docs/rules.md ha:L3).
 *
 * One shard's intent write and its generation increment are group-committed: those asked
 * for while a transaction of them is being committed go together in the next one, and each
 * caller is answered once it has committed (a generation is still the database's increment,
 * committed before it is returned, and a shard has at most one increment per transaction:
 * never one generation for two callers). A failover of 128 shards at once made two
 * transactions of one Prisma statement per shard, one after the other, and the CPU they
 * took kept its pageserver calls waiting (issue 29, point 2). A batch that fails for any
 * reason but the fence is committed again one caller at a time.
 */
export class PrismaPluginStore implements PluginStore {
  constructor(
    private readonly prisma: PrismaClient,
    private readonly plugin: string,
    private readonly fence: Fence = NO_FENCE,
  ) {}

  /** Writes waiting for the next group commit (`grouped`), in the order they were asked for. */
  private readonly queued: QueuedWrite[] = [];
  private committing = false;

  forStartUp(): PluginStore {
    return this.fence === NO_FENCE ? this : new PrismaPluginStore(this.prisma, this.plugin);
  }

  /** Runs `writes` in one transaction after the fence; resolves with the writes' results (the fence's left out). */
  private async fenced(writes: PendingWrite[]): Promise<unknown[]> {
    let fence: PendingWrite[];
    try {
      fence = this.fence.statements();
    } catch (e) {
      throw new PluginStoreFencedError(`plugin store write of ${this.plugin} refused: this replica does not lead (ha:L3): ${(e as Error).message}`, false);
    }
    try {
      const results = await this.prisma.$transaction([...fence, ...writes]);
      return results.slice(fence.length);
    } catch (e) {
      if (this.fence.failed(e)) {
        throw new PluginStoreFencedError(
          `plugin store write of ${this.plugin} refused by the fence: another replica leads at a newer epoch; this replica stands by (ha:L3)`,
          true,
        );
      }
      throw e;
    }
  }

  /** One shard's write in the next group commit (see the class); resolves once it has committed. */
  private grouped<T>(write: GroupedWrite, resolve: (value: T) => void, reject: (e: unknown) => void): void {
    this.queued.push({ write, resolve: resolve as (value: unknown) => void, reject });
    if (!this.committing) void this.commitQueued();
  }

  private async commitQueued(): Promise<void> {
    this.committing = true;
    try {
      // The callers of the same turn of the event loop (its I/O callbacks: the answers of a wave of pageserver calls) go in the first transaction together.
      await new Promise<void>((resolve) => setImmediate(resolve));
      while (this.queued.length) {
        const batch = this.nextBatch();
        try {
          await this.commitBatch(batch);
        } catch (e) {
          if (batch.length === 1 || e instanceof PluginStoreFencedError) {
            for (const q of batch) q.reject(e);
            continue;
          }
          for (const q of batch) await this.commitBatch([q]).catch(q.reject);
        }
      }
    } finally {
      this.committing = false;
    }
  }

  /** The queued writes in order, up to the first one of a shard already in the batch for the same column (one `CASE` arm per shard). */
  private nextBatch(): QueuedWrite[] {
    const seen = { intent: new Set<string>(), generation: new Set<string>() };
    let n = 0;
    for (const q of this.queued) {
      const ids = seen[q.write.kind];
      if (n === MAX_GROUP || ids.has(q.write.id)) break;
      ids.add(q.write.id);
      n++;
    }
    return this.queued.splice(0, n);
  }

  /**
   * One transaction `[fence, UPDATE intents, UPDATE generations]`: one statement per column
   * for the whole batch (Prisma compiles and runs each statement at a cost of the order of a
   * cut-over's, so one per shard kept a 128-shard failover's CPU busy). Portable SQL (CASE,
   * IN, RETURNING: SQLite ≥ 3.35 and PostgreSQL). Each caller is answered from the rows
   * returned; a shard the database does not hold fails only its caller.
   */
  private async commitBatch(batch: QueuedWrite[]): Promise<void> {
    const intents = batch.flatMap((q) => (q.write.kind === 'intent' ? [q.write] : []));
    const generations = batch.flatMap((q) => (q.write.kind === 'generation' ? [q.write] : []));
    const now = new Date();
    const where = (ids: string[]) => Prisma.sql`WHERE "plugin" = ${this.plugin} AND "id" IN (${Prisma.join(ids)})`;
    const arms = (pairs: [string, string][]) =>
      Prisma.join(
        pairs.map(([id, value]) => Prisma.sql`WHEN ${id} THEN ${value}`),
        ' ',
      );
    const writes: PendingWrite[] = [];
    if (intents.length)
      writes.push(
        this.prisma
          .$queryRaw`UPDATE "PluginShard" SET "intent" = CASE "id" ${arms(intents.map((w) => [w.id, w.intent]))} END, "updatedAt" = ${now} ${where(intents.map((w) => w.id))} RETURNING "id"`,
      );
    if (generations.length)
      writes.push(
        this.prisma
          .$queryRaw`UPDATE "PluginShard" SET "generation" = "generation" + 1, "generationNodeId" = CASE "id" ${arms(generations.map((w) => [w.id, w.nodeId]))} END, "updatedAt" = ${now} ${where(generations.map((w) => w.id))} RETURNING "id", "generation"`,
      );
    const results = (await this.fenced(writes)) as { id: string; generation?: number }[][];
    const written = { intent: new Map<string, number>(), generation: new Map<string, number>() };
    let at = 0;
    if (intents.length) for (const r of results[at++]!) written.intent.set(r.id, 0);
    if (generations.length) for (const r of results[at++]!) written.generation.set(r.id, Number(r.generation));
    for (const q of batch) {
      const value = written[q.write.kind].get(q.write.id);
      if (value === undefined) q.reject(new Error(`plugin store write of ${this.plugin}: shard ${q.write.id} is not in the database`));
      else q.resolve(q.write.kind === 'generation' ? value : undefined);
    }
  }

  async nodes(): Promise<StoredNode[]> {
    const rows = await this.prisma.pluginNode.findMany({ where: { plugin: this.plugin }, orderBy: { id: 'asc' } });
    return rows.map((r) => ({ id: r.id, lifecycle: r.lifecycle === 'deleted' ? 'deleted' : 'active', attrs: json(r.attrs) }));
  }

  async putNode(node: StoredNode): Promise<void> {
    const data = { lifecycle: node.lifecycle, attrs: JSON.stringify(node.attrs) };
    await this.fenced([
      this.prisma.pluginNode.upsert({
        where: { plugin_id: { plugin: this.plugin, id: node.id } },
        create: { plugin: this.plugin, id: node.id, ...data },
        update: data,
      }),
    ]);
  }

  async removeNode(id: string): Promise<void> {
    await this.fenced([this.prisma.pluginNode.deleteMany({ where: { plugin: this.plugin, id } })]);
  }

  async shards(): Promise<StoredShard[]> {
    const rows = await this.prisma.pluginShard.findMany({ where: { plugin: this.plugin }, orderBy: { id: 'asc' } });
    return rows.map((r) => ({ id: r.id, generation: r.generation, generationNodeId: r.generationNodeId, intent: json(r.intent) }));
  }

  async createShards(shards: readonly StoredShard[]): Promise<void> {
    if (!shards.length) return;
    const existing = new Set(
      (await this.prisma.pluginShard.findMany({ where: { plugin: this.plugin, id: { in: shards.map((s) => s.id) } }, select: { id: true } })).map((r) => r.id),
    );
    const fresh = shards.filter((s) => !existing.has(s.id));
    if (!fresh.length) return;
    // One statement: a transaction of one INSERT per shard outlived Prisma's 5 s transaction
    // timeout with 600 shards on a loaded PostgreSQL (a 600-shard acceptance run).
    await this.fenced([
      this.prisma.pluginShard.createMany({
        data: fresh.map((s) => ({
          plugin: this.plugin,
          id: s.id,
          generation: s.generation,
          generationNodeId: s.generationNodeId,
          intent: JSON.stringify(s.intent),
        })),
      }),
    ]);
  }

  async putIntents(intents: readonly { id: string; intent: Record<string, unknown> }[]): Promise<void> {
    if (!intents.length) return;
    // One shard's intent (a move's placement, a policy): the group commit. Several (a tenant's config) stay one write of their own, whole or not at all.
    if (intents.length === 1) {
      const { id, intent } = intents[0]!;
      return new Promise<void>((resolve, reject) => this.grouped({ kind: 'intent', id, intent: JSON.stringify(intent) }, resolve, reject));
    }
    await this.fenced(
      intents.map((s) =>
        this.prisma.pluginShard.update({ where: { plugin_id: { plugin: this.plugin, id: s.id } }, data: { intent: JSON.stringify(s.intent) } }),
      ),
    );
  }

  async removeShards(ids: readonly string[]): Promise<void> {
    if (!ids.length) return;
    await this.fenced([this.prisma.pluginShard.deleteMany({ where: { plugin: this.plugin, id: { in: [...ids] } } })]);
  }

  async leaderGenerations(shardIds: readonly string[]): Promise<Map<string, number>> {
    const [rows] = (await this.fenced([
      this.prisma.pluginShard.findMany({ where: { plugin: this.plugin, id: { in: [...shardIds] } }, select: { id: true, generation: true } }),
    ])) as [{ id: string; generation: number }[]];
    return new Map(rows.map((r) => [r.id, r.generation]));
  }

  incrementGeneration(shardId: string, nodeId: string): Promise<number> {
    return new Promise<number>((resolve, reject) => this.grouped({ kind: 'generation', id: shardId, nodeId }, resolve, reject));
  }

  async raiseGeneration(shardId: string, atLeast: number): Promise<number> {
    await this.fenced([
      this.prisma.pluginShard.updateMany({ where: { plugin: this.plugin, id: shardId, generation: { lt: atLeast } }, data: { generation: atLeast } }),
    ]);
    const row = await this.prisma.pluginShard.findUniqueOrThrow({ where: { plugin_id: { plugin: this.plugin, id: shardId } }, select: { generation: true } });
    return row.generation;
  }

  async reAttach(nodeId: string): Promise<{ id: string; generation: number }[]> {
    const where = { plugin: this.plugin, generationNodeId: nodeId };
    const [, rows] = (await this.fenced([
      this.prisma.pluginShard.updateMany({ where, data: { generation: { increment: 1 } } }),
      this.prisma.pluginShard.findMany({ where, select: { id: true, generation: true }, orderBy: { id: 'asc' } }),
    ])) as [unknown, { id: string; generation: number }[]];
    return rows;
  }

  async getMeta(key: string): Promise<string | null> {
    const row = await this.prisma.pluginMeta.findUnique({ where: { plugin_key: { plugin: this.plugin, key } } });
    return row?.value ?? null;
  }

  async setMeta(key: string, value: string): Promise<void> {
    await this.fenced([
      this.prisma.pluginMeta.upsert({
        where: { plugin_key: { plugin: this.plugin, key } },
        create: { plugin: this.plugin, key, value },
        update: { value },
      }),
    ]);
  }
}
