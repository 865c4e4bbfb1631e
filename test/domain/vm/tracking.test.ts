import { describe, expect, it } from 'vitest';
import { nextPhase } from '../../../src/domain/vm/phase.ts';
import {
  restartPlacement,
  restartRunStrategy,
  restartsAfterEnable,
  restartsOnDisable,
  shouldRestart,
  trackingToClear,
  trackingToRecord,
} from '../../../src/domain/vm/tracking.ts';
import type { MaintVm, VmTracking } from '../../../src/domain/vm/types.ts';
import { node, vm } from './fixtures.ts';

const track = (strategy: string, nodeName = 'node-1', savedRunStrategy: VmTracking['savedRunStrategy'] = 'Always'): VmTracking => ({
  nodeName,
  strategy,
  savedRunStrategy,
});
const halted = (name: string, tracking: VmTracking | null, extra: Partial<MaintVm> = {}) =>
  vm('a', name, null, { runStrategy: 'Halted', status: 'Stopped', tracking, ...extra });

describe('vm:T1: what is recorded before the stop', () => {
  it('records node name, strategy and previous run strategy for the two restart strategies', () => {
    const v = vm('a', 'x', '1', { runStrategy: 'Manual' });
    expect(trackingToRecord(v, 'ShutdownAndRestartAfterDisable', node('1'))).toEqual(track('ShutdownAndRestartAfterDisable', 'node-1', 'Manual'));
    expect(trackingToRecord(v, 'ShutdownAndRestartAfterEnable', node('1'))).toEqual(track('ShutdownAndRestartAfterEnable', 'node-1', 'Manual'));
  });

  it('records nothing for Shutdown (and Migrate)', () => {
    expect(trackingToRecord(vm('a', 'x', '1'), 'Shutdown', node('1'))).toBeNull();
    expect(trackingToRecord(vm('a', 'x', '1'), 'Migrate', node('1'))).toBeNull();
  });
});

describe('vm:T2: restart restores the saved run strategy', () => {
  it('restores what was saved', () => {
    expect(restartRunStrategy(track('ShutdownAndRestartAfterDisable', 'n', 'Manual'))).toBe('Manual');
    expect(restartRunStrategy(track('ShutdownAndRestartAfterDisable', 'n', 'Always'))).toBe('Always');
  });

  it('falls back to RerunOnFailure when nothing (or Halted) was saved', () => {
    expect(restartRunStrategy(track('ShutdownAndRestartAfterDisable', 'n', null))).toBe('RerunOnFailure');
    expect(restartRunStrategy(track('ShutdownAndRestartAfterDisable', 'n', 'Halted'))).toBe('RerunOnFailure');
  });

  it('restarts only VMs still halted; one started by hand is left alone', () => {
    expect(shouldRestart(halted('x', track('ShutdownAndRestartAfterDisable')))).toBe(true);
    expect(shouldRestart(vm('a', 'x', '2', { runStrategy: 'Always', tracking: track('ShutdownAndRestartAfterDisable') }))).toBe(false);
    expect(shouldRestart(halted('x', null))).toBe(false);
  });
});

describe('vm:T3: the recorded strategy decides, not the current label', () => {
  it('restarts a tracked VM whose label was removed or changed since the stop', () => {
    expect(shouldRestart(halted('x', track('ShutdownAndRestartAfterDisable'), { maintenanceStrategyLabel: null }))).toBe(true);
    expect(shouldRestart(halted('x', track('ShutdownAndRestartAfterEnable'), { maintenanceStrategyLabel: 'Shutdown' }))).toBe(true);
  });

  it('does not restart a VM whose recorded strategy is not a restart one, whatever its label says', () => {
    expect(shouldRestart(halted('x', track('Shutdown'), { maintenanceStrategyLabel: 'ShutdownAndRestartAfterDisable' }))).toBe(false);
  });

  it('selection for disable goes by tracking too', () => {
    const vms = [halted('x', track('ShutdownAndRestartAfterDisable'), { maintenanceStrategyLabel: null })];
    expect(restartsOnDisable(vms, 'node-1').map((v) => v.id)).toEqual(['a/x']);
  });
});

describe('vm:T4: placement of a restart after disable', () => {
  const v = { ...halted('x', track('ShutdownAndRestartAfterDisable')), tracking: track('ShutdownAndRestartAfterDisable') };

  it('goes back to the recorded node when it can take the VM, even if busier', () => {
    expect(restartPlacement(v, [node('1'), node('2')], new Map([['1', 5]]))).toEqual({ nodeId: '1', warning: null });
  });

  it.each([
    ['cordoned', { cordoned: true }],
    ['not ready', { ready: false }],
    ['in maintenance', { maintenancePhase: 'DRAINING' as const }],
    ['not matching', { labels: { zone: 'b' } }],
  ])('goes elsewhere with a warning when the recorded node is %s', (_, bad) => {
    const pinned = { ...v, nodeSelector: { zone: 'a' } };
    const nodes = [node('1', { labels: { zone: 'a' }, ...bad }), node('2', { labels: { zone: 'a' } })];
    const placed = restartPlacement(pinned, nodes, new Map());
    expect(placed.nodeId).toBe('2');
    expect(placed.warning).toMatch(/a\/x.*node-1/);
  });

  it('warns when the recorded node no longer exists, and when no node can take it', () => {
    expect(restartPlacement(v, [node('2')], new Map())).toMatchObject({ nodeId: '2', warning: expect.stringContaining('no longer exists') });
    expect(restartPlacement(v, [node('1', { cordoned: true })], new Map())).toMatchObject({ nodeId: null, warning: expect.stringContaining('cannot restart') });
  });

  it('after-enable restarts go to the least-loaded node that can host them (the maintained node is in maintenance)', () => {
    const ae = { ...v, tracking: track('ShutdownAndRestartAfterEnable') };
    const nodes = [node('1', { maintenancePhase: 'EVACUATING', cordoned: true }), node('2'), node('3')];
    expect(restartPlacement(ae, nodes, new Map([['2', 1]]))).toEqual({ nodeId: '3', warning: null });
  });
});

describe('vm:T5 / vm:D1: what a disable restarts', () => {
  const vms = [
    halted('z-ad', track('ShutdownAndRestartAfterDisable')),
    halted('b-ae', track('ShutdownAndRestartAfterEnable')),
    halted('c-other-node', track('ShutdownAndRestartAfterDisable', 'node-2')),
    halted('d-untracked', null),
    vm('a', 'e-running', '1'),
  ];

  it('returns after-disable VMs and stranded after-enable VMs of this node, in namespace/name order', () => {
    expect(restartsOnDisable(vms, 'node-1').map((v) => v.id)).toEqual(['a/b-ae', 'a/z-ad']);
  });

  it('restartsAfterEnable (vm:M4) returns only the after-enable ones', () => {
    expect(restartsAfterEnable(vms, 'node-1').map((v) => v.id)).toEqual(['a/b-ae']);
  });

  it('vm:D1 composed: disable from DRAINING restarts both, each with its saved run strategy', () => {
    expect(nextPhase('DRAINING', 'disabled')).toBeNull();
    const restarts = restartsOnDisable(vms, 'node-1').filter(shouldRestart);
    expect(restarts.map((v) => [v.id, restartRunStrategy(v.tracking)])).toEqual([
      ['a/b-ae', 'Always'],
      ['a/z-ad', 'Always'],
    ]);
  });
});

describe('vm:R1: node removal clears tracking that points at it', () => {
  it('selects exactly the VMs tracked to the removed node, whatever their strategy or state', () => {
    const vms = [
      halted('b', track('ShutdownAndRestartAfterDisable')),
      vm('a', 'a', '2', { tracking: track('ShutdownAndRestartAfterEnable') }),
      halted('c', track('ShutdownAndRestartAfterDisable', 'node-2')),
      halted('d', null),
    ];
    expect(trackingToClear(vms, 'node-1').map((v) => v.id)).toEqual(['a/a', 'a/b']);
    expect(trackingToClear(vms, 'node-9')).toEqual([]);
  });
});
