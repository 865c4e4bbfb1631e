/**
 * Issue 33 at the plugin: `snapshot()` reads each secondary's download progress and each
 * attached location's timelines from the pageservers, says what it could not read (a node
 * down, a read refused) instead of failing, and reads nothing from an OFFLINE node.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { shardIdOf, type SimShardSpec } from '../../../simulators/pageserver/index.ts';
import { closeAfterEach, startSimCluster } from '../../support/pageserver-cluster.ts';

const clusters = closeAfterEach(afterEach);
const LAGGING: SimShardSpec = { tenant: 1, attached: 1, secondaries: [2], generation: 4, lag: { 2: { bytes: 1024 * 1024, heatmap: false } } };
const REFUSED: SimShardSpec = { tenant: 2, attached: 2, secondaries: [1], generation: 2 };
const ON_DOWN_NODE: SimShardSpec = { tenant: 3, attached: 3, secondaries: [1], generation: 1 };

interface Data {
  shards: { id: string; timelines: Record<string, string> | null; secondaries: Record<string, unknown>; observed: Record<string, string> }[];
  nodes: { id: string; availability: string }[];
  unread: string[];
}

describe('issue 33: the pageserver plugin’s snapshot', () => {
  it('reads progress and timelines from the pageservers, and lists what it could not read', async () => {
    const c = clusters.use(
      await startSimCluster({ nodes: [{ id: 1 }, { id: 2 }, { id: 3 }], shards: [LAGGING, REFUSED, ON_DOWN_NODE], downloadBytesPerSecond: 1 }),
    );
    const backend = await c.startController();
    c.sim(3).stopAnswering();
    await c.until(async () => (await backend.getNode('3'))?.availability === 'OFFLINE', { what: 'node 3 OFFLINE' });
    c.sim(2).inject({ method: 'GET', path: /\/timeline$/, kind: { status: 500 } });
    const [snapshot] = await c.drive(backend.snapshot());
    const data = snapshot!.data as Data;
    const shard = (s: SimShardSpec) => data.shards.find((x) => x.id === shardIdOf(s))!;

    // 1 MiB behind at the start, at 1 byte/s for the ~35 s of virtual time until node 3 was OFFLINE.
    expect(shard(LAGGING).secondaries).toEqual({
      '2': { bytesTotal: 4 * 1024 * 1024, bytesDownloaded: expect.toSatisfy((b: number) => b >= 3 * 1024 * 1024 && b < 3 * 1024 * 1024 + 100), heatmap: false },
    });
    expect(shard(LAGGING).timelines).toEqual({ ['b'.repeat(32)]: '0/16B5A50' });
    expect(shard(LAGGING).observed).toEqual({ '1': 'AttachedSingle@4', '2': 'Secondary' });
    expect(shard(REFUSED).timelines).toBeNull();
    expect(shard(ON_DOWN_NODE).timelines).toBeNull();
    expect(shard(ON_DOWN_NODE).secondaries).toEqual({ '1': { bytesTotal: 4 * 1024 * 1024, bytesDownloaded: 4 * 1024 * 1024, heatmap: true } });
    expect(data.nodes.map((n) => [n.id, n.availability])).toEqual([
      ['1', 'ACTIVE'],
      ['2', 'ACTIVE'],
      ['3', 'OFFLINE'],
    ]);
    expect(data.unread).toEqual([
      expect.stringMatching(new RegExp(`^timelines of ${shardIdOf(REFUSED)} on node 2: .*500`)),
      `timelines of ${shardIdOf(ON_DOWN_NODE)}: node 3 is not available`,
    ]);
    // Nothing was asked of the OFFLINE node.
    expect(c.log.find({ source: 'node 3', path: /\/v1\/tenant\// })).toEqual([]);
  });
});
