import { afterEach, describe, expect, it } from 'vitest';
import { TRACKING_NODE_ANNOTATION, TRACKING_RUN_STRATEGY_ANNOTATION, TRACKING_STRATEGY_ANNOTATION, STRATEGY_LABEL } from '../../plugins/kubevirt/index.ts';
import type { K8sSim } from '../support/k8s-sim/index.ts';
import { eventually, kubevirtApp, type KubevirtTestApp } from '../support/k8s-sim/kubevirt-app.ts';

/** Spec vm-maintenance §9 through GraphQL, with the kubevirt plugin against the API simulator; asserts on the Kubernetes objects. */
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

function seedTwo(strategy: string) {
  return (sim: K8sSim) => {
    threeNodes(sim);
    sim.addVm({ name: 'vm', nodeName: 'node-1', labels: { [STRATEGY_LABEL]: strategy } });
    sim.addVm({ name: 'control', nodeName: 'node-1' });
  };
}

describe('acceptance scenarios (spec §9), kubevirt plugin against the Kubernetes API simulator', () => {
  it('1. ShutdownAndRestartAfterDisable: Halted with tracking annotations, control migrated by a VMIM, node cordoned; disable restarts it on node-1', async () => {
    t = await kubevirtApp(seedTwo('ShutdownAndRestartAfterDisable'));
    expect((await enable('node-1')).__typename).toBe('Operation');
    await untilPhase('node-1', 'COMPLETED');
    const stopped = vmObj('vm');
    expect(stopped.spec.runStrategy).toBe('Halted');
    expect(t.sim.vmi('default', 'vm')).toBeNull();
    expect(stopped.metadata.annotations).toMatchObject({
      [TRACKING_NODE_ANNOTATION]: 'node-1',
      [TRACKING_RUN_STRATEGY_ANNOTATION]: 'Always',
      [TRACKING_STRATEGY_ANNOTATION]: 'ShutdownAndRestartAfterDisable',
    });
    expect(migrationsOf('control')).toHaveLength(1);
    expect(migrationsOf('control')[0]!.status.phase).toBe('Succeeded');
    expect(migrationsOf('vm')).toHaveLength(0);
    expect(vmiNode('control')).not.toBe('node-1');
    expect(t.sim.node('node-1')!.spec.unschedulable).toBe(true);

    const result = await disable('node-1');
    expect(result).toMatchObject({ __typename: 'DisableMaintenanceResult', restartedVmIds: ['default/vm'], failures: [], node: { cordoned: false, maintenancePhase: null } });
    expect(t.sim.node('node-1')!.spec.unschedulable).toBeUndefined();
    const restarted = vmObj('vm');
    expect(restarted.spec.runStrategy).toBe('Always');
    expect(vmiNode('vm')).toBe('node-1');
    for (const a of [TRACKING_NODE_ANNOTATION, TRACKING_RUN_STRATEGY_ANNOTATION, TRACKING_STRATEGY_ANNOTATION]) expect(restarted.metadata.annotations?.[a]).toBeUndefined();
    // The start preference used to place it is gone again.
    expect(restarted.spec.template.spec.affinity).toBeUndefined();
  });

  it('2. ShutdownAndRestartAfterEnable: stopped with tracking, then restarted elsewhere (no migration of it); disable changes nothing', async () => {
    t = await kubevirtApp(seedTwo('ShutdownAndRestartAfterEnable'));
    await enable('node-1');
    await eventually(() => vmObj('vm').spec.runStrategy === 'Halted');
    expect(vmObj('vm').metadata.annotations?.[TRACKING_STRATEGY_ANNOTATION]).toBe('ShutdownAndRestartAfterEnable');
    await untilPhase('node-1', 'COMPLETED');
    const vm = vmObj('vm');
    expect(vm.spec.runStrategy).toBe('Always');
    expect(vm.metadata.annotations?.[TRACKING_NODE_ANNOTATION]).toBeUndefined();
    const node = vmiNode('vm');
    expect(node).not.toBeNull();
    expect(node).not.toBe('node-1');
    expect(migrationsOf('vm')).toHaveLength(0);
    expect(migrationsOf('control')).toHaveLength(1);
    expect((await disable('node-1')).restartedVmIds).toEqual([]);
    expect(vmiNode('vm')).toBe(node);
  });

  it('3. Shutdown: Halted, no tracking annotations, stays off after disable', async () => {
    t = await kubevirtApp(seedTwo('Shutdown'));
    await enable('node-1');
    await untilPhase('node-1', 'COMPLETED');
    const vm = vmObj('vm');
    expect(vm.spec.runStrategy).toBe('Halted');
    expect(vm.metadata.annotations?.[TRACKING_NODE_ANNOTATION]).toBeUndefined();
    expect((await disable('node-1')).restartedVmIds).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(vmObj('vm').spec.runStrategy).toBe('Halted');
    expect(t.sim.vmi('default', 'vm')).toBeNull();
  });

  it('4. force with Longhorn last replicas: both stop without tracking, the migratable one migrates; without force refused naming the unlabelled one', async () => {
    t = await kubevirtApp((sim) => {
      threeNodes(sim);
      for (const [name, label] of [['labelled', 'ShutdownAndRestartAfterDisable'], ['unlabelled', null]] as const) {
        sim.addPvc('default', `${name}-disk`, { volumeName: `pvc-${name}` });
        sim.addReplica(`pvc-${name}`, 'node-1', true);
        sim.addReplica(`pvc-${name}`, 'node-2', false);
        sim.addVm({ name, nodeName: 'node-1', claims: [`${name}-disk`], ...(label && { labels: { [STRATEGY_LABEL]: label } }) });
      }
      sim.addVm({ name: 'mobile', nodeName: 'node-1' });
    });
    const refused = await enable('node-1');
    expect(refused).toMatchObject({ __typename: 'PreconditionFailedError', failedReason: 'NON_MIGRATABLE_VMS' });
    expect(refused.blockers).toEqual([{ id: 'default/unlabelled', reasons: ['LastHealthyReplica (volume unlabelled-disk)'] }]);
    expect(t.sim.node('node-1')!.spec.unschedulable).toBeUndefined();
    expect(t.sim.migrations()).toHaveLength(0);

    expect((await enable('node-1', ', force: true')).__typename).toBe('Operation');
    await untilPhase('node-1', 'COMPLETED');
    for (const name of ['labelled', 'unlabelled']) {
      expect(vmObj(name).spec.runStrategy).toBe('Halted');
      expect(vmObj(name).metadata.annotations?.[TRACKING_NODE_ANNOTATION]).toBeUndefined();
    }
    expect(migrationsOf('mobile')).toHaveLength(1);
    expect(vmiNode('mobile')).not.toBe('node-1');
    expect((await disable('node-1')).restartedVmIds).toEqual([]);
    for (const name of ['labelled', 'unlabelled']) expect(vmObj(name).spec.runStrategy).toBe('Halted');
  });

  it('5. node deleted while in maintenance: the tracking annotations are removed', async () => {
    t = await kubevirtApp(seedTwo('ShutdownAndRestartAfterDisable'));
    await enable('node-1');
    await untilPhase('node-1', 'COMPLETED');
    expect(vmObj('vm').metadata.annotations?.[TRACKING_NODE_ANNOTATION]).toBe('node-1');
    t.sim.deleteNode('node-1');
    await eventually(() => vmObj('vm').metadata.annotations?.[TRACKING_NODE_ANNOTATION] === undefined);
    expect(vmObj('vm').spec.runStrategy).toBe('Halted');
    expect(vmObj('vm').metadata.annotations?.[TRACKING_RUN_STRATEGY_ANNOTATION]).toBeUndefined();
    await eventually(async () => (await t.db.prisma.vmTracking.count()) === 0);
    await eventually(() => phaseOf('node-1') === null);
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
