import { afterEach, describe, expect, it } from 'vitest';
import { clusterRoleRulesWithout } from '../support/deploy-rbac.ts';
import type { K8sSim } from '../../simulators/kubernetes/index.ts';
import { eventually, kubevirtApp, type KubevirtTestApp } from '../support/kubevirt-app.ts';

// Literals, not imported from the code under test: a changed value must fail here (issue 26).
const MAINTENANCE_STRATEGY_LABEL = 'harvesterhci.io/maintain-mode-strategy';
const TRACKING_NODE_ANNOTATION = 'harvesterhci.io/maintain-mode-strategy-node-name';

/**
 * Issue 5, "Bad input and faults", through GraphQL with the kubevirt plugin against the
 * Kubernetes API simulator: Longhorn absent, the API server down (5xx or unreachable)
 * during a maintenance and at a request, and missing RBAC.
 */
let t: KubevirtTestApp;
afterEach(async () => {
  await t?.stop();
});

const NOT_CHECKED = 'LastHealthyReplica (vm:N1) not checked: the backend cannot see volume replicas (e.g. Longhorn is not installed)';

function threeNodes(sim: K8sSim): void {
  for (const n of ['node-1', 'node-2', 'node-3']) sim.addNode(n, { zone: 'zone-a' });
}

function oneVmOnNode1(sim: K8sSim): void {
  threeNodes(sim);
  sim.addVm({ name: 'vm', nodeName: 'node-1' });
}

async function gqlData(query: string): Promise<any> {
  const res = await t.gql(query);
  if (res.errors) throw new Error(JSON.stringify(res.errors));
  return res.data;
}

const PLAN = `{ p: maintenancePlan(nodeId: "node-1") { accepted warnings refusals { code } vms { vmId action blocksEnable nonMigratableReasons } } }`;
const ENABLE = `mutation { r: enableMaintenanceMode(nodeId: "node-1") { __typename ... on Operation { id } ... on Error { code message }
  ... on PreconditionFailedError { reason blockers { id reasons } } } }`;

/** A VM with one disk whose only healthy Longhorn replica is on node-1 (with Longhorn installed). */
function lastReplicaSeed(longhorn: boolean) {
  return (sim: K8sSim) => {
    threeNodes(sim);
    sim.addPvc('default', 'disk', { volumeName: 'pvc-disk' });
    if (longhorn) {
      sim.addReplica('pvc-disk', 'node-1', true);
      sim.addReplica('pvc-disk', 'node-2', false);
    }
    sim.addVm({ name: 'vm', nodeName: 'node-1', claims: ['disk'] });
  };
}

describe('Longhorn installed or not, through maintenancePlan and enable', () => {
  it('with Longhorn: the VM whose only healthy replica is on the node is non-migratable (LastHealthyReplica) and blocks enable; no warning', async () => {
    t = await kubevirtApp(lastReplicaSeed(true));
    expect(t.backend.capabilities.replicaHealth).toBe(true);
    const { p } = await gqlData(PLAN);
    expect(p.warnings).not.toContain(NOT_CHECKED);
    expect(p.accepted).toBe(false);
    expect(p.vms).toMatchObject([{ vmId: 'default/vm', blocksEnable: true, nonMigratableReasons: ['LastHealthyReplica (volume disk)'] }]);
    const { r } = await gqlData(ENABLE);
    expect(r).toMatchObject({
      __typename: 'PreconditionFailedError',
      reason: 'NON_MIGRATABLE_VMS',
      blockers: [{ id: 'default/vm', reasons: ['LastHealthyReplica (volume disk)'] }],
    });
    expect(t.sim.node('node-1')!.spec.unschedulable).toBeUndefined();
  });

  it('without Longhorn (no replicas.longhorn.io): the plan warns that the rule was not checked, from the first plan on, and the VM migrates', async () => {
    t = await kubevirtApp(lastReplicaSeed(false), {}, { longhorn: false });
    // Known before any VM read by GraphQL: the plugin detects the CRD when it starts.
    expect(t.backend.capabilities.replicaHealth).toBe(false);
    const { p } = await gqlData(PLAN);
    expect(p.warnings).toContain(NOT_CHECKED);
    expect(p.accepted).toBe(true);
    expect(p.vms).toEqual([{ vmId: 'default/vm', action: 'MIGRATE', blocksEnable: false, nonMigratableReasons: [] }]);
    const { r } = await gqlData(ENABLE);
    expect(r.__typename).toBe('Operation');
    await eventually(() => t.app.maintenance.stateOf('node-1')?.phase === 'COMPLETED');
    expect(t.sim.vmi('default', 'vm')!.status.nodeName).not.toBe('node-1');
    expect(t.sim.migrations('default')).toHaveLength(1);
  });
});

describe('Longhorn installed or removed while Lockkeeper runs', () => {
  it('the next plan follows: the warning goes and LastHealthyReplica appears once the CRD and replicas exist, and back', async () => {
    t = await kubevirtApp(lastReplicaSeed(false), {}, { longhorn: false });
    expect((await gqlData(PLAN)).p.warnings).toContain(NOT_CHECKED);
    t.sim.setLonghornInstalled(true);
    t.sim.addReplica('pvc-disk', 'node-1', true);
    const installed = (await gqlData(PLAN)).p;
    expect(installed.warnings).not.toContain(NOT_CHECKED);
    expect(installed.vms[0].nonMigratableReasons).toEqual(['LastHealthyReplica (volume disk)']);
    expect(t.backend.capabilities.replicaHealth).toBe(true);
    t.sim.setLonghornInstalled(false);
    const removed = (await gqlData(PLAN)).p;
    expect(removed.warnings).toContain(NOT_CHECKED);
    expect(removed.vms[0].nonMigratableReasons).toEqual([]);
  });
});

const OPERATION = (id: string) => `{ o: operation(id: "${id}") { ... on Operation { state error waitingOn { description }
  steps(first: 50) { edges { node { workloadId state reason error } } } } } }`;

describe('the API server down during a maintenance', () => {
  for (const fault of ['5xx', 'unreachable'] as const) {
    it(`${fault}: the maintenance pauses, its operation says it is retrying, and it completes once the API server is back`, async () => {
      t = await kubevirtApp((sim) => {
        threeNodes(sim);
        sim.controller.delays.stopMs = 600;
        sim.controller.delays.migrateMs = 600;
        sim.addVm({ name: 'stopper', nodeName: 'node-1', labels: { [MAINTENANCE_STRATEGY_LABEL]: 'Shutdown' } });
        sim.addVm({ name: 'mover', nodeName: 'node-1' });
      });
      const { r } = await gqlData(ENABLE);
      expect(r.__typename).toBe('Operation');
      // The stop is written and the migration created: the API server goes away while both are under way.
      await eventually(
        () => t.sim.vm('default', 'stopper')!.spec.runStrategy === 'Halted' && t.sim.migrations('default').some((m) => m.status?.phase === 'Running'),
      );
      if (fault === '5xx') t.sim.api.setOutage(503);
      else await t.sim.setReachable(false);

      let waiting = '';
      await eventually(async () => {
        waiting = (await gqlData(OPERATION(r.id))).o.waitingOn?.description ?? '';
        return /retrying/.test(waiting);
      });
      expect(waiting).toMatch(fault === '5xx' ? /HTTP 503/ : /unreachable/);
      expect((await gqlData(OPERATION(r.id))).o.state).toBe('RUNNING');
      // Reads at the request: a typed Unavailable, nothing changed.
      const refused = await gqlData(`mutation { r: enableMaintenanceMode(nodeId: "node-2") { __typename ... on UnavailableError { code message } } }`);
      expect(refused.r).toMatchObject({ __typename: 'UnavailableError', code: 'UNAVAILABLE' });
      expect(refused.r.message).toMatch(fault === '5xx' ? /Kubernetes API server unavailable \(.*HTTP 503\)/ : /Kubernetes API server unreachable/);
      // The controllers finish the stop and the migration meanwhile; the gateway, unable to see it, stays EVACUATING.
      await eventually(() => t.sim.vmi('default', 'stopper') === null && t.sim.migrations('default').some((m) => m.status?.phase === 'Succeeded'));
      expect(t.app.maintenance.stateOf('node-1')?.phase).toBe('EVACUATING');

      if (fault === '5xx') t.sim.api.setOutage(null);
      else await t.sim.setReachable(true);
      let o: any;
      await eventually(async () => {
        o = (await gqlData(OPERATION(r.id))).o;
        return o.state !== 'RUNNING';
      });
      expect(o.state).toBe('SUCCEEDED');
      expect(t.app.maintenance.stateOf('node-1')?.phase).toBe('COMPLETED');
      const steps = Object.fromEntries(o.steps.edges.map((e: any) => [e.node.workloadId, e.node.state]));
      expect(steps).toEqual({ 'default/stopper': 'STOPPED', 'default/mover': 'MOVED' });
      // The Kubernetes objects: stopped, migrated by exactly one migration (none re-created), node cordoned.
      expect(t.sim.vm('default', 'stopper')!.spec.runStrategy).toBe('Halted');
      expect(t.sim.vmi('default', 'stopper')).toBeNull();
      expect(t.sim.migrations('default').map((m) => [m.spec.vmiName, m.status.phase])).toEqual([['mover', 'Succeeded']]);
      expect(t.sim.vmi('default', 'mover')!.status.nodeName).not.toBe('node-1');
      expect(t.sim.node('node-1')!.spec.unschedulable).toBe(true);
    });
  }

  it('enable while the API server is unreachable: a typed UnavailableError naming the unreachable server, nothing changed', async () => {
    t = await kubevirtApp(oneVmOnNode1);
    await t.sim.setReachable(false);
    const { r } = await gqlData(ENABLE);
    expect(r).toMatchObject({ __typename: 'UnavailableError', code: 'UNAVAILABLE' });
    expect(r.message).toMatch(/^Kubernetes API server unreachable \(list /);
    await t.sim.setReachable(true);
    expect(t.app.maintenance.stateOf('node-1')).toBeNull();
    expect(t.sim.node('node-1')!.spec.unschedulable).toBeUndefined();
    expect(t.sim.migrations()).toHaveLength(0);
  });

  // `node(id)` has UnavailableError in its union; connections and the plan answer a GraphQL
  // error with extensions.code UNAVAILABLE (not masked).
  it('reads during an outage: node(id), vms and maintenancePlan answer a typed Unavailable', async () => {
    t = await kubevirtApp(oneVmOnNode1);
    t.sim.api.setOutage(503);
    const node = await t.gql(`{ node(id: "node-1") { __typename ... on Error { code message } } }`);
    expect(node.data?.node).toMatchObject({ __typename: 'UnavailableError', code: 'UNAVAILABLE' });
    const plan = await t.gql(`{ maintenancePlan(nodeId: "node-1") { accepted } }`);
    expect(JSON.stringify(plan.errors)).toMatch(/UNAVAILABLE.*HTTP 503|HTTP 503.*UNAVAILABLE/);
    const vms = await t.gql(`{ vms(first: 5) { edges { node { id } } } }`);
    expect(JSON.stringify(vms.errors)).toMatch(/UNAVAILABLE/);
  });
});

describe('missing RBAC, as a GraphQL caller sees it', () => {
  it('enable refused: PreconditionFailedError BACKEND_REJECTED naming the verb and resource to grant', async () => {
    t = await kubevirtApp(oneVmOnNode1);
    t.sim.setRules(clusterRoleRulesWithout({ group: '', resource: 'persistentvolumeclaims', verb: 'list' }));
    const { r } = await gqlData(ENABLE);
    expect(r).toMatchObject({ __typename: 'PreconditionFailedError', code: 'PRECONDITION_FAILED', reason: 'BACKEND_REJECTED' });
    expect(r.message).toMatch(/forbidden: .*grant verb "list" on resource "persistentvolumeclaims"/);
    expect(t.app.maintenance.stateOf('node-1')).toBeNull();
  });

  it('a step error: the migration step fails naming verb "create" on virtualmachineinstancemigrations in API group kubevirt.io', async () => {
    t = await kubevirtApp(oneVmOnNode1);
    t.sim.setRules(clusterRoleRulesWithout({ group: 'kubevirt.io', resource: 'virtualmachineinstancemigrations', verb: 'create' }));
    const { r } = await gqlData(ENABLE);
    expect(r.__typename).toBe('Operation');
    let step: any;
    await eventually(async () => {
      step = (await gqlData(OPERATION(r.id))).o.steps.edges.map((e: any) => e.node).find((s: any) => s.workloadId === 'default/vm');
      return step?.state === 'FAILED';
    });
    expect(step.reason).toBe('REJECTED');
    expect(step.error).toMatch(
      /lacks RBAC permission to create virtualmachineinstancemigrations in API group "kubevirt.io" \(grant verb "create" on resource "virtualmachineinstancemigrations"\)/,
    );
    // The operation's progress names it too, as what keeps the VM on the node.
    await eventually(async () => /default\/vm: migration failed: .*grant verb "create"/.test((await gqlData(OPERATION(r.id))).o.waitingOn?.description ?? ''));
    expect(t.sim.migrations()).toHaveLength(0);
    expect(t.sim.node('node-1')!.spec.unschedulable).toBe(true);
    // Nothing stopped it: the VM still runs where it was.
    expect(t.sim.vmi('default', 'vm')!.status.nodeName).toBe('node-1');
    expect(t.sim.vm('default', 'vm')!.metadata.annotations?.[TRACKING_NODE_ANNOTATION]).toBeUndefined();
  });
});
