import { describe, expect, it } from 'vitest';
import { effectiveEvictionStrategy, evictionMethod, isEvictionStrategy } from '../../../src/domain/vm/eviction.ts';
import { harvesterDrainImpossible } from '../../../src/domain/vm/harvester.ts';
import { planMaintenance } from '../../../src/domain/vm/plan.ts';
import type { MaintNode, MaintVm } from '../../../src/domain/vm/types.ts';

const node = (id: string, over: Partial<MaintNode> = {}): MaintNode => ({
  id,
  name: id,
  ready: true,
  cordoned: false,
  roles: [],
  labels: {},
  maintenancePhase: null,
  ...over,
});
const vm = (name: string, over: Partial<MaintVm> = {}): MaintVm => ({
  id: `default/${name}`,
  namespace: 'default',
  name,
  nodeId: 'n1',
  runStrategy: 'Always',
  status: 'Running',
  maintenanceStrategyLabel: null,
  volumes: [],
  liveMigratable: true,
  liveMigratableReason: null,
  nodeSelector: {},
  requiredNodeAffinity: [],
  tracking: null,
  ...over,
});
const nodes = [node('n1'), node('n2'), node('n3')];
const actionOf = (v: MaintVm, force = false) => planMaintenance({ nodeId: 'n1', force, nodes, vms: [v] }).vms[0]!.action.kind;

describe('k8s:E1 the effective strategy', () => {
  it("the VMI's own value, else the KubeVirt CR's, else not set (null); unknown values read as not set", () => {
    expect(effectiveEvictionStrategy('None', 'LiveMigrate')).toBe('None');
    expect(effectiveEvictionStrategy(undefined, 'External')).toBe('External');
    expect(effectiveEvictionStrategy(undefined, undefined)).toBeNull();
    expect(effectiveEvictionStrategy('Sometimes', null)).toBeNull();
    expect(isEvictionStrategy('LiveMigrateIfPossible')).toBe(true);
  });
});

describe('k8s:E4/E5 how a Migrate or unlabelled VM leaves', () => {
  it('LiveMigrate / LiveMigrateIfPossible → migration; None → EVICT; External → EXTERNAL; unset → migration (Decision)', () => {
    expect(evictionMethod('LiveMigrate')).toBe('MIGRATE');
    expect(evictionMethod('LiveMigrateIfPossible')).toBe('MIGRATE');
    expect(evictionMethod('None')).toBe('EVICT');
    expect(evictionMethod('External')).toBe('EXTERNAL');
    expect(evictionMethod(null)).toBe('MIGRATE');
    expect(evictionMethod(undefined)).toBe('MIGRATE');
    expect(actionOf(vm('a', { evictionStrategy: 'None' }))).toBe('EVICT');
    expect(actionOf(vm('a', { evictionStrategy: 'External' }))).toBe('EXTERNAL');
    expect(actionOf(vm('a', { evictionStrategy: 'LiveMigrate' }))).toBe('MIGRATE');
    expect(actionOf(vm('a', { evictionStrategy: null }))).toBe('MIGRATE');
  });

  it('a shutdown-class label wins over any eviction strategy (k8s:E4)', () => {
    for (const s of ['None', 'External', 'LiveMigrate'] as const)
      expect(actionOf(vm('a', { evictionStrategy: s, maintenanceStrategyLabel: 'Shutdown' }))).toBe('STOP');
  });

  it('only a VM that would be migrated blocks when not migratable (vm:N4); under force non-migratable VMs are halted whatever their strategy', () => {
    const gpu = { liveMigratable: false, liveMigratableReason: 'HostDeviceNotLiveMigratable' };
    const plan = (v: MaintVm, force = false) => planMaintenance({ nodeId: 'n1', force, nodes, vms: [v] });
    expect(plan(vm('a', { ...gpu, evictionStrategy: 'LiveMigrateIfPossible' })).vms[0]!.blocksEnable).toBe(true);
    expect(plan(vm('a', { ...gpu, evictionStrategy: 'LiveMigrate' })).vms[0]!.blocksEnable).toBe(true);
    expect(plan(vm('a', { ...gpu, evictionStrategy: 'None' })).vms[0]).toMatchObject({ blocksEnable: false, action: { kind: 'EVICT' } });
    expect(plan(vm('a', { ...gpu, evictionStrategy: 'External' })).vms[0]).toMatchObject({ blocksEnable: false, action: { kind: 'EXTERNAL' } });
    for (const s of ['None', 'External', 'LiveMigrateIfPossible'] as const)
      expect(plan(vm('a', { ...gpu, evictionStrategy: s }), true).vms[0]!.action).toMatchObject({ kind: 'STOP', forced: true });
  });

  it('the plan warns about VMs whose strategy nobody set, and only those it migrates', () => {
    const p = planMaintenance({
      nodeId: 'n1',
      force: false,
      nodes,
      vms: [vm('a', { evictionStrategy: null }), vm('b', { evictionStrategy: 'LiveMigrate' }), vm('c')],
    });
    expect(p.warnings.filter((w) => w.includes('no eviction strategy'))).toEqual([
      "1 VM(s) have no eviction strategy (none on the VMI or in the KubeVirt CR, so KubeVirt's default None would evict them); Lockkeeper live-migrates them as Migrate: default/a",
    ]);
  });

  it('k8s:E6: no LiveMigratable condition reads as migratable (the VMIM is accepted)', () => {
    // The plugin maps a missing condition to liveMigratable true; the plan then migrates, never blocks.
    expect(planMaintenance({ nodeId: 'n1', force: false, nodes, vms: [vm('a', { evictionStrategy: 'LiveMigrate' })] }).vms[0]).toMatchObject({
      blocksEnable: false,
      action: { kind: 'MIGRATE' },
    });
  });
});

describe("k8s:H5 and k8s:H8 Harvester's readers and checks", () => {
  it('a node carrying Harvester maintenance annotations takes no VM (dropped from migration targets)', () => {
    const marked = [node('n1'), node('n2', { externalMaintenance: 'RUNNING' }), node('n3', { externalMaintenance: 'REQUESTED' }), node('n4')];
    const p = planMaintenance({ nodeId: 'n1', force: false, nodes: marked, vms: [vm('a')] });
    expect(p.vms[0]!.action).toEqual({ kind: 'MIGRATE', targetNodeId: 'n4' });
  });

  it('DrainPossible: one control-plane node refuses; otherwise exactly 3 without maintain-status, so 2 or 4 refuse', () => {
    const cp = (id: string, maintainStatus = false) => ({ id, labels: { 'node-role.kubernetes.io/control-plane': 'true' }, maintainStatus });
    const worker = { id: 'w', labels: {}, maintainStatus: false };
    expect(harvesterDrainImpossible('w', [worker, cp('a')])).toBeNull();
    expect(harvesterDrainImpossible('a', [cp('a'), worker])).toMatch(/single controlplane cluster/);
    expect(harvesterDrainImpossible('a', [cp('a'), cp('b')])).toMatch(/another controlplane is already in maintenance mode/);
    expect(harvesterDrainImpossible('a', [cp('a'), cp('b'), cp('c')])).toBeNull();
    expect(harvesterDrainImpossible('a', [cp('a'), cp('b'), cp('c'), cp('d')])).toMatch(/another controlplane/);
    expect(harvesterDrainImpossible('a', [cp('a'), cp('b'), cp('c'), cp('d', true)])).toBeNull();
    // etcd-only nodes count too (the union of both sets).
    expect(
      harvesterDrainImpossible('a', [cp('a'), cp('b'), { id: 'e', labels: { 'node-role.kubernetes.io/etcd': 'true' }, maintainStatus: false }]),
    ).toBeNull();
  });

  it('vm:P4 is kept where Harvester differs (k8s:H8 Decision): two control-plane nodes may be maintained one at a time', () => {
    const twoCp = [node('n1', { roles: ['control-plane'] }), node('n2', { roles: ['control-plane'] }), node('n3')];
    expect(planMaintenance({ nodeId: 'n1', force: false, nodes: twoCp, vms: [] }).refusals).toEqual([]);
  });
});
