import { afterEach, describe, expect, it } from 'vitest';
import { PrismaPluginStore } from '../../src/store/plugin-store.ts';
import type { Database } from '../../src/store/database.ts';
import { DIALECTS, openTestDatabase, postgresSkipReason } from '../support/test-database.ts';

/**
 * Issue 29 point 2: the plugin store group-commits one shard's intent writes and generation
 * increments (one UPDATE per column for the batch). What must hold on both dialects: every
 * caller of the same shard gets its own generation, committed (neon:C4: never one generation
 * for two callers); each shard's latest intent wins; a shard the database does not hold fails
 * only its own caller.
 */

const opened: Database[] = [];
afterEach(async () => {
  for (const db of opened.splice(0)) await db.close();
});

describe.each(DIALECTS)('plugin store group commit on %s', (dialect) => {
  const skip = dialect === 'postgresql' ? postgresSkipReason() : null;

  async function store(): Promise<{ db: Database; store: PrismaPluginStore }> {
    const db = await openTestDatabase({ dialect });
    opened.push(db);
    const s = new PrismaPluginStore(db.prisma, 'pageserver');
    await s.createShards(['a', 'b', 'c'].map((id) => ({ id, generation: 4, generationNodeId: '1', intent: { attachedNodeId: '1' } })));
    return { db, store: s };
  }

  it.skipIf(skip)('callers asked at once: distinct generations for one shard, each shard its own, the last intent of each shard kept', async () => {
    const { store: s } = await store();
    const [a1, a2, b1, a3, c1] = await Promise.all([
      s.incrementGeneration('a', '2'),
      s.incrementGeneration('a', '3'),
      s.incrementGeneration('b', '2'),
      s.incrementGeneration('a', '2'),
      s.incrementGeneration('c', '3'),
      s.putIntents([{ id: 'a', intent: { attachedNodeId: '2' } }]),
      s.putIntents([{ id: 'a', intent: { attachedNodeId: '3' } }]),
      s.putIntents([{ id: 'b', intent: { attachedNodeId: '2' } }]),
    ]);
    expect([a1, a2, a3]).toEqual([5, 6, 7]);
    expect([b1, c1]).toEqual([5, 5]);
    const rows = Object.fromEntries((await s.shards()).map((r) => [r.id, r]));
    expect(rows.a).toMatchObject({ generation: 7, generationNodeId: '2', intent: { attachedNodeId: '3' } });
    expect(rows.b).toMatchObject({ generation: 5, generationNodeId: '2', intent: { attachedNodeId: '2' } });
    expect(rows.c).toMatchObject({ generation: 5, generationNodeId: '3', intent: { attachedNodeId: '1' } });
  });

  it.skipIf(skip)('a shard the database does not hold fails its own caller only', async () => {
    const { store: s } = await store();
    const outcomes = await Promise.allSettled([
      s.incrementGeneration('a', '2'),
      s.incrementGeneration('gone', '2'),
      s.putIntents([{ id: 'gone', intent: {} }]),
      s.putIntents([{ id: 'b', intent: { attachedNodeId: '3' } }]),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled']);
    expect(outcomes[0]).toEqual({ status: 'fulfilled', value: 5 });
    expect(String((outcomes[1] as PromiseRejectedResult).reason)).toContain('shard gone is not in the database');
    const rows = Object.fromEntries((await s.shards()).map((r) => [r.id, r]));
    expect(rows.a!.generation).toBe(5);
    expect(rows.b!.intent).toEqual({ attachedNodeId: '3' });
    expect(rows.gone).toBeUndefined();
  });
});
