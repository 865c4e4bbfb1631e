import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/store/database.ts';
import { PrismaPluginStore } from '../../src/store/plugin-store.ts';
import { shardIdOf, type SimShardSpec } from '../../simulators/pageserver/index.ts';
import { closeAfterEach, startSimCluster } from '../support/pageserver-cluster.ts';
import { useTempDir } from './helpers.ts';

/**
 * The plugin store (issue 11 point 7): intent, nodes and generations in the gateway's
 * database; a generation is one atomic increment (neon:C4), re-attach one transaction
 * (neon:L3).
 */

const tempDir = useTempDir('lockkeeper-plugin-store-');
const open: Database[] = [];
afterEach(async () => {
  for (const db of open.splice(0)) await db.close();
});

async function db(file?: string) {
  const d = await openDatabase({ url: `file:${file ?? join(tempDir(), 'x.db')}` });
  open.push(d);
  return d;
}

const shard = (id: string, generation = 0, generationNodeId: string | null = null) => ({ id, generation, generationNodeId, intent: { attachedNodeId: '1' } });

describe('PrismaPluginStore', () => {
  it('neon:C4: concurrent increments — through two connections to one file, as two gateways would — never issue a generation twice', async () => {
    const a = await db();
    const b = await db(a.file);
    const one = new PrismaPluginStore(a.prisma, 'pageserver');
    const two = new PrismaPluginStore(b.prisma, 'pageserver');
    await one.createShards([shard('s', 7)]);
    const issued = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? one : two).incrementGeneration('s', String(i % 3))));
    expect([...issued].sort((x, y) => x - y)).toEqual(Array.from({ length: 40 }, (_, i) => 8 + i));
    expect((await one.shards())[0]!.generation).toBe(47);
  });

  it('neon:L3: re-attach bumps, in one transaction, exactly the shards whose generation the node holds', async () => {
    const store = new PrismaPluginStore((await db()).prisma, 'pageserver');
    await store.createShards([shard('a', 3, '1'), shard('b', 5, '2'), shard('c', 1, '1')]);
    expect(await store.reAttach('1')).toEqual([
      { id: 'a', generation: 4 },
      { id: 'c', generation: 2 },
    ]);
    expect((await store.shards()).map((s) => [s.id, s.generation, s.generationNodeId])).toEqual([
      ['a', 4, '1'],
      ['b', 5, '2'],
      ['c', 2, '1'],
    ]);
  });

  it('raises only upwards, creates without overwriting, keeps intents apart from generations, and one namespace per plugin', async () => {
    const d = await db();
    const store = new PrismaPluginStore(d.prisma, 'pageserver');
    const other = new PrismaPluginStore(d.prisma, 'other');
    await store.createShards([shard('s', 4)]);
    expect(await store.raiseGeneration('s', 2)).toBe(4);
    expect(await store.raiseGeneration('s', 9)).toBe(9);
    await store.createShards([shard('s', 1)]);
    await store.putIntents([{ id: 's', intent: { attachedNodeId: '2' } }]);
    expect(await store.shards()).toEqual([{ id: 's', generation: 9, generationNodeId: null, intent: { attachedNodeId: '2' } }]);
    expect(await other.shards()).toEqual([]);
    await store.putNode({ id: '1', lifecycle: 'deleted', attrs: { url: 'http://x' } });
    expect(await store.nodes()).toEqual([{ id: '1', lifecycle: 'deleted', attrs: { url: 'http://x' } }]);
    await store.setMeta('k', 'v');
    expect([await store.getMeta('k'), await other.getMeta('k')]).toEqual(['v', null]);
  });
});

describe('the pageserver plugin on the store', () => {
  const clusters = closeAfterEach(afterEach);
  const A: SimShardSpec = { tenant: 1, attached: 1, secondaries: [2], generation: 6 };

  it('imports a legacy stateFile once, continuing its generations; later starts ignore the file', async () => {
    const c = clusters.use(await startSimCluster({ nodes: [{ id: 1 }, { id: 2 }], shards: [A] }));
    const id = shardIdOf(A);
    const file = join(c.dir, 'old-state.json');
    const legacy = (generation: number) =>
      JSON.stringify({
        format: 'lockkeeper-pageserver-controller',
        version: 1,
        shards: [
          {
            id,
            tenantId: id,
            shardNumber: 0,
            shardCount: 0,
            stripeSize: 0,
            attachedNodeId: '1',
            secondaryNodeIds: ['2'],
            generation,
            preferredZone: 'az-a',
            policy: 'ACTIVE',
          },
        ],
        cordoned: ['2'],
      });
    writeFileSync(file, legacy(11));
    const first = await c.startController({ stateFile: file });
    expect(first.discoveryReport.importedStateFile).toBe(file);
    // The file's generation 11 continues: node 1 (which held 6) is attached again with 12.
    await c.until(() => c.view()[id]?.['1'] === 'AttachedSingle@12', { what: 'node 1 re-attached above the imported generation' });
    expect(first.generationOf(id)).toBe(12);
    expect((await first.getNode('2'))?.cordoned).toBe(true);
    await c.drive(first.cutOverShard(id, { fromNodeId: '1', toNodeId: '2' }));
    expect(first.generationOf(id)).toBe(13);
    await first.close();
    writeFileSync(file, legacy(3));
    const second = await c.startController({ stateFile: file });
    expect(second.discoveryReport.importedStateFile).toBeNull();
    expect(second.generationOf(id)).toBe(13);
    expect(await second.getShard(id)).toMatchObject({ attachedNodeId: '2', secondaryNodeIds: ['1'] });
  });
});
