/**
 * Issue 4: 50 VMs of mixed strategies on one node (simulated cluster, virtual clock). After
 * enable → COMPLETED and after disable, every VM is in the state its strategy demands
 * (the strategy table of vm:V1, vm:M2–M4, vm:T1–T2, vm:N4, vm:F1–F2, vm:D1). The expected state of each VM is derived
 * here from its spec alone, independently of the plan.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { VmSpec } from '../../plugins/fake/index.ts';
import type { ClusterVm } from '../../src/cluster/types.ts';
import type { TestApp } from '../support/graphql-app.ts';
import { cluster, disable, enable, maintenanceApp, phaseOf, untilPhase } from './harness.ts';

let t: TestApp;
afterEach(async () => {
  await t?.stop();
});

const AE = 'ShutdownAndRestartAfterEnable';
const AD = 'ShutdownAndRestartAfterDisable';
const LABELS: (string | null)[] = [null, 'Migrate', AE, AD, 'Shutdown'];
const RUN_STRATEGIES = ['Always', 'RerunOnFailure', 'Manual'] as const;

type Why = 'replica' | 'backend' | 'selector';
const nonMigratable = (name: string, why: Why): Partial<VmSpec> => {
  switch (why) {
    case 'replica':
      return {
        volumes: [
          {
            name: `${name}-disk`,
            replicas: [
              { nodeId: '1', healthy: true },
              { nodeId: '2', healthy: false },
            ],
          },
        ],
      };
    case 'backend':
      return { liveMigratable: false, liveMigratableReason: 'HostDeviceNotLiveMigratable' };
    case 'selector':
      return { nodeSelector: { 'kubernetes.io/hostname': 'node-1' } };
  }
};

/**
 * 50 running VMs on node 1 in two namespaces: 49 with the labels in turn (unset, Migrate, the
 * three shutdown-class ones) and run strategies in turn, some shutdown-class ones
 * non-migratable (vm:N4: they do not block), and one with an invalid label (vm:V2: Migrate). Plus a
 * halted after-disable VM (not running, so left alone and never restarted) and two bystanders
 * on each other node.
 * `unlabelledNonMigratable` makes that many unset-label VMs non-migratable (vm:N4: they block).
 */
function fleet(unlabelledNonMigratable: number): VmSpec[] {
  const vms: VmSpec[] = [];
  let blockers = 0;
  for (let i = 0; i < 49; i++) {
    const name = `vm-${String(i).padStart(2, '0')}`;
    const label = LABELS[i % LABELS.length]!;
    const vm: VmSpec = { namespace: i % 2 ? 'prod' : 'dev', name, nodeId: '1', maintenanceStrategyLabel: label, runStrategy: RUN_STRATEGIES[i % 3]! };
    if (label !== null && label !== 'Migrate' && i % 7 === 2) {
      // A node selector pinning the VM to node 1 would also stop it restarting elsewhere after enable.
      const why: Why = label === AE ? (i % 2 ? 'replica' : 'backend') : (['replica', 'backend', 'selector'] as const)[i % 3]!;
      Object.assign(vm, nonMigratable(name, why));
    }
    if (label === null && blockers < unlabelledNonMigratable) {
      Object.assign(vm, nonMigratable(name, (['replica', 'backend', 'selector'] as const)[blockers % 3]!));
      blockers++;
    }
    vms.push(vm);
  }
  vms.push({ namespace: 'dev', name: 'invalid-label', nodeId: '1', maintenanceStrategyLabel: 'migrate' });
  vms.push({ namespace: 'dev', name: 'already-halted', nodeId: null, runStrategy: 'Halted', status: 'Stopped', maintenanceStrategyLabel: AD });
  for (const node of ['2', '3']) for (const k of [0, 1]) vms.push({ namespace: 'other', name: `bystander-${node}-${k}`, nodeId: node });
  return vms;
}

const idOf = (s: VmSpec) => `${s.namespace ?? 'default'}/${s.name}`;
const isMigratable = (s: VmSpec) =>
  s.liveMigratable !== false &&
  Object.keys(s.nodeSelector ?? {}).length === 0 &&
  !(s.volumes ?? []).some((v) => v.replicas.filter((r) => r.healthy !== false).length === 1);

type Outcome =
  | { kind: 'untouched' }
  | { kind: 'runningElsewhere'; runStrategy: string }
  | { kind: 'runningOnNode1'; runStrategy: string }
  | { kind: 'halted'; tracking: ClusterVm['tracking'] };

/** What the spec demands of a VM on node 1 after enable → COMPLETED, from its spec alone. */
function afterEnable(s: VmSpec, force: boolean): Outcome {
  const runStrategy = s.runStrategy ?? 'Always';
  if (s.nodeId !== '1') return { kind: 'untouched' };
  const label = s.maintenanceStrategyLabel ?? null;
  if (force && label !== null) return { kind: 'halted', tracking: null }; // vm:F1
  if (force) return isMigratable(s) ? { kind: 'runningElsewhere', runStrategy } : { kind: 'halted', tracking: null }; // vm:F2
  switch (label) {
    case AE:
      return { kind: 'runningElsewhere', runStrategy }; // vm:M4, vm:T2
    case AD:
      return { kind: 'halted', tracking: { nodeName: 'node-1', strategy: AD, savedRunStrategy: runStrategy } }; // vm:T1
    case 'Shutdown':
      return { kind: 'halted', tracking: null };
    default:
      return { kind: 'runningElsewhere', runStrategy }; // Migrate, unset, invalid (vm:V2)
  }
}

/** And after disable (vm:D1): after-disable VMs run again on node 1; everything else stays as it was. */
function afterDisable(s: VmSpec, force: boolean): Outcome {
  const enabled = afterEnable(s, force);
  if (enabled.kind === 'halted' && enabled.tracking) return { kind: 'runningOnNode1', runStrategy: enabled.tracking.savedRunStrategy! };
  return enabled.kind === 'halted' ? { kind: 'halted', tracking: null } : enabled;
}

async function expectOutcomes(specs: VmSpec[], outcome: (s: VmSpec) => Outcome, where: Map<string, string | null> | null) {
  const vms = new Map((await t.cluster.listVms()).map((v) => [v.id, v]));
  expect([...vms.keys()].sort()).toEqual(specs.map(idOf).sort()); // nothing lost, nothing added
  for (const s of specs) {
    const id = idOf(s);
    const vm = vms.get(id)!;
    const o = outcome(s);
    const ctx = `${id} (${s.maintenanceStrategyLabel ?? 'unlabelled'}${isMigratable(s) ? '' : ', non-migratable'}) → ${o.kind}`;
    switch (o.kind) {
      case 'untouched':
        expect({ status: vm.status, nodeId: vm.nodeId, runStrategy: vm.runStrategy, tracking: vm.tracking }, ctx).toEqual({
          status: s.status ?? (s.nodeId ? 'Running' : 'Stopped'),
          nodeId: s.nodeId,
          runStrategy: s.runStrategy ?? 'Always',
          tracking: null,
        });
        break;
      case 'runningElsewhere':
        expect({ status: vm.status, runStrategy: vm.runStrategy, tracking: vm.tracking }, ctx).toEqual({
          status: 'Running',
          runStrategy: o.runStrategy,
          tracking: null,
        });
        expect(vm.nodeId, ctx).not.toBe('1');
        expect(vm.nodeId, ctx).not.toBeNull();
        // Nothing more happens to it on disable: it stays where enable put it.
        if (where) expect(vm.nodeId, ctx).toBe(where.get(id));
        break;
      case 'runningOnNode1':
        expect({ status: vm.status, nodeId: vm.nodeId, runStrategy: vm.runStrategy, tracking: vm.tracking }, ctx).toEqual({
          status: 'Running',
          nodeId: '1',
          runStrategy: o.runStrategy,
          tracking: null,
        });
        break;
      case 'halted':
        expect({ status: vm.status, nodeId: vm.nodeId, runStrategy: vm.runStrategy, tracking: vm.tracking }, ctx).toEqual({
          status: 'Stopped',
          nodeId: null,
          runStrategy: 'Halted',
          tracking: o.tracking,
        });
        break;
    }
  }
  return new Map([...vms].map(([id, v]) => [id, v.nodeId]));
}

/** How many VMs end in each state: pins the fleet's mix, so a change to `fleet` cannot quietly weaken the test. */
function census(specs: VmSpec[], outcome: (s: VmSpec) => Outcome): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const s of specs) {
    const o = outcome(s);
    const key = o.kind === 'halted' && o.tracking ? 'haltedTracked' : o.kind;
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}

async function enableToCompleted(specs: VmSpec[], force: boolean) {
  const op = await enable(t, '1', force ? ', force: true' : '');
  expect(op.__typename).toBe('Operation');
  const onNode1 = specs.filter((s) => s.nodeId === '1').length;
  expect(op.counts.total).toBe(onNode1);
  await untilPhase(t, '1', 'COMPLETED');
  const [latest] = await t.app.operations.listOperations({ nodeId: '1' });
  expect(latest).toMatchObject({ kind: 'MAINTENANCE', state: 'SUCCEEDED', counts: { planned: 0, moving: 0, failed: 0 } });
  // Every VM is done: moved (migrated, restarted elsewhere) or only stopped.
  expect(latest!.counts.moved + latest!.counts.stopped).toBe(onNode1);
  expect((await t.cluster.getNode('1'))?.cordoned).toBe(true);
  expect((await t.cluster.listVms({ nodeId: '1' })).filter((v) => v.status !== 'Stopped')).toEqual([]);
}

describe('50 VMs of mixed strategies on one node', () => {
  it('without force: after COMPLETED and after disable, every VM is where its strategy puts it', async () => {
    const specs = fleet(0);
    expect(specs.filter((s) => s.nodeId === '1')).toHaveLength(50);
    expect(specs.filter((s) => s.nodeId === '1' && !isMigratable(s)).map(idOf)).toEqual(['dev/vm-02', 'prod/vm-09', 'prod/vm-23', 'prod/vm-37', 'dev/vm-44']);
    expect(census(specs, (s) => afterEnable(s, false))).toEqual({ runningElsewhere: 31, haltedTracked: 10, halted: 9, untouched: 5 });
    expect(census(specs, (s) => afterDisable(s, false))).toEqual({ runningElsewhere: 31, runningOnNode1: 10, halted: 9, untouched: 5 });
    t = await maintenanceApp(cluster(specs));
    await enableToCompleted(specs, false);
    const where = await expectOutcomes(specs, (s) => afterEnable(s, false), null);
    // vm:T1 copies in the database: exactly the after-disable VMs that were running.
    const trackedIds = specs
      .filter((s) => s.nodeId === '1' && s.maintenanceStrategyLabel === AD)
      .map(idOf)
      .sort();
    expect(trackedIds).toHaveLength(10);
    expect((await t.db.prisma.vmTracking.findMany()).map((r) => r.vmId).sort()).toEqual(trackedIds);

    const result = await disable(t, '1');
    expect(result).toMatchObject({ __typename: 'DisableMaintenanceResult', failures: [], node: { cordoned: false, maintenancePhase: null } });
    expect([...result.restartedVmIds].sort()).toEqual(trackedIds);
    await expectOutcomes(specs, (s) => afterDisable(s, false), where);
    expect(await t.db.prisma.vmTracking.count()).toBe(0);
  });

  it('with unlabelled non-migratable VMs: refused without force naming exactly them; with force, vm:F1/F2 hold after COMPLETED and after disable', async () => {
    const specs = fleet(4);
    const blockers = specs.filter((s) => s.nodeId === '1' && s.maintenanceStrategyLabel === null && !isMigratable(s)).map(idOf);
    expect(blockers).toEqual(['dev/vm-00', 'prod/vm-05', 'dev/vm-10', 'prod/vm-15']);
    expect(census(specs, (s) => afterEnable(s, true))).toEqual({ runningElsewhere: 6, halted: 44, untouched: 5 });
    t = await maintenanceApp(cluster(specs));

    const refused = await enable(t, '1');
    expect(refused).toMatchObject({ __typename: 'PreconditionFailedError', failedReason: 'NON_MIGRATABLE_VMS' });
    expect(refused.blockers.map((b: { id: string }) => b.id).sort()).toEqual([...blockers].sort());
    expect(await phaseOf(t, '1')).toBeNull();
    expect((await t.cluster.listVms({ nodeId: '1' })).every((v) => v.status === 'Running')).toBe(true);

    await enableToCompleted(specs, true);
    const where = await expectOutcomes(specs, (s) => afterEnable(s, true), null);
    // vm:F1: no tracking recorded under force, so nothing to restart on disable.
    expect(await t.db.prisma.vmTracking.count()).toBe(0);
    const result = await disable(t, '1');
    expect(result).toMatchObject({ restartedVmIds: [], failures: [], node: { cordoned: false, maintenancePhase: null } });
    await t.clock.advance(10_000);
    await expectOutcomes(specs, (s) => afterDisable(s, true), where);
  });
});
