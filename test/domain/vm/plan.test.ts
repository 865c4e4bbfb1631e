import { describe, expect, it } from 'vitest';
import { planMaintenance } from '../../../src/domain/vm/plan.ts';
import type { MaintNode, MaintVm, VmPlanEntry } from '../../../src/domain/vm/types.ts';
import { deepFreeze, lastReplicaOn, node, vm } from './fixtures.ts';

const nodes = [node('1'), node('2'), node('3')];
const plan = (vms: MaintVm[], force = false, ns: MaintNode[] = nodes) => planMaintenance({ nodeId: '1', force, nodes: ns, vms });
const entry = (p: { vms: VmPlanEntry[] }, id: string) => p.vms.find((e) => e.vmId === id)!;
const labelled = (label: string, extra: Partial<MaintVm> = {}) => ({ maintenanceStrategyLabel: label, ...extra });
const stuck = { liveMigratable: false, liveMigratableReason: 'HostDeviceNotLiveMigratable' };

describe('vm:M1: planning has no side effects', () => {
  it('leaves deep-frozen inputs unchanged and returns the same plan twice', () => {
    const vms = [
      vm('a', 'mig', '1'),
      vm('a', 'ae', '1', labelled('ShutdownAndRestartAfterEnable')),
      vm('a', 'ad', '1', labelled('ShutdownAndRestartAfterDisable')),
      vm('a', 'stuck', '1', stuck),
      vm('b', 'other', '2'),
      vm('b', 'tracked', null, {
        runStrategy: 'Halted',
        tracking: { nodeName: 'node-1', strategy: 'ShutdownAndRestartAfterDisable', savedRunStrategy: 'Always' },
      }),
    ];
    const input = { nodeId: '1', force: false, nodes: structuredClone(nodes), vms: structuredClone(vms) };
    const before = structuredClone(input);
    deepFreeze(input);
    const first = planMaintenance(input);
    expect(input).toEqual(before);
    expect(planMaintenance(input)).toEqual(first);
  });
});

describe('vm:M2: coverage and order', () => {
  it('covers the node’s VMs and the stopped VMs tracked to it, in namespace/name order (natural)', () => {
    const vms = [
      vm('b', 'x', '1'),
      vm('a', 'vm-10', '1'),
      vm('a', 'vm-9', '1'),
      vm('a', 'elsewhere', '2'),
      vm('a', 'tracked', null, { runStrategy: 'Halted', tracking: { nodeName: 'node-1', strategy: 'ShutdownAndRestartAfterDisable', savedRunStrategy: null } }),
      vm('a', 'tracked-other', null, {
        runStrategy: 'Halted',
        tracking: { nodeName: 'node-2', strategy: 'ShutdownAndRestartAfterDisable', savedRunStrategy: null },
      }),
    ];
    const p = plan(vms);
    expect(p.vms.map((e) => e.vmId)).toEqual(['a/tracked', 'a/vm-9', 'a/vm-10', 'b/x']);
    expect(entry(p, 'a/tracked').action).toEqual({ kind: 'NONE', why: 'NOT_RUNNING' });
  });

  it('leaves a VM that is already halted alone', () => {
    const p = plan([
      vm('a', 'halted', '1', { runStrategy: 'Halted', status: 'Stopping', ...labelled('Shutdown') }),
      vm('a', 'stopped', '1', { status: 'Stopped', ...stuck }),
    ]);
    expect(p.vms.map((e) => e.action)).toEqual([
      { kind: 'NONE', why: 'ALREADY_HALTED' },
      { kind: 'NONE', why: 'ALREADY_HALTED' },
    ]);
    expect(p.refusals).toEqual([]);
  });
});

describe('actions per strategy (vm:V1, vm:M2)', () => {
  const p = plan([
    vm('a', '1-mig', '1'),
    vm('a', '2-ae', '1', labelled('ShutdownAndRestartAfterEnable')),
    vm('a', '3-ad', '1', labelled('ShutdownAndRestartAfterDisable')),
    vm('a', '4-sd', '1', labelled('Shutdown')),
  ]);

  it('Migrate → live-migrate to another node', () => {
    expect(entry(p, 'a/1-mig').action).toEqual({ kind: 'MIGRATE', targetNodeId: '2' });
  });
  it('ShutdownAndRestartAfterEnable → stop, tracked, restart on another node after enable', () => {
    expect(entry(p, 'a/2-ae').action).toEqual({ kind: 'STOP', restart: 'AFTER_ENABLE', track: true, restartNodeId: '3', forced: false });
  });
  it('ShutdownAndRestartAfterDisable → stop, tracked, restart on this node after disable', () => {
    expect(entry(p, 'a/3-ad').action).toEqual({ kind: 'STOP', restart: 'AFTER_DISABLE', track: true, restartNodeId: '1', forced: false });
  });
  it('Shutdown → stop, untracked, never restarted', () => {
    expect(entry(p, 'a/4-sd').action).toEqual({ kind: 'STOP', restart: 'NEVER', track: false, restartNodeId: null, forced: false });
  });
  it('is accepted', () => {
    expect(p.refusals).toEqual([]);
    expect(p.warnings).toEqual([]);
  });
});

describe('vm:V2: an invalid label on a VM', () => {
  it('is treated as Migrate with a warning, and does not refuse the request', () => {
    const p = plan([vm('a', 'odd', '1', labelled('migrate'))]);
    expect(entry(p, 'a/odd')).toMatchObject({ strategy: 'Migrate', labelValid: false, labelled: true, action: { kind: 'MIGRATE' } });
    expect(p.warnings).toEqual([expect.stringContaining('a/odd')]);
    expect(p.refusals).toEqual([]);
  });
});

describe('target prediction', () => {
  it('spreads migrations by load, counting earlier planned arrivals, then places after-enable restarts', () => {
    const vms = [
      vm('x', 'resident', '2'),
      vm('a', 'm1', '1'),
      vm('a', 'm2', '1'),
      vm('a', 'm3', '1'),
      // Restart placed after every migration, although it sorts first.
      vm('a', 'ae', '1', labelled('ShutdownAndRestartAfterEnable')),
    ];
    const p = plan(vms);
    // Loads: 2→1, 3→0. m1→3 (3:1), m2→2 (tie, lowest id; 2:2), m3→3 (3:2), ae→2 (tie).
    expect(p.vms.map((e) => [e.vmId, e.action.kind === 'MIGRATE' ? e.action.targetNodeId : e.action.kind === 'STOP' ? e.action.restartNodeId : null])).toEqual([
      ['a/ae', '2'],
      ['a/m1', '3'],
      ['a/m2', '2'],
      ['a/m3', '3'],
    ]);
  });

  it('honours the node selector of each VM', () => {
    const ns = [node('1'), node('2'), node('3', { labels: { gpu: 'yes' } })];
    const p = plan([vm('a', 'gpu', '1', { nodeSelector: { gpu: 'yes' } })], false, ns);
    expect(entry(p, 'a/gpu').action).toEqual({ kind: 'MIGRATE', targetNodeId: '3' });
  });

  it('warns when an after-enable VM has nowhere to restart', () => {
    const p = plan([vm('a', 'ae', '1', labelled('ShutdownAndRestartAfterEnable', { nodeSelector: { gpu: 'yes' } }))]);
    expect(entry(p, 'a/ae').action).toMatchObject({ kind: 'STOP', restart: 'AFTER_ENABLE', restartNodeId: null });
    expect(p.warnings).toEqual([expect.stringContaining('a/ae')]);
  });
});

describe('vm:N4: non-migratable Migrate VMs block the request without force', () => {
  const vms = [
    vm('a', 'dev', '1', stuck),
    vm('a', 'replica', '1', { volumes: [lastReplicaOn('1', 'root'), lastReplicaOn('1', 'data')] }),
    vm('a', 'pinned', '1', { nodeSelector: { gpu: 'yes' } }),
    vm('a', 'both', '1', { ...stuck, volumes: [lastReplicaOn('1')] }),
    vm('a', 'fine', '1'),
    vm('a', 'sd', '1', labelled('ShutdownAndRestartAfterDisable', stuck)),
    vm('a', 'ae', '1', labelled('ShutdownAndRestartAfterEnable', { volumes: [lastReplicaOn('1')] })),
    vm('a', 'off', '1', labelled('Shutdown', stuck)),
  ];
  const p = plan(vms);

  it('lists every such VM, grouped by reason, and says force would shut them down', () => {
    expect(p.refusals).toHaveLength(1);
    const r = p.refusals[0]!;
    expect(r.code).toBe('NON_MIGRATABLE_VMS');
    if (r.code !== 'NON_MIGRATABLE_VMS') return;
    expect(r.byReason).toEqual({
      NotLiveMigratable: ['a/both', 'a/dev'],
      LastHealthyReplica: ['a/both', 'a/replica'],
      NodeSchedulingRequirementsNotMet: ['a/pinned'],
    });
    expect(r.message).toMatch(/force would shut them down/);
    for (const id of ['a/both', 'a/dev', 'a/replica', 'a/pinned']) expect(r.message).toContain(id);
    expect(r.message).toContain('HostDeviceNotLiveMigratable');
  });

  it('marks the blocking entries and computes what force would do', () => {
    for (const id of ['a/dev', 'a/replica', 'a/pinned', 'a/both']) {
      expect(entry(p, id)).toMatchObject({ blocksEnable: true, action: { kind: 'STOP', restart: 'NEVER', track: false, forced: true } });
    }
  });

  it('shutdown-class non-migratable VMs do not block (they stop anyway)', () => {
    for (const id of ['a/sd', 'a/ae', 'a/off', 'a/fine']) expect(entry(p, id).blocksEnable).toBe(false);
    expect(entry(p, 'a/sd').nonMigratable).toEqual([{ code: 'NotLiveMigratable', backendReason: 'HostDeviceNotLiveMigratable' }]);
    expect(entry(p, 'a/sd').action).toMatchObject({ kind: 'STOP', restart: 'AFTER_DISABLE', track: true });
  });

  it('an invalid label counts as Migrate here too: its non-migratable VM blocks like an unlabelled one', () => {
    const q = plan([vm('a', 'odd', '1', labelled('shutdown', stuck))]);
    expect(q.refusals.map((r) => r.code)).toEqual(['NON_MIGRATABLE_VMS']);
  });

  it('comes after the pre-check refusals', () => {
    const q = plan([vm('a', 'dev', '1', stuck)], false, [node('1', { roles: ['control-plane'] }), node('2')]);
    expect(q.refusals.map((r) => r.code)).toEqual(['CONTROL_PLANE_QUORUM', 'NON_MIGRATABLE_VMS']);
  });
});

describe('force (vm:F1, vm:F2)', () => {
  const vms = [
    vm('a', 'ad', '1', labelled('ShutdownAndRestartAfterDisable')),
    vm('a', 'ae', '1', labelled('ShutdownAndRestartAfterEnable')),
    vm('a', 'mig', '1', labelled('Migrate')),
    vm('a', 'odd', '1', labelled('nonsense')),
    vm('a', 'sd', '1', labelled('Shutdown')),
    vm('b', 'plain', '1'),
    vm('b', 'stuck', '1', stuck),
  ];
  const p = plan(vms, true);

  it('vm:F1: every labelled VM stops and stays off, untracked, whatever the value', () => {
    for (const id of ['a/ad', 'a/ae', 'a/mig', 'a/odd', 'a/sd']) {
      expect(entry(p, id).action).toEqual({ kind: 'STOP', restart: 'NEVER', track: false, restartNodeId: null, forced: true });
    }
  });

  it('vm:F2: unlabelled VMs migrate when they can, otherwise stop for good', () => {
    expect(entry(p, 'b/plain').action).toEqual({ kind: 'MIGRATE', targetNodeId: '2' });
    expect(entry(p, 'b/stuck').action).toEqual({ kind: 'STOP', restart: 'NEVER', track: false, restartNodeId: null, forced: true });
  });

  it('force removes the vm:N4 refusal and nothing blocks', () => {
    expect(p.refusals).toEqual([]);
    expect(p.vms.every((e) => !e.blocksEnable)).toBe(true);
  });
});

describe('acceptance scenario 4 as a plan', () => {
  const ns = [node('1'), node('2')];
  const vms = [
    vm('a', 'labelled', '1', labelled('ShutdownAndRestartAfterDisable', { volumes: [lastReplicaOn('1')] })),
    vm('a', 'replica', '1', { volumes: [lastReplicaOn('1')] }),
    vm('a', 'movable', '1'),
  ];

  it('with force: the first two stop untracked for good, the third migrates', () => {
    const p = plan(vms, true, ns);
    expect(p.refusals).toEqual([]);
    expect(p.vms.map((e) => [e.vmId, e.action.kind, e.action.kind === 'STOP' && e.action.track])).toEqual([
      ['a/labelled', 'STOP', false],
      ['a/movable', 'MIGRATE', false],
      ['a/replica', 'STOP', false],
    ]);
  });

  it('without force: refused, naming only the unlabelled non-migratable VM and its reason', () => {
    const p = plan(vms, false, ns);
    expect(p.refusals).toEqual([expect.objectContaining({ code: 'NON_MIGRATABLE_VMS', byReason: { LastHealthyReplica: ['a/replica'] } })]);
    expect(p.refusals[0]!.message).not.toContain('a/labelled');
  });
});

describe('vm:P1 in the plan', () => {
  it('an unknown node yields the refusal and no VMs', () => {
    const p = planMaintenance({ nodeId: 'nope', force: false, nodes, vms: [vm('a', 'a', 'nope')] });
    expect(p).toEqual({ nodeId: 'nope', force: false, refusals: [expect.objectContaining({ code: 'NOT_FOUND' })], vms: [], warnings: [] });
  });
});
