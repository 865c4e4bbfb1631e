import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { chooseDrainDestination, planDrain, warmthVerdict } from '../../src/domain/storage/drain-plan.ts';
import { planFailover } from '../../src/domain/storage/failover-plan.ts';
import { planFill } from '../../src/domain/storage/fill-plan.ts';
import type { PlanNode, PlanShard } from '../../src/domain/storage/shards.ts';

const n = (id: string, zone = 'a', policy: PlanNode['policy'] = 'ACTIVE', availability: PlanNode['availability'] = 'ACTIVE'): PlanNode => ({
  id,
  zone,
  policy,
  availability,
});

function shard(tenantId: string, shardNumber: number, attachedNodeId: string, secondaryNodeIds: string[], extra: Partial<PlanShard> = {}): PlanShard {
  return {
    id: `${tenantId}-${shardNumber.toString(16).padStart(2, '0')}08`,
    tenantId,
    shardNumber,
    shardCount: 8,
    attachedNodeId,
    secondaryNodeIds,
    preferredZone: null,
    policy: 'ACTIVE',
    ...extra,
  };
}

describe('drain plan (storage:D1–D4)', () => {
  it('storage:D1: walks the node’s attached shards by tenant id then shard number', () => {
    const shards = [shard('t2', 0, '1', ['2']), shard('t1', 3, '1', ['2']), shard('t1', 1, '1', ['2']), shard('t1', 0, '2', ['1'])];
    expect(planDrain('1', shards, [n('1'), n('2')]).map((d) => d.shard.id)).toEqual(['t1-0108', 't1-0308', 't2-0008']);
  });

  it('storage:D2: skips PAUSE/STOP shards, non-HA shards and shards without a schedulable secondary', () => {
    const shards = [
      shard('a', 0, '1', ['2'], { policy: 'PAUSE' }),
      shard('b', 0, '1', ['2'], { policy: 'STOP' }),
      shard('c', 0, '1', []),
      shard('d', 0, '1', ['3']),
      shard('e', 0, '1', ['2'], { policy: 'ESSENTIAL' }),
    ];
    const plan = planDrain('1', shards, [n('1'), n('2'), n('3', 'a', 'PAUSE')]);
    expect(plan.map((d) => (d.action === 'skip' ? d.reason : d.toNodeId))).toEqual([
      'SHARD_POLICY_PAUSE',
      'SHARD_POLICY_STOP',
      'NO_SECONDARY',
      'NO_SCHEDULABLE_SECONDARY',
      '2',
    ]);
  });

  it('storage:D3: prefers a secondary in the preferred AZ, then the lowest node id', () => {
    const nodes = new Map([n('2', 'b'), n('3', 'a'), n('10', 'a'), n('4', 'b', 'ACTIVE', 'OFFLINE')].map((x) => [x.id, x]));
    expect(chooseDrainDestination(shard('t', 0, '1', ['2', '10', '3'], { preferredZone: 'a' }), nodes)).toBe('3');
    expect(chooseDrainDestination(shard('t', 0, '1', ['2', '10'], { preferredZone: 'b' }), nodes)).toBe('2');
    expect(chooseDrainDestination(shard('t', 0, '1', ['10', '3'], { preferredZone: null }), nodes)).toBe('3');
    // Numeric order, not string order: 3 before 10.
    expect(chooseDrainDestination(shard('t', 0, '1', ['10', '3'], { preferredZone: 'b' }), nodes)).toBe('3');
    expect(chooseDrainDestination(shard('t', 0, '1', ['4'], { preferredZone: 'b' }), nodes)).toBeNull();
  });

  it('storage:D4: lag over the limit or unknown lag refuses the cut-over', () => {
    expect(warmthVerdict({ bytesTotal: 100, bytesDownloaded: 90, heatmapMtime: 1 }, 10)).toEqual({ ok: true, lagBytes: 10 });
    expect(warmthVerdict({ bytesTotal: 100, bytesDownloaded: 89, heatmapMtime: 1 }, 10)).toEqual({ ok: false, reason: 'SECONDARY_LAGGING', lagBytes: 11 });
    expect(warmthVerdict({ bytesTotal: 100, bytesDownloaded: 100, heatmapMtime: null }, 10)).toMatchObject({ reason: 'SECONDARY_STATUS_UNKNOWN' });
    expect(warmthVerdict(null, 10)).toMatchObject({ reason: 'SECONDARY_STATUS_UNKNOWN' });
  });
});

describe('fill plan (storage:F1–F3)', () => {
  it('storage:F3: takes the fair share from the most loaded nodes, never below expected', () => {
    // 12 shards, 3 nodes → expected 4. Node 1 is empty after a drain; node 2 has 7, node 3 has 5.
    const shards = [...[0, 1, 2, 3, 4, 5, 6].map((i) => shard(`t${i}`, 0, '2', ['1'])), ...[7, 8, 9, 10, 11].map((i) => shard(`t${i}`, 0, '3', ['1']))];
    const plan = planFill('1', shards, [n('1'), n('2'), n('3')]);
    expect(plan).toHaveLength(4);
    const from = plan.map((m) => m.fromNodeId);
    expect(from.filter((x) => x === '2')).toHaveLength(3); // 7 → 4
    expect(from.filter((x) => x === '3')).toHaveLength(1); // 5 → 4
    expect(plan.every((m) => m.toNodeId === '1' && m.why === 'FAIR_SHARE')).toBe(true);
  });

  it('storage:F3: at most max(1, shardCount / nodes) shards of one tenant', () => {
    const shards = [0, 1, 2, 3, 4, 5, 6, 7].map((i) => shard('t', i, '2', ['1']));
    // 8 shards, 2 nodes: expected 4, cap 4.
    expect(planFill('1', shards, [n('1'), n('2')])).toHaveLength(4);
    // 8 shards, 4 nodes (two empty without secondaries): expected 2, cap 2.
    expect(planFill('1', shards, [n('1'), n('2'), n('3'), n('4')])).toHaveLength(2);
    // shardCount 1 (unsharded tenants): at least one per tenant.
    const single = [shard('x', 0, '2', ['1'], { shardCount: 1 }), shard('x', 0, '2', ['1'], { shardCount: 1, id: 'x2' })];
    expect(planFill('1', single, [n('1'), n('2')])).toHaveLength(1);
  });

  it('storage:F3: skips unavailable source nodes', () => {
    const shards = [0, 1, 2, 3].map((i) => shard(`t${i}`, 0, '2', ['1']));
    expect(planFill('1', shards, [n('1'), n('2', 'a', 'ACTIVE', 'OFFLINE')])).toEqual([]);
  });

  it('storage:F2: with two AZs, shards whose home is the filling node’s AZ always go home', () => {
    const shards = [shard('t1', 0, '2', ['1'], { preferredZone: 'a' }), shard('t2', 0, '2', ['1'], { preferredZone: 'b' }), shard('t3', 0, '1', ['2'])];
    // 3 shards, 2 nodes: expected 1; node 1 already has 1, so no fair-share need; the home shard moves anyway.
    const plan = planFill('1', shards, [n('1', 'a'), n('2', 'b')]);
    expect(plan).toEqual([{ shardId: 't1-0008', fromNodeId: '2', toNodeId: '1', why: 'HOME_AZ' }]);
  });

  it('storage:F1: AZ preferences count only with more than one AZ', () => {
    const shards = [shard('t1', 0, '2', ['1'], { preferredZone: 'a' }), shard('t3', 0, '1', ['2'])];
    expect(planFill('1', shards, [n('1', 'a'), n('2', 'a')])).toEqual([]);
  });

  it('only candidates with a secondary on the filling node, and never beyond the fair share (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 5 }),
        fc.array(fc.record({ tenant: fc.integer({ min: 0, max: 4 }), attached: fc.integer({ min: 0, max: 4 }), secondary: fc.integer({ min: 0, max: 4 }) }), {
          maxLength: 60,
        }),
        (nodeCount, rows) => {
          const nodes = Array.from({ length: nodeCount }, (_, i) => n(String(i)));
          const shards = rows.map((r, i) =>
            shard(
              `t${r.tenant}`,
              i,
              String(r.attached % nodeCount),
              r.secondary % nodeCount === r.attached % nodeCount ? [] : [String(r.secondary % nodeCount)],
            ),
          );
          const plan = planFill('0', shards, nodes);
          const expected = Math.floor(shards.length / nodeCount);
          const before = shards.filter((s) => s.attachedNodeId === '0').length;
          expect(plan.length).toBeLessThanOrEqual(Math.max(0, expected - before));
          for (const move of plan) {
            const s = shards.find((x) => x.id === move.shardId)!;
            expect(s.secondaryNodeIds).toContain('0');
            expect(move.fromNodeId).toBe(s.attachedNodeId);
          }
          expect(new Set(plan.map((m) => m.shardId)).size).toBe(plan.length);
          // No source node is taken below expected.
          for (const node of nodes.slice(1)) {
            const had = shards.filter((s) => s.attachedNodeId === node.id).length;
            const taken = plan.filter((m) => m.fromNodeId === node.id).length;
            if (taken > 0) expect(had - taken).toBeGreaterThanOrEqual(expected);
          }
        },
      ),
    );
  });
});

describe('neon:H10 — a cold failover target ranked as Neon’s scheduler ranks attachments', () => {
  const moves = (lost: string, shards: PlanShard[], nodes: PlanNode[]) =>
    planFailover(lost, shards, nodes).map((d) => (d.action === 'move' ? [d.shard.id, d.toNodeId, d.cold, d.why] : [d.shard.id, d.reason]));

  it('the preferred AZ first, even over a node in another AZ with fewer attached shards', () => {
    // Node 2 (az-a) already holds two attached shards, node 3 (az-b) none.
    const shards = [shard('cold', 0, '1', [], { preferredZone: 'az-a' }), shard('busy', 0, '2', ['3']), shard('busy', 1, '2', ['3'])];
    expect(moves('1', shards, [n('1', 'az-a'), n('2', 'az-a'), n('3', 'az-b')])).toEqual([['cold-0008', '2', true, 'preferred AZ az-a']]);
  });

  it('then tenant affinity: within the AZ, the node holding fewer of the tenant’s locations, even when it is busier', () => {
    // Nodes 2 and 3 are both in az-a; 3 has fewer attached shards but holds the tenant's other shard.
    const shards = [
      shard('t', 0, '1', [], { preferredZone: 'az-a' }),
      shard('t', 1, '3', ['4'], { preferredZone: 'az-a' }),
      shard('other', 0, '2', []),
      shard('other', 1, '2', []),
    ];
    expect(moves('1', shards, [n('1', 'az-a'), n('2', 'az-a'), n('3', 'az-a'), n('4', 'az-b')])).toEqual([['t-0008', '2', true, 'tenant affinity']]);
  });

  it('then utilisation, then the lowest id; each placement weighs on the tenant’s next shard', () => {
    const nodes = [n('1', 'az-a'), n('2', 'az-a'), n('3', 'az-a'), n('4', 'az-a')];
    const shards = [shard('t', 0, '1', [], { preferredZone: 'az-a' }), shard('t', 1, '1', [], { preferredZone: 'az-a' })];
    // t/0: nodes 3 and 4 tie on AZ, affinity and load: the lowest id. t/1: node 3 now holds a
    // shard of t, so node 4 wins on affinity.
    expect(moves('1', shards, [nodes[0]!, nodes[2]!, nodes[3]!])).toEqual([
      ['t-0008', '3', true, 'lowest id'],
      ['t-0108', '4', true, 'tenant affinity'],
    ]);
    expect(moves('1', [shard('t', 0, '1', [], { preferredZone: 'az-a' }), shard('u', 0, '3', [])], nodes.slice(0, 3))).toEqual([
      ['t-0008', '2', true, 'least utilised'],
    ]);
  });

  it('promoting a secondary keeps neon:H5’s order (outside the preferred AZ first), whatever the load', () => {
    const shards = [shard('s', 0, '1', ['2', '3'], { preferredZone: 'az-a' }), shard('x', 0, '3', []), shard('x', 1, '3', [])];
    expect(moves('1', shards, [n('1', 'az-a'), n('2', 'az-a'), n('3', 'az-b')])).toEqual([['s-0008', '3', false, 'secondary (neon:H5)']]);
  });
});
