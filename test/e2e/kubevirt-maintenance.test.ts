import { afterEach, describe, expect, it } from 'vitest';
import type { K8sObject, K8sSim } from '../../simulators/kubernetes/index.ts';
import { caughtUp, eventually, kubevirtApp, type KubevirtTestApp } from '../support/kubevirt-app.ts';

// Literals, not imported from the code under test: a changed value must fail here (issue 26).
const HOSTNAME_LABEL = 'kubernetes.io/hostname';
const MAINTENANCE_STRATEGY_LABEL = 'harvesterhci.io/maintain-mode-strategy';
const MANAGED_BY = 'lockkeeper';
const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
const START_PREFERENCE_KEY = 'lockkeeper.io/start-on';
const TRACKING_NODE_ANNOTATION = 'harvesterhci.io/maintain-mode-strategy-node-name';
const TRACKING_RUN_STRATEGY_ANNOTATION = 'harvesterhci.io/vmRunStrategy';
const TRACKING_STRATEGY_ANNOTATION = 'lockkeeper.io/maintain-mode-recorded-strategy';

/** vm:scenario-1–5 through GraphQL, with the kubevirt plugin against the API simulator; asserts on the Kubernetes objects. */
let t: KubevirtTestApp;
afterEach(async () => {
  await t?.stop();
});

const ENABLE = `__typename ... on Operation { id } ... on Error { code message } ... on PreconditionFailedError { failedReason: reason blockers { id reasons } }`;

async function enable(nodeId: string, args = '') {
  const res = await t.gql(`mutation { r: enableMaintenanceMode(nodeId: "${nodeId}"${args}) { ${ENABLE} } }`);
  if (res.errors) throw new Error(JSON.stringify(res.errors));
  return res.data.r;
}

async function disable(nodeId: string) {
  const res = await t.gql(`mutation { r: disableMaintenanceMode(nodeId: "${nodeId}") { __typename
    ... on DisableMaintenanceResult { restartedVmIds failures { vmId message } node { cordoned maintenancePhase } }
    ... on Error { code message } } }`);
  if (res.errors) throw new Error(JSON.stringify(res.errors));
  return res.data.r;
}

const phaseOf = (nodeId: string) => t.app.maintenance.stateOf(nodeId)?.phase ?? null;
const untilPhase = (nodeId: string, phase: string) => eventually(() => phaseOf(nodeId) === phase);

function threeNodes(sim: K8sSim): void {
  for (const n of ['node-1', 'node-2', 'node-3']) sim.addNode(n, { roles: ['control-plane', 'worker'], zone: 'zone-a' });
}

const vmObj = (name: string) => t.sim.vm('default', name)!;
const vmiNode = (name: string) => t.sim.vmi('default', name)?.status?.nodeName ?? null;
const migrationsOf = (name: string) => t.sim.migrations('default').filter((m) => m.spec?.vmiName === name);
const TRACKING = [TRACKING_NODE_ANNOTATION, TRACKING_RUN_STRATEGY_ANNOTATION, TRACKING_STRATEGY_ANNOTATION];

/** Every version of each VirtualMachine written from now on (by the plugin or the controller), by name. */
function recordVmHistory(): Map<string, K8sObject[]> {
  const history = new Map<string, K8sObject[]>();
  const vms = t.sim.def('virtualmachines', 'kubevirt.io');
  t.sim.store.subscribe((e) => {
    if (e.resource !== vms || e.type === 'DELETED') return;
    const list = history.get(e.object.metadata.name) ?? [];
    list.push(structuredClone(e.object));
    history.set(e.object.metadata.name, list);
  });
  return history;
}

/** No version of the VM ever carried a tracking annotation. */
function neverTracked(history: Map<string, K8sObject[]>, name: string): void {
  for (const v of history.get(name) ?? [])
    for (const a of TRACKING) expect(v.metadata.annotations?.[a], `${name} at resourceVersion ${v.metadata.resourceVersion}`).toBeUndefined();
}

/** The one VirtualMachineInstanceMigration of the VM: ours, succeeded, aimed at the node its VMI now runs on (off node-1). */
function expectMigratedOnce(name: string): void {
  const [m, ...more] = migrationsOf(name);
  expect(more).toHaveLength(0);
  expect(m).toBeDefined();
  expect(m!.metadata.labels?.[MANAGED_BY_LABEL]).toBe(MANAGED_BY);
  expect(m!.metadata.name.startsWith(`${name}-lockkeeper-`)).toBe(true);
  expect(m!.status.phase).toBe('Succeeded');
  const now = vmiNode(name);
  expect(now).not.toBeNull();
  expect(now).not.toBe('node-1');
  expect(m!.spec.addedNodeSelector).toEqual({ [HOSTNAME_LABEL]: now });
  // Migrated, not restarted: the run strategy was never touched.
  expect(vmObj(name).spec.runStrategy).toBe('Always');
}

function seedTwo(strategy: string) {
  return (sim: K8sSim) => {
    threeNodes(sim);
    sim.addVm({ name: 'vm', nodeName: 'node-1', labels: { [MAINTENANCE_STRATEGY_LABEL]: strategy } });
    sim.addVm({ name: 'control', nodeName: 'node-1' });
  };
}

describe('vm:scenario-1–5, kubevirt plugin against the Kubernetes API simulator', () => {
  it('1. ShutdownAndRestartAfterDisable: Halted with tracking annotations, control migrated by a VMIM, node cordoned; disable restarts it on node-1', async () => {
    t = await kubevirtApp(seedTwo('ShutdownAndRestartAfterDisable'));
    const history = recordVmHistory();
    expect((await enable('node-1')).__typename).toBe('Operation');
    await untilPhase('node-1', 'COMPLETED');
    const stopped = vmObj('vm');
    expect(stopped.spec.runStrategy).toBe('Halted');
    expect(t.sim.vmi('default', 'vm')).toBeNull();
    expect(stopped.metadata.labels?.[MAINTENANCE_STRATEGY_LABEL]).toBe('ShutdownAndRestartAfterDisable');
    expect(stopped.metadata.annotations).toMatchObject({
      [TRACKING_NODE_ANNOTATION]: 'node-1',
      [TRACKING_RUN_STRATEGY_ANNOTATION]: 'Always',
      [TRACKING_STRATEGY_ANNOTATION]: 'ShutdownAndRestartAfterDisable',
    });
    // vm:T1: the tracking was written before the run strategy went to Halted.
    const versions = history.get('vm')!;
    const firstTracked = versions.findIndex((v) => v.metadata.annotations?.[TRACKING_NODE_ANNOTATION] === 'node-1');
    const firstHalted = versions.findIndex((v) => v.spec.runStrategy === 'Halted');
    expect(firstTracked).toBeGreaterThanOrEqual(0);
    expect(firstTracked).toBeLessThan(firstHalted);
    expectMigratedOnce('control');
    expect(migrationsOf('vm')).toHaveLength(0);
    expect(t.sim.node('node-1')!.spec.unschedulable).toBe(true);
    neverTracked(history, 'control');

    const result = await disable('node-1');
    expect(result).toMatchObject({
      __typename: 'DisableMaintenanceResult',
      restartedVmIds: ['default/vm'],
      failures: [],
      node: { cordoned: false, maintenancePhase: null },
    });
    expect(t.sim.node('node-1')!.spec.unschedulable).toBeUndefined();
    const restarted = vmObj('vm');
    expect(restarted.spec.runStrategy).toBe('Always');
    expect(vmiNode('vm')).toBe('node-1');
    for (const a of TRACKING) expect(restarted.metadata.annotations?.[a]).toBeUndefined();
    expect(restarted.metadata.labels?.[MAINTENANCE_STRATEGY_LABEL]).toBe('ShutdownAndRestartAfterDisable');
    // The start preference used to place it (annotation and preferred affinity) is gone again.
    expect(restarted.metadata.annotations?.[START_PREFERENCE_KEY]).toBeUndefined();
    expect(restarted.spec.template.spec.affinity).toBeUndefined();
    expect(history.get('vm')!.some((v) => v.metadata.annotations?.[START_PREFERENCE_KEY] === 'node-1')).toBe(true);
    // Restarted, not migrated; the control stays where it went.
    expect(migrationsOf('vm')).toHaveLength(0);
    expect(t.sim.migrations('default')).toHaveLength(1);
  });

  it('2. ShutdownAndRestartAfterEnable: stopped with tracking, then restarted elsewhere (no migration of it); disable changes nothing', async () => {
    t = await kubevirtApp(seedTwo('ShutdownAndRestartAfterEnable'));
    const history = recordVmHistory();
    await enable('node-1');
    await untilPhase('node-1', 'COMPLETED');
    // On the way: Halted, with the tracking annotations of a stop-and-restart (vm:T1), and no VMI.
    const halted = history.get('vm')!.find((v) => v.spec.runStrategy === 'Halted');
    expect(halted?.metadata.annotations).toMatchObject({
      [TRACKING_NODE_ANNOTATION]: 'node-1',
      [TRACKING_RUN_STRATEGY_ANNOTATION]: 'Always',
      [TRACKING_STRATEGY_ANNOTATION]: 'ShutdownAndRestartAfterEnable',
    });
    expect(history.get('vm')!.some((v) => v.spec.runStrategy === 'Halted' && v.status?.printableStatus === 'Stopped')).toBe(true);
    const vm = vmObj('vm');
    expect(vm.spec.runStrategy).toBe('Always');
    for (const a of TRACKING) expect(vm.metadata.annotations?.[a]).toBeUndefined();
    expect(vm.metadata.labels?.[MAINTENANCE_STRATEGY_LABEL]).toBe('ShutdownAndRestartAfterEnable');
    const node = vmiNode('vm');
    expect(node).not.toBeNull();
    expect(node).not.toBe('node-1');
    expect(migrationsOf('vm')).toHaveLength(0);
    expectMigratedOnce('control');
    expect(t.sim.node('node-1')!.spec.unschedulable).toBe(true);
    const before = vmObj('vm').metadata.resourceVersion;
    expect((await disable('node-1')).restartedVmIds).toEqual([]);
    expect(vmiNode('vm')).toBe(node);
    // Disable wrote nothing to the VM and created no migration.
    expect(vmObj('vm').metadata.resourceVersion).toBe(before);
    expect(t.sim.migrations('default')).toHaveLength(1);
    expect(t.sim.node('node-1')!.spec.unschedulable).toBeUndefined();
  });

  it('3. Shutdown: Halted, no tracking annotations ever, stays off after disable', async () => {
    t = await kubevirtApp(seedTwo('Shutdown'));
    const history = recordVmHistory();
    await enable('node-1');
    await untilPhase('node-1', 'COMPLETED');
    const vm = vmObj('vm');
    expect(vm.spec.runStrategy).toBe('Halted');
    expect(t.sim.vmi('default', 'vm')).toBeNull();
    expect(vm.metadata.labels?.[MAINTENANCE_STRATEGY_LABEL]).toBe('Shutdown');
    neverTracked(history, 'vm');
    expect(migrationsOf('vm')).toHaveLength(0);
    expectMigratedOnce('control');
    expect(t.sim.node('node-1')!.spec.unschedulable).toBe(true);
    const versionsBefore = history.get('vm')?.length ?? 0;
    expect((await disable('node-1')).restartedVmIds).toEqual([]);
    // The gateway has seen everything the API server did since: no version after the disable runs it.
    await caughtUp(t.sim, t.backend);
    expect((history.get('vm') ?? []).slice(versionsBefore).every((v) => v.spec.runStrategy === 'Halted')).toBe(true);
    expect(vmObj('vm').spec.runStrategy).toBe('Halted');
    expect(t.sim.vmi('default', 'vm')).toBeNull();
    neverTracked(history, 'vm');
    expect(t.sim.node('node-1')!.spec.unschedulable).toBeUndefined();
  });

  it('4. force with Longhorn last replicas: both stop without tracking, the migratable one migrates; without force refused naming the unlabelled one', async () => {
    t = await kubevirtApp((sim) => {
      threeNodes(sim);
      for (const [name, label] of [
        ['labelled', 'ShutdownAndRestartAfterDisable'],
        ['unlabelled', null],
      ] as const) {
        sim.addPvc('default', `${name}-disk`, { volumeName: `pvc-${name}` });
        sim.addReplica(`pvc-${name}`, 'node-1', true);
        sim.addReplica(`pvc-${name}`, 'node-2', false);
        sim.addVm({ name, nodeName: 'node-1', claims: [`${name}-disk`], ...(label && { labels: { [MAINTENANCE_STRATEGY_LABEL]: label } }) });
      }
      sim.addVm({ name: 'mobile', nodeName: 'node-1' });
    });
    const history = recordVmHistory();
    const refused = await enable('node-1');
    expect(refused).toMatchObject({ __typename: 'PreconditionFailedError', failedReason: 'NON_MIGRATABLE_VMS' });
    expect(refused.blockers).toEqual([{ id: 'default/unlabelled', reasons: ['LastHealthyReplica (volume unlabelled-disk)'] }]);
    // Refused: not a single write to the cluster.
    expect(t.sim.node('node-1')!.spec.unschedulable).toBeUndefined();
    expect(t.sim.migrations()).toHaveLength(0);
    expect(history.size).toBe(0);

    expect((await enable('node-1', ', force: true')).__typename).toBe('Operation');
    await untilPhase('node-1', 'COMPLETED');
    for (const name of ['labelled', 'unlabelled']) {
      expect(vmObj(name).spec.runStrategy).toBe('Halted');
      expect(t.sim.vmi('default', name)).toBeNull();
      neverTracked(history, name);
      expect(migrationsOf(name)).toHaveLength(0);
    }
    // Force does not label the unlabelled VM; the labelled one keeps its label.
    expect(vmObj('unlabelled').metadata.labels?.[MAINTENANCE_STRATEGY_LABEL]).toBeUndefined();
    expect(vmObj('labelled').metadata.labels?.[MAINTENANCE_STRATEGY_LABEL]).toBe('ShutdownAndRestartAfterDisable');
    expectMigratedOnce('mobile');
    expect(t.sim.node('node-1')!.spec.unschedulable).toBe(true);
    const versionsBefore = new Map(['labelled', 'unlabelled'].map((name) => [name, history.get(name)?.length ?? 0]));
    expect((await disable('node-1')).restartedVmIds).toEqual([]);
    await caughtUp(t.sim, t.backend);
    for (const name of ['labelled', 'unlabelled']) {
      const after = (history.get(name) ?? []).slice(versionsBefore.get(name));
      expect(
        after.every((v) => v.spec.runStrategy === 'Halted'),
        name,
      ).toBe(true);
      expect(vmObj(name).spec.runStrategy).toBe('Halted');
      expect(t.sim.vmi('default', name)).toBeNull();
    }
    expect(t.sim.migrations('default')).toHaveLength(1);
  });

  it('5. node deleted while in maintenance: the tracking annotations are removed, the VM is not restarted', async () => {
    t = await kubevirtApp(seedTwo('ShutdownAndRestartAfterDisable'));
    await enable('node-1');
    await untilPhase('node-1', 'COMPLETED');
    expect(vmObj('vm').metadata.annotations).toMatchObject({
      [TRACKING_NODE_ANNOTATION]: 'node-1',
      [TRACKING_RUN_STRATEGY_ANNOTATION]: 'Always',
      [TRACKING_STRATEGY_ANNOTATION]: 'ShutdownAndRestartAfterDisable',
    });
    expectMigratedOnce('control');
    t.sim.deleteNode('node-1');
    await eventually(() => vmObj('vm').metadata.annotations?.[TRACKING_NODE_ANNOTATION] === undefined);
    const vm = vmObj('vm');
    for (const a of TRACKING) expect(vm.metadata.annotations?.[a]).toBeUndefined();
    // vm:R1: cleared, not restarted: run strategy unchanged, no VMI, label kept, no migration.
    expect(vm.spec.runStrategy).toBe('Halted');
    expect(vm.metadata.labels?.[MAINTENANCE_STRATEGY_LABEL]).toBe('ShutdownAndRestartAfterDisable');
    await eventually(async () => (await t.db.prisma.vmTracking.count()) === 0);
    await eventually(() => phaseOf('node-1') === null);
    expect(t.sim.vmi('default', 'vm')).toBeNull();
    expect(t.sim.migrations('default')).toHaveLength(1);
  });
});

describe('faults during maintenance, kubevirt plugin', () => {
  it('a VM deleted during its migration is recorded as gone (SKIPPED VM_GONE) and the node still completes', async () => {
    t = await kubevirtApp((sim) => {
      threeNodes(sim);
      sim.controller.delays.migrateMs = 1500;
      sim.addVm({ name: 'doomed', nodeName: 'node-1' });
    });
    await enable('node-1');
    await eventually(() => migrationsOf('doomed')[0]?.status?.phase === 'Running');
    t.sim.store.delete(t.sim.def('virtualmachines', 'kubevirt.io'), 'default', 'doomed');
    t.sim.store.delete(t.sim.def('virtualmachineinstances', 'kubevirt.io'), 'default', 'doomed');
    await untilPhase('node-1', 'COMPLETED');
    const step = await t.db.prisma.operationStep.findFirst({ where: { workloadId: 'default/doomed' } });
    expect(step).toMatchObject({ state: 'SKIPPED', reason: 'VM_GONE' });
  });
});
