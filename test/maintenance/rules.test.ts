import { afterEach, describe, expect, it } from 'vitest';
import { BackendError } from '../../src/cluster/errors.ts';
import type { TestApp } from '../support/graphql-app.ts';
import { driveUntil } from '../operations/drive.ts';
import { cluster, disable, enable, maintenanceApp, phaseOf, untilPhase, vm, whileDriving } from './harness.ts';

let t: TestApp;
afterEach(async () => {
  await t?.stop();
});

const on1 = (name: string, extra: object = {}) => ({ namespace: 'default', name, nodeId: '1', ...extra });

describe('V: strategies', () => {
  it("vm:V1, k8s:A6: a value outside the four exact strings is a typed error naming the field and value (the webhook's words); removing is allowed", async () => {
    t = await maintenanceApp(cluster([on1('a')]));
    const bad = await t.gql(
      'mutation { r: setVmMaintenanceStrategy(vmId: "default/a", strategy: "migrate") { __typename ... on InvalidInputError { field value message } } }',
    );
    expect(bad.data.r).toEqual({ __typename: 'InvalidInputError', field: 'strategy', value: 'migrate', message: 'invalid maintenance mode strategy: migrate' });
    expect((await vm(t, 'default/a')).maintenanceStrategyLabel).toBeNull();
    const ok = await t.gql(
      'mutation { r: setVmMaintenanceStrategy(vmId: "default/a", strategy: "Shutdown") { __typename ... on SetVmMaintenanceStrategyResult { vms { id maintenanceStrategy } } } }',
    );
    expect(ok.data.r.vms).toEqual([{ id: 'default/a', maintenanceStrategy: 'SHUTDOWN' }]);
    const removed = await t.gql(
      'mutation { r: setVmMaintenanceStrategy(vmId: "default/a", strategy: null) { ... on SetVmMaintenanceStrategyResult { vms { maintenanceStrategy maintenanceStrategyLabel } } } }',
    );
    expect(removed.data.r.vms).toEqual([{ maintenanceStrategy: 'MIGRATE', maintenanceStrategyLabel: null }]);
    const missing = await t.gql('mutation { r: setVmMaintenanceStrategy(vmId: "default/zz", strategy: "Shutdown") { __typename } }');
    expect(missing.data.r.__typename).toBe('NotFoundError');
  });

  it('vm:V2: an invalid label set behind our back is treated as Migrate, with a warning, and never blocks', async () => {
    t = await maintenanceApp(cluster([on1('odd', { maintenanceStrategyLabel: 'shutdown-please' })]));
    const plan = await t.gql('{ maintenancePlan(nodeId: "1") { accepted warnings vms { vmId strategy labelValid action targetNodeId } } }');
    expect(plan.data.maintenancePlan).toMatchObject({
      accepted: true,
      vms: [{ vmId: 'default/odd', strategy: 'MIGRATE', labelValid: false, action: 'MIGRATE' }],
    });
    expect(plan.data.maintenancePlan.warnings.join()).toContain('shutdown-please');
    await enable(t, '1');
    await untilPhase(t, '1', 'COMPLETED');
    expect((await vm(t, 'default/odd')).nodeId).not.toBe('1');
  });

  it('vm:V3: one mutation labels every VM a namespace/label selector matches; an empty selector is refused', async () => {
    t = await maintenanceApp(
      cluster([
        on1('a', { labels: { app: 'db' } }),
        on1('b', { labels: { app: 'db' } }),
        on1('c', { labels: { app: 'web' } }),
        { namespace: 'other', name: 'd', nodeId: '2', labels: { app: 'db' } },
      ]),
    );
    const res =
      await t.gql(`mutation { r: setVmMaintenanceStrategy(selector: { namespace: "default", labels: [{ key: "app", value: "db" }] }, strategy: "ShutdownAndRestartAfterDisable") {
      ... on SetVmMaintenanceStrategyResult { vms { id maintenanceStrategyLabel } } } }`);
    expect(res.data.r.vms).toEqual([
      { id: 'default/a', maintenanceStrategyLabel: 'ShutdownAndRestartAfterDisable' },
      { id: 'default/b', maintenanceStrategyLabel: 'ShutdownAndRestartAfterDisable' },
    ]);
    expect((await vm(t, 'default/c')).maintenanceStrategyLabel).toBeNull();
    expect((await vm(t, 'other/d')).maintenanceStrategyLabel).toBeNull();
    const empty = await t.gql('mutation { r: setVmMaintenanceStrategy(selector: {}, strategy: "Shutdown") { __typename ... on InvalidInputError { field } } }');
    expect(empty.data.r).toEqual({ __typename: 'InvalidInputError', field: 'selector' });
  });
});

describe('P: pre-checks, each a typed error that leaves no trace (vm:M1, vm:P5)', () => {
  it('vm:P1: unknown node → NotFound; node not ready → Unavailable', async () => {
    t = await maintenanceApp(cluster([on1('a')]));
    expect((await enable(t, '9')).__typename).toBe('NotFoundError');
    await t.cluster.simulation.setNodeOnline('1', false);
    expect((await enable(t, '1')).__typename).toBe('UnavailableError');
    expect(await phaseOf(t, '1')).toBeNull();
  });

  it('vm:P2: already in maintenance (any phase) → Conflict', async () => {
    t = await maintenanceApp(cluster([on1('a')]));
    await enable(t, '1');
    expect((await enable(t, '1')).__typename).toBe('ConflictError');
    await untilPhase(t, '1', 'COMPLETED');
    expect((await enable(t, '1')).__typename).toBe('ConflictError');
  });

  it('vm:P3: no other schedulable node → refused (Harvester #1014)', async () => {
    t = await maintenanceApp(
      cluster([on1('a')], {
        nodes: [
          { id: '1', roles: ['worker'] },
          { id: '2', roles: ['worker'], cordoned: true },
        ],
      }),
    );
    expect(await enable(t, '1')).toMatchObject({ __typename: 'PreconditionFailedError', failedReason: 'LAST_AVAILABLE_NODE' });
    expect(await phaseOf(t, '1')).toBeNull();
    expect((await t.cluster.getNode('1'))?.cordoned).toBe(false);
  });

  it('vm:P4: the only control-plane node is refused; with several, not while another is in maintenance; force does not bypass (vm:F3)', async () => {
    t = await maintenanceApp(
      cluster([], {
        nodes: [
          { id: '1', roles: ['control-plane'] },
          { id: '2', roles: ['worker'] },
          { id: '3', roles: ['worker'] },
        ],
      }),
    );
    expect(await enable(t, '1', ', force: true')).toMatchObject({ failedReason: 'CONTROL_PLANE_QUORUM' });
    await t.stop();
    t = await maintenanceApp(cluster([]));
    await enable(t, '1');
    expect(await enable(t, '2', ', force: true')).toMatchObject({ failedReason: 'CONTROL_PLANE_QUORUM' });
  });
});

describe('N: non-migratable VMs', () => {
  it('vm:N2/N3/N4: refusal lists every Migrate VM that cannot move, with reasons; a shutdown-class one does not block', async () => {
    t = await maintenanceApp(
      cluster(
        [
          on1('gpu', { liveMigratable: false, liveMigratableReason: 'HostDeviceNotLiveMigratable' }),
          on1('pinned', { nodeSelector: { only: 'here' } }),
          on1('quits', { liveMigratable: false, liveMigratableReason: 'DisksNotLiveMigratable', maintenanceStrategyLabel: 'Shutdown' }),
        ],
        { nodes: [{ id: '1', labels: { only: 'here' } }, { id: '2' }, { id: '3' }] },
      ),
    );
    const refused = await enable(t, '1');
    expect(refused.failedReason).toBe('NON_MIGRATABLE_VMS');
    expect(refused.blockers).toEqual([
      { id: 'default/gpu', reasons: ['NotLiveMigratable (HostDeviceNotLiveMigratable)'] },
      { id: 'default/pinned', reasons: ['NodeSchedulingRequirementsNotMet'] },
    ]);
    const q = await t.gql('{ vm(id: "default/gpu") { ... on VirtualMachine { migratable nonMigratableReasons } } }');
    expect(q.data.vm).toEqual({ migratable: false, nonMigratableReasons: ['NotLiveMigratable (HostDeviceNotLiveMigratable)'] });
  });
});

describe('M: the maintenance run', () => {
  it('vm:M2: stops in namespace/name order before the cordon, then migrations; an already halted VM is left alone', async () => {
    t = await maintenanceApp(
      cluster([
        on1('z-stop', { maintenanceStrategyLabel: 'Shutdown' }),
        on1('a-stop', { maintenanceStrategyLabel: 'Shutdown' }),
        on1('m'),
        on1('off', { runStrategy: 'Halted', nodeId: null }),
      ]),
    );
    const order: string[] = [];
    t.cluster.watch((e) => {
      if (e.type === 'vmChanged' && e.vm.status === 'Stopping') order.push(`stop ${e.vm.name}`);
      if (e.type === 'vmChanged' && e.vm.status === 'Migrating') order.push(`migrate ${e.vm.name}`);
      if (e.type === 'nodeChanged' && e.node.id === '1' && e.node.cordoned && !order.includes('cordon')) order.push('cordon');
    });
    await enable(t, '1');
    await untilPhase(t, '1', 'COMPLETED');
    expect(order).toEqual(['stop a-stop', 'stop z-stop', 'cordon', 'migrate m']);
    expect(t.cluster.callCounts.get('stopVm')).toBe(2);
  });

  it('vm:M3: EVACUATING says which VMs it waits on and why', async () => {
    t = await maintenanceApp(cluster([on1('slow')]), { latenciesMs: { migrate: 60_000, cordon: 10 } });
    await enable(t, '1');
    await untilPhase(t, '1', 'EVACUATING');
    await driveUntil(t, () => t.app.maintenance.activeOperation('1')?.waitingOn?.kind === 'VMS_ON_NODE');
    const res = await t.gql(
      '{ node(id: "1") { ... on ClusterNode { maintenancePhase maintenance { deadline operation { waitingOn { kind description workloadIds } } } } } }',
    );
    expect(res.data.node.maintenancePhase).toBe('EVACUATING');
    expect(res.data.node.maintenance.operation.waitingOn).toMatchObject({ kind: 'VMS_ON_NODE', workloadIds: ['default/slow'] });
    expect(res.data.node.maintenance.operation.waitingOn.description).toContain('default/slow: migrating');
  });

  it('vm:M5: a deadline that expires → ERROR listing the VMs still there and their blockers; clearMaintenanceError uncordons and keeps tracking', async () => {
    t = await maintenanceApp(cluster([on1('stuck'), on1('kept', { maintenanceStrategyLabel: 'ShutdownAndRestartAfterDisable' })]));
    t.cluster.simulation.injectFaults({ stuck: ['default/stuck'] });
    const op = await enable(t, '1', ', deadlineSeconds: 60');
    await untilPhase(t, '1', 'ERROR');
    const failed = await t.app.operations.getOperation(op.id);
    expect(failed).toMatchObject({ state: 'FAILED' });
    expect(failed!.error).toMatch(/^DEADLINE_EXCEEDED: still on the node: default\/stuck \(migrating\)/);
    const wrong = await t.gql('mutation { r: clearMaintenanceError(nodeId: "2") { __typename ... on PreconditionFailedError { reason } } }');
    expect(wrong.data.r).toEqual({ __typename: 'PreconditionFailedError', reason: 'NOT_IN_ERROR' });
    const cleared = await whileDriving(
      t,
      t.gql('mutation { r: clearMaintenanceError(nodeId: "1") { __typename ... on ClusterNode { cordoned maintenancePhase } } }'),
    );
    expect(cleared.data.r).toEqual({ __typename: 'ClusterNode', cordoned: false, maintenancePhase: null });
    expect((await vm(t, 'default/kept')).tracking).toMatchObject({ strategy: 'ShutdownAndRestartAfterDisable', nodeName: 'node-1' });
  });

  it('vm:M6: a gateway restart mid-maintenance resumes from where it was, with phase, tracking and deadline', async () => {
    const a = await maintenanceApp(cluster([on1('m1'), on1('m2'), on1('m3'), on1('after', { maintenanceStrategyLabel: 'ShutdownAndRestartAfterEnable' })]), {
      settings: { maxParallelMigrations: 1, maxOutboundMigrationsPerNode: 1 },
    });
    await enable(a, '1');
    await untilPhase(a, '1', 'EVACUATING');
    const deadline = a.app.maintenance.stateOf('1')!.deadline;
    await a.app.operations.shutdown();
    t = await maintenanceApp(cluster([]), {
      clock: a.clock,
      databaseFile: a.db.file,
      backend: () => a.cluster,
      settings: { maxParallelMigrations: 1, maxOutboundMigrationsPerNode: 1 },
    });
    expect(t.app.maintenance.stateOf('1')).toMatchObject({ phase: 'EVACUATING', deadline });
    await untilPhase(t, '1', 'COMPLETED');
    for (const id of ['default/m1', 'default/m2', 'default/m3']) expect((await a.cluster.getVm(id))?.nodeId).not.toBe('1');
    expect(await a.cluster.getVm('default/after')).toMatchObject({ status: 'Running', tracking: null });
    await a.db.close();
  });

  it('migrations stay within 5 per cluster and 2 leaving a node (KubeVirt defaults)', async () => {
    const vms = Array.from({ length: 8 }, (_, i) => on1(`m${i}`));
    t = await maintenanceApp(cluster(vms, { nodes: [{ id: '1' }, { id: '2' }, { id: '3' }, { id: '4' }] }));
    let peak = 0;
    const migrating = new Set<string>();
    t.cluster.watch((e) => {
      if (e.type !== 'vmChanged') return;
      if (e.vm.status === 'Migrating') migrating.add(e.vm.id);
      else migrating.delete(e.vm.id);
      peak = Math.max(peak, migrating.size);
    });
    await enable(t, '1');
    await untilPhase(t, '1', 'COMPLETED');
    expect(peak).toBe(2);
  });
});

describe('T and D: restart tracking and disable', () => {
  it('vm:T2: a VM started by hand meanwhile is left alone (tracking removed); vm:T3: the recorded strategy decides, not the current label', async () => {
    t = await maintenanceApp(
      cluster([
        on1('byhand', { maintenanceStrategyLabel: 'ShutdownAndRestartAfterDisable' }),
        on1('relabelled', { maintenanceStrategyLabel: 'ShutdownAndRestartAfterDisable', runStrategy: 'Manual' }),
      ]),
    );
    await enable(t, '1');
    await untilPhase(t, '1', 'COMPLETED');
    await whileDriving(t, t.cluster.startVm('default/byhand', { runStrategy: 'Always', nodeId: '2' }));
    // Changing or removing the label before the restart does not strand the VM (Harvester bug).
    await t.cluster.setVmMaintenanceStrategyLabel('default/relabelled', null);
    const result = await disable(t, '1');
    expect(result.restartedVmIds).toEqual(['default/relabelled']);
    expect(result.trackingClearedVmIds).toEqual(['default/byhand', 'default/relabelled']);
    expect(await vm(t, 'default/byhand')).toMatchObject({ nodeId: '2', tracking: null });
    // vm:T2: the saved run strategy is restored.
    expect(await vm(t, 'default/relabelled')).toMatchObject({ nodeId: '1', runStrategy: 'Manual', status: 'Running', tracking: null });
  });

  it('vm:T2: a restart whose clear a kill cut off (the VM started, its tracking gone, the database copy left) loses the copy at the next disable', async () => {
    t = await maintenanceApp(cluster([on1('vm', { maintenanceStrategyLabel: 'ShutdownAndRestartAfterDisable' }), on1('other')]));
    await enable(t, '1');
    await untilPhase(t, '1', 'COMPLETED');
    expect((await t.db.prisma.vmTracking.findMany()).map((r) => r.vmId)).toEqual(['default/vm']);
    // What the killed gateway's disable did before it died: the start, then the VM's half of the clear.
    await whileDriving(t, t.cluster.startVm('default/vm', { runStrategy: 'Always', nodeId: '1' }));
    await whileDriving(t, t.cluster.setVmTracking('default/vm', null));
    const result = await disable(t, '1');
    expect(result).toMatchObject({ restartedVmIds: [], failures: [] });
    expect(await vm(t, 'default/vm')).toMatchObject({ status: 'Running', tracking: null });
    expect(await t.db.prisma.vmTracking.count()).toBe(0);
  });

  it('vm:T4: when the recorded node cannot take it, the VM starts elsewhere and a warning says so', async () => {
    t = await maintenanceApp(cluster([on1('home', { maintenanceStrategyLabel: 'ShutdownAndRestartAfterDisable' })]));
    await enable(t, '1');
    await untilPhase(t, '1', 'COMPLETED');
    await t.cluster.simulation.setNodeOnline('1', false);
    const result = await disable(t, '1');
    expect(result.restartedVmIds).toEqual(['default/home']);
    expect(result.warnings.join()).toMatch(/default\/home restarts on node 2, not on node-1/);
    expect(result.warnings[0]).toMatch(/node 1 is unavailable and stays cordoned/);
    expect((await vm(t, 'default/home')).nodeId).toBe('2');
  });

  it('vm:T5: disable before COMPLETED also restarts RestartAfterEnable VMs that were stopped', async () => {
    t = await maintenanceApp(cluster([on1('after', { maintenanceStrategyLabel: 'ShutdownAndRestartAfterEnable' }), on1('slow')]), {
      latenciesMs: { migrate: 600_000, stop: 100, start: 100, cordon: 10 },
    });
    const op = await enable(t, '1');
    await driveUntil(t, async () => (await vm(t, 'default/after')).status === 'Stopped');
    expect(await phaseOf(t, '1')).not.toBe('COMPLETED');
    const result = await disable(t, '1');
    expect(result.restartedVmIds).toEqual(['default/after']);
    expect(await vm(t, 'default/after')).toMatchObject({ status: 'Running', tracking: null });
    expect((await t.app.operations.getOperation(op.id))?.state).toBe('CANCELLED');
  });

  it('vm:D2: the first VMs fail to restart (no node fits one, the backend refuses the next) and the others after them still restart; each failure is reported; vm:D3: disable outside maintenance is a typed error', async () => {
    const starts: string[] = [];
    const AD = { maintenanceStrategyLabel: 'ShutdownAndRestartAfterDisable' };
    t = await maintenanceApp(
      cluster([on1('a-pinned', { ...AD, nodeSelector: { disk: 'ssd' } }), on1('b-refused', AD), on1('c', AD), on1('d', AD)], {
        nodes: [
          { id: '1', name: 'node-1', labels: { disk: 'ssd' } },
          { id: '2', name: 'node-2' },
          { id: '3', name: 'node-3' },
        ],
      }),
      {
        // Every start is recorded in order; b-refused's is refused by the backend.
        backend: (c) =>
          new Proxy(c, {
            get(target, key, receiver) {
              if (key !== 'startVm') return Reflect.get(target, key, receiver);
              return (id: string, options: Parameters<typeof c.startVm>[1]) => {
                starts.push(id);
                if (id === 'default/b-refused') return Promise.reject(new BackendError('Rejected', 'admission webhook denied the start'));
                return target.startVm(id, options);
              };
            },
          }),
      },
    );
    await enable(t, '1');
    await untilPhase(t, '1', 'COMPLETED');
    // Node 1, the only SSD node, is down: a-pinned fits nowhere; the others restart elsewhere.
    await t.cluster.simulation.setNodeOnline('1', false);
    const result = await disable(t, '1');
    // The failures come first (namespace/name order) and do not stop the restarts after them.
    expect(result.failures.map((f: { vmId: string }) => f.vmId)).toEqual(['default/a-pinned', 'default/b-refused']);
    expect(result.failures[1].message).toMatch(/admission webhook denied the start/);
    expect(starts).toEqual(['default/b-refused', 'default/c', 'default/d']);
    expect(result.restartedVmIds).toEqual(['default/c', 'default/d']);
    for (const id of ['default/c', 'default/d']) expect(await vm(t, id)).toMatchObject({ status: 'Running', tracking: null });
    // The failed ones keep their tracking, so nothing is lost: a later disable or an operator can restart them.
    for (const id of ['default/a-pinned', 'default/b-refused']) expect(await vm(t, id)).toMatchObject({ status: 'Stopped', tracking: { nodeName: 'node-1' } });
    const events = await t.db.prisma.event.findMany({ where: { type: 'VM_RESTART_FAILED' }, orderBy: { seq: 'asc' } });
    expect(events.map((e) => JSON.parse(e.payload).vm)).toEqual(['default/a-pinned', 'default/b-refused']);
    expect(await disable(t, '2')).toMatchObject({ __typename: 'PreconditionFailedError', code: 'PRECONDITION_FAILED' });
  });
});
