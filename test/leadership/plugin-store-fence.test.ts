/**
 * ha:L3, ha:L7 for the plugin store (issue 13): on PostgreSQL every write a plugin makes to
 * its store — intents, nodes, meta, and the generations (ha:B2) — runs in one transaction
 * that starts with the leader's fence. A deposed leader's write is refused whole by the
 * database, leaves the rows as they were, and the replica stands by; a stand-by's write is
 * refused before it is sent; the start-up store (`forStartUp`) writes on any replica. The
 * lease is taken away by a raw write to its row, as another replica's take-over does; no
 * timers or durations are asserted.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { PluginStoreFencedError, type PluginStore, type StoredShard } from '../../src/cluster/plugin-store.ts';
import { PrismaPluginStore } from '../../src/store/plugin-store.ts';
import { leaderFence } from '../../src/leadership/fence.ts';
import { fencedStoreWorlds } from '../support/fenced-plugin-store.ts';
import { postgresSkipReason } from '../support/test-database.ts';

const skip = postgresSkipReason();
const worlds = fencedStoreWorlds(afterEach);

const shard = (id: string, generation: number, generationNodeId: string | null): StoredShard => ({
  id,
  generation,
  generationNodeId,
  intent: { attachedNodeId: generationNodeId ?? '1' },
});

/** Every kind of write the plugin store has, as a deposed leader would attempt it. */
const WRITES: [string, (s: PluginStore) => Promise<unknown>][] = [
  ['putIntents', (s) => s.putIntents([{ id: 'a', intent: { attachedNodeId: '9' } }])],
  ['createShards', (s) => s.createShards([shard('new', 1, '2')])],
  ['removeShards', (s) => s.removeShards(['a'])],
  ['putNode', (s) => s.putNode({ id: '1', lifecycle: 'deleted', attrs: { url: 'http://changed' } })],
  ['removeNode', (s) => s.removeNode('1')],
  ['setMeta', (s) => s.setMeta('heartbeats', 'overwritten')],
  ['incrementGeneration', (s) => s.incrementGeneration('a', '2')],
  ['raiseGeneration', (s) => s.raiseGeneration('a', 99)],
  ['reAttach', (s) => s.reAttach('1')],
];

describe.skipIf(skip)(skip ?? 'the plugin store is fenced by the leader epoch (PostgreSQL)', () => {
  async function setUp() {
    const world = await worlds.open();
    /** A replica that leads now (the lease freed first, so it takes the next epoch), with its plugin store. */
    const lead = async () => {
      await world.freeLease();
      const replica = world.replica();
      await replica.leadership.start();
      expect(replica.leadership.status().role).toBe('leader');
      return replica;
    };
    const rows = async (s: PluginStore) => ({ shards: await s.shards(), nodes: await s.nodes(), meta: await s.getMeta('heartbeats') });
    return { db: world.db, lead, takeOver: world.takeOver, rows };
  }

  it.each(WRITES)(
    "ha:L3: after the lease is taken away, the old leader's %s is refused by the database, leaves every row unchanged (intent, generation), and the replica stands by",
    async (name, write) => {
      const { lead, takeOver, rows } = await setUp();
      const { leadership, store } = await lead();
      await store.createShards([shard('a', 5, '1'), shard('b', 3, '2')]);
      await store.putNode({ id: '1', lifecycle: 'active', attrs: { url: 'http://ps-1' } });
      await store.setMeta('heartbeats', '{"1":"ACTIVE"}');
      const before = await rows(store);
      await takeOver();
      // The process still believes it leads: only the database can tell it does not.
      expect(leadership.canAct()).toBe(true);
      const error = await write(store).then(
        () => null,
        (e: unknown) => e,
      );
      expect(error, name).toBeInstanceOf(PluginStoreFencedError);
      expect((error as PluginStoreFencedError).refusedByDatabase).toBe(true);
      expect((error as PluginStoreFencedError).code).toBe('Unavailable');
      expect(leadership.status().role).toBe('standby');
      expect(await rows(store)).toEqual(before);
      // A deposed leader issued no generation (ha:B2): the stored ones are those from before.
      expect(before.shards.map((s) => [s.id, s.generation, s.generationNodeId])).toEqual([
        ['a', 5, '1'],
        ['b', 3, '2'],
      ]);
      // Standing by now, it does not even send the next write.
      const next = await write(store).then(
        () => null,
        (e: unknown) => e,
      );
      expect(next).toBeInstanceOf(PluginStoreFencedError);
      expect((next as PluginStoreFencedError).refusedByDatabase).toBe(false);
      expect(await rows(store)).toEqual(before);
    },
  );

  it('ha:L3: the same writes succeed for the current leader, each committed with its fence', async () => {
    const { lead, takeOver, rows } = await setUp();
    const old = await lead();
    await old.store.createShards([shard('a', 5, '1'), shard('b', 3, '2')]);
    await takeOver();
    const current = await lead();
    const { store } = current;
    await store.putNode({ id: '1', lifecycle: 'active', attrs: { url: 'http://ps-1' } });
    expect(await store.reAttach('1')).toEqual([{ id: 'a', generation: 6 }]);
    expect(await store.incrementGeneration('b', '1')).toBe(4);
    expect(await store.raiseGeneration('b', 9)).toBe(9);
    await store.putIntents([{ id: 'a', intent: { attachedNodeId: '2' } }]);
    await store.createShards([shard('c', 1, '2')]);
    await store.removeShards(['c']);
    await store.setMeta('heartbeats', '{}');
    await store.putNode({ id: '2', lifecycle: 'deleted', attrs: {} });
    await store.removeNode('2');
    expect(await rows(store)).toEqual({
      shards: [
        { id: 'a', generation: 6, generationNodeId: '1', intent: { attachedNodeId: '2' } },
        { id: 'b', generation: 9, generationNodeId: '1', intent: { attachedNodeId: '2' } },
      ],
      nodes: [{ id: '1', lifecycle: 'active', attrs: { url: 'http://ps-1' } }],
      meta: '{}',
    });
    expect(current.leadership.status().role).toBe('leader');
  });

  it('ha:L3: a stand-by is refused every write before it is sent; its start-up store (seed, import, discovery) writes unfenced', async () => {
    const { db, lead, takeOver, rows } = await setUp();
    const { leadership, store } = await lead();
    await takeOver();
    await leadership.stepDown('test: stand by');
    const standby = new PrismaPluginStore(db.prisma, 'pageserver', leaderFence(leadership));
    for (const [name, write] of WRITES) {
      const error = await write(standby).then(
        () => null,
        (e: unknown) => e,
      );
      expect(error, name).toBeInstanceOf(PluginStoreFencedError);
      expect((error as PluginStoreFencedError).refusedByDatabase, name).toBe(false);
    }
    expect(await rows(store)).toEqual({ shards: [], nodes: [], meta: null });
    const startUp = standby.forStartUp();
    await startUp.putNode({ id: '1', lifecycle: 'active', attrs: { url: 'http://seed' } });
    await startUp.createShards([shard('a', 5, '1')]);
    expect(await startUp.raiseGeneration('a', 7)).toBe(7);
    await startUp.setMeta('stateFileImported:/x', 'yes');
    expect(await rows(store)).toMatchObject({ shards: [{ id: 'a', generation: 7 }], nodes: [{ id: '1' }] });
  });
});
