import { describe, expect, it } from 'vitest';
import {
  hasRestarted,
  matchesSelector,
  orderNodes,
  outOfService,
  planWaves,
  quorumLimit,
  waveAdmission,
  type RolloutNodeView,
} from '../../src/domain/rollouts.ts';

const node = (id: string, extra: Partial<RolloutNodeView> = {}): RolloutNodeView => ({
  id,
  name: `node-${id}`,
  zone: null,
  roles: ['worker'],
  labels: {},
  availability: 'ACTIVE',
  cordoned: false,
  policy: 'ACTIVE',
  maintenancePhase: null,
  ...extra,
});

describe('rollout order and waves (rollout:O1)', () => {
  const nodes = [node('10', { zone: 'b' }), node('2', { zone: 'a' }), node('3', { zone: 'b' }), node('1', { zone: 'a' })];

  it('GIVEN keeps the order, BY_ID sorts naturally, ZONE_BY_ZONE groups zones', () => {
    expect(orderNodes(nodes, 'GIVEN').map((n) => n.id)).toEqual(['10', '2', '3', '1']);
    expect(orderNodes(nodes, 'BY_ID').map((n) => n.id)).toEqual(['1', '2', '3', '10']);
    expect(orderNodes(nodes, 'ZONE_BY_ZONE').map((n) => n.id)).toEqual(['1', '2', '3', '10']);
  });

  it('waves hold up to maxUnavailable nodes, never two zones under ZONE_BY_ZONE, never two control-plane nodes', () => {
    const ordered = orderNodes([...nodes, node('4', { zone: 'a' })], 'ZONE_BY_ZONE');
    expect(planWaves(ordered, { maxUnavailable: 2, order: 'ZONE_BY_ZONE' })).toEqual([['1', '2'], ['4'], ['3', '10']]);
    expect(planWaves(ordered, { maxUnavailable: 2, order: 'BY_ID' })).toEqual([['1', '2'], ['4', '3'], ['10']]);
    const cp = [node('1', { roles: ['control-plane'] }), node('2', { roles: ['etcd'] }), node('3')];
    expect(planWaves(cp, { maxUnavailable: 3, order: 'GIVEN' })).toEqual([['1'], ['2', '3']]);
  });

  it('a selector matches zones, roles and every label', () => {
    const n = node('1', { zone: 'a', roles: ['storage'], labels: { rack: 'r1', ssd: 'yes' } });
    expect(matchesSelector(n, { zones: ['a'], roles: ['storage', 'x'], labels: { rack: 'r1' } })).toBe(true);
    expect(matchesSelector(n, { zones: ['b'] })).toBe(false);
    expect(matchesSelector(n, { roles: ['worker'] })).toBe(false);
    expect(matchesSelector(n, { labels: { rack: 'r2' } })).toBe(false);
  });
});

describe('the budget (rollout:O2, rollout:O5)', () => {
  it('quorum: one node stays schedulable, at most one control-plane node out while another remains', () => {
    expect(quorumLimit([node('1'), node('2'), node('3')])).toBe(2);
    const cp = ['control-plane'];
    expect(quorumLimit([node('1', { roles: cp }), node('2', { roles: cp }), node('3', { roles: cp })])).toBe(1);
    expect(quorumLimit([node('1', { roles: cp }), node('2'), node('3')])).toBe(2);
    expect(quorumLimit([node('1')])).toBe(0);
  });

  it('counts every node out of service, whatever took it out', () => {
    expect(outOfService(node('1'))).toBeNull();
    expect(outOfService(node('1', { cordoned: true }))).toBe('cordoned');
    expect(outOfService(node('1', { availability: 'WARMING_UP' }))).toBe('WARMING_UP');
    expect(outOfService(node('1', { policy: 'PAUSE_FOR_RESTART' }))).toBe('PAUSE_FOR_RESTART');
    expect(outOfService(node('1', { policy: 'DELETING' }))).toBe('DELETING');
    expect(outOfService(node('1', { maintenancePhase: 'ERROR' }))).toBe('maintenance ERROR');
  });

  it('a wave waits while others use the budget, naming them; it never takes out the last schedulable node or the quorum', () => {
    const cluster = [node('1'), node('2', { cordoned: true }), node('3')];
    expect(waveAdmission(cluster, ['1'], 1)).toMatchObject({
      ok: false,
      kind: 'BUDGET',
      nodeIds: ['2'],
      description: 'budget of 1 node(s) used by node-2 (cordoned)',
    });
    expect(waveAdmission(cluster, ['1'], 2)).toEqual({ ok: true });
    expect(waveAdmission(cluster, ['1', '3'], 3)).toMatchObject({ ok: false, kind: 'QUORUM' });
    const cp = ['control-plane'];
    const quorum = [node('1', { roles: cp }), node('2', { roles: cp, maintenancePhase: 'COMPLETED' }), node('3', { roles: cp }), node('4')];
    expect(waveAdmission(quorum, ['1'], 3)).toMatchObject({ ok: false, kind: 'QUORUM', nodeIds: ['2', '1'] });
    expect(waveAdmission(quorum, ['4'], 3)).toEqual({ ok: true });
  });
});

describe('restarted, not merely reachable (rollout:O7)', () => {
  it('a re-attach after the hand-over, or another boot id', () => {
    expect(hasRestarted({ bootBefore: 'a', reattachedAt: null }, 'a')).toBe(false);
    expect(hasRestarted({ bootBefore: 'a', reattachedAt: null }, 'b')).toBe(true);
    expect(hasRestarted({ bootBefore: null, reattachedAt: null }, 'b')).toBe(false);
    expect(hasRestarted({ bootBefore: 'a', reattachedAt: null }, null)).toBe(false);
    expect(hasRestarted({ bootBefore: null, reattachedAt: 5 }, null)).toBe(true);
  });
});
