import { PluginStoreFencedError, type PluginStore, type StoredNode, type StoredShard } from '../cluster/plugin-store.ts';
import type { PrismaClient } from './index.ts';
import type { PendingWrite } from './pending-write.ts';
import { NO_FENCE, type Fence } from './repositories.ts';

const json = (text: string): Record<string, unknown> => {
  const value: unknown = JSON.parse(text);
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
};

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
 */
export class PrismaPluginStore implements PluginStore {
  constructor(
    private readonly prisma: PrismaClient,
    private readonly plugin: string,
    private readonly fence: Fence = NO_FENCE,
  ) {}

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

  async incrementGeneration(shardId: string, nodeId: string): Promise<number> {
    const [row] = (await this.fenced([
      this.prisma.pluginShard.update({
        where: { plugin_id: { plugin: this.plugin, id: shardId } },
        data: { generation: { increment: 1 }, generationNodeId: nodeId },
        select: { generation: true },
      }),
    ])) as [{ generation: number }];
    return row.generation;
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
