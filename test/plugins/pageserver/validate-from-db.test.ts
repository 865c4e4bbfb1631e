/**
 * neon:L9: the validate upcall answers from the database, in the read that checks the lease,
 * never from the copy in memory: a generation another leader issued meanwhile is the only
 * valid one, even before this replica's copy has heard of it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { shardIdOf, type SimShardSpec } from '../../../simulators/pageserver/index.ts';
import { closeAfterEach, startSimCluster } from '../../support/pageserver-cluster.ts';

const clusters = closeAfterEach(afterEach);
const SHARD: SimShardSpec = { tenant: 11, attached: 1, secondaries: [2], generation: 6 };
const ID = shardIdOf(SHARD);

describe('neon:L9 — validate from the database', () => {
  it('a generation the database holds is valid, the one still in memory is not, once another leader issued a newer one', async () => {
    const c = clusters.use(await startSimCluster({ nodes: [{ id: 1 }, { id: 2 }], shards: [SHARD] }));
    const backend = await c.startController();
    expect(backend.generationOf(ID)).toBe(6);
    // Another leader issues generation 7 (this replica's copy in memory still says 6).
    await c.db.prisma.pluginShard.updateMany({ where: { id: ID }, data: { generation: 7, generationNodeId: '2' } });
    expect(backend.generationOf(ID)).toBe(6);
    const answer = await backend.upcalls.validate(
      {
        tenants: [
          { id: ID, gen: 6 },
          { id: ID, gen: 7 },
        ],
      },
      '127.0.0.1:1',
    );
    expect(answer.tenants).toEqual([
      { id: ID, valid: false },
      { id: ID, valid: true },
    ]);
  });
});
