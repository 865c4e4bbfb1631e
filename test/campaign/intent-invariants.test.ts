/**
 * The pageserver campaign's intent invariants (issue 28, campaign/intent-invariants.ts): each
 * checker fed one violation flags it, and what is right passes.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  findOfflineIntentViolations,
  findTenantConfigViolations,
  logPlacementWrites,
  readIntentDatabase,
  type StoredShard,
} from '../../campaign/intent-invariants.ts';
import type { Database } from '../../src/store/database-handle.ts';
import { openTestDatabase } from '../support/test-database.ts';

let db: Database | undefined;
afterEach(async () => {
  await db?.close();
  db = undefined;
});

const shard = (id: string, secondaryCount: number, secondaryNodeIds: string[], tenantConfig: StoredShard['tenantConfig']): StoredShard => ({
  id,
  attachedNodeId: '1',
  secondaryNodeIds,
  secondaryCount,
  tenantConfig,
});

describe('neon:W10, neon:W11 at rest: every held location carries the stored config made HA-aware', () => {
  const stored = [
    shard('ha', 1, ['2'], { pitr_interval: '1day', compaction_threshold: 5 }),
    shard('own', 1, ['2'], { heatmap_period: '30s' }),
    shard('single', 0, [], { pitr_interval: '1day' }),
  ];

  it('passes locations that hold exactly it: 60 s filled in under Attached(1), the tenant’s own kept, cleared under Attached(0)', () => {
    expect(
      findTenantConfigViolations(stored, [
        { shardId: 'ha', nodeId: '1', mode: 'AttachedSingle', tenantConf: { pitr_interval: '1day', compaction_threshold: 5, heatmap_period: '1m' } },
        { shardId: 'ha', nodeId: '2', mode: 'Secondary', tenantConf: { heatmap_period: '1m', compaction_threshold: 5, pitr_interval: '1day' } },
        { shardId: 'own', nodeId: '1', mode: 'AttachedSingle', tenantConf: { heatmap_period: '30s' } },
        { shardId: 'single', nodeId: '1', mode: 'AttachedSingle', tenantConf: { pitr_interval: '1day' } },
      ]),
    ).toEqual([]);
  });

  it('flags a location whose config was wiped, one without the filled-in heatmap period, one keeping a heatmap period its policy has no use for, and an unknown stored config', () => {
    const found = findTenantConfigViolations(
      [...stored, shard('unknown', 1, ['2'], null)],
      [
        { shardId: 'ha', nodeId: '1', mode: 'AttachedSingle', tenantConf: {} },
        { shardId: 'ha', nodeId: '2', mode: 'Secondary', tenantConf: { pitr_interval: '1day', compaction_threshold: 5 } },
        { shardId: 'single', nodeId: '1', mode: 'AttachedSingle', tenantConf: { pitr_interval: '1day', heatmap_period: '1m' } },
        { shardId: 'unknown', nodeId: '1', mode: 'AttachedSingle', tenantConf: {} },
      ],
    );
    expect(found).toEqual([
      'shard ha on node 1 (AttachedSingle): holds tenant config {}, the stored config made HA-aware is {"compaction_threshold":5,"heatmap_period":"1m","pitr_interval":"1day"} (neon:W10, neon:W11)',
      'shard ha on node 2 (Secondary): holds tenant config {"compaction_threshold":5,"pitr_interval":"1day"}, the stored config made HA-aware is {"compaction_threshold":5,"heatmap_period":"1m","pitr_interval":"1day"} (neon:W10, neon:W11)',
      'shard single on node 1 (AttachedSingle): holds tenant config {"heatmap_period":"1m","pitr_interval":"1day"}, the stored config made HA-aware is {"pitr_interval":"1day"} (neon:W10, neon:W11)',
      "shard unknown on node 1 (AttachedSingle): the gateway's stored tenant config is unknown at rest (neon:W10)",
    ]);
  });
});

describe('neon:H9: no attached placement written naming a node that was OFFLINE then', () => {
  const changes = [
    { seq: 10, nodeId: '1', at: 1_000, availability: 'OFFLINE' },
    { seq: 12, nodeId: '1', at: 3_000, availability: 'ACTIVE' },
    { seq: 11, nodeId: '2', at: 1_500, availability: 'WARMING_UP' },
  ];

  it('flags a placement onto node 1 while it was logged OFFLINE, and nothing else', () => {
    const writes = [
      { seq: 1, shardId: 'a', attachedNodeId: '1', at: 999 },
      { seq: 2, shardId: 'b', attachedNodeId: '1', at: 2_000 },
      { seq: 3, shardId: 'c', attachedNodeId: '2', at: 2_000 },
      { seq: 4, shardId: 'd', attachedNodeId: '1', at: 3_000 },
      { seq: 5, shardId: 'e', attachedNodeId: '3', at: 2_000 },
    ];
    expect(findOfflineIntentViolations(writes, changes)).toEqual([
      'shard b: attached intent written naming node 1 at 1970-01-01T00:00:02.000Z, when it was OFFLINE (logged at 1970-01-01T00:00:01.000Z, event 10) (neon:H9)',
    ]);
    // Each round checks its own writes only.
    expect(findOfflineIntentViolations(writes, changes, 3)).toEqual([]);
  });

  it('reads the placement writes the campaign’s trigger logged in the gateway’s database: a change of attachment or secondaries, not a generation or a flag', async () => {
    db = await openTestDatabase();
    const intent = (attachedNodeId: string, secondaryNodeIds: string[], pendingComputeNotification = false) =>
      JSON.stringify({ attachedNodeId, secondaryNodeIds, secondaryCount: 1, pendingComputeNotification, tenantConfig: { pitr_interval: '1day' } });
    await db.prisma.pluginShard.create({ data: { plugin: 'pageserver', id: 's', intent: intent('1', ['2']) } });
    logPlacementWrites(db.file);
    const where = { plugin_id: { plugin: 'pageserver', id: 's' } };
    await db.prisma.pluginShard.update({ where, data: { intent: intent('2', ['1']) } });
    await db.prisma.pluginShard.update({ where, data: { intent: intent('2', ['1'], true) } });
    await db.prisma.pluginShard.update({ where, data: { generation: 7 } });
    await db.prisma.pluginShard.update({ where, data: { intent: intent('2', []) } });
    const read = readIntentDatabase(db.file);
    expect(read.writes.map(({ seq, shardId, attachedNodeId }) => ({ seq, shardId, attachedNodeId }))).toEqual([
      { seq: 1, shardId: 's', attachedNodeId: '2' },
      { seq: 2, shardId: 's', attachedNodeId: '2' },
    ]);
    expect(read.writes.every((w) => Number.isFinite(w.at))).toBe(true);
    expect(read.shards).toEqual([{ id: 's', attachedNodeId: '2', secondaryNodeIds: [], secondaryCount: 1, tenantConfig: { pitr_interval: '1day' } }]);
  });
});
