import { afterEach, describe, expect, it } from 'vitest';
import { DRAIN_FORCED, DRAIN_REQUESTED, MAINTAIN_STATUS, type K8sObject, type K8sSim, type RecordedCall } from '../../simulators/kubernetes/index.ts';
import { caughtUp, eventually, kubevirtApp, type KubevirtTestApp } from '../support/kubevirt-app.ts';

// Literals, not imported from the code under test: a changed value must fail here (issue 26).
const MAINTENANCE_STRATEGY_LABEL = 'harvesterhci.io/maintain-mode-strategy';

/** k8s:scenario-6 through GraphQL: Harvester's node state written by Lockkeeper on a cluster without Harvester (k8s:H1, k8s:H3, k8s:H4, k8s:H7). */
let t: KubevirtTestApp;
afterEach(async () => {
  await t?.stop();
});

async function gql(query: string) {
  const res = await t.gql(query);
  if (res.errors) throw new Error(JSON.stringify(res.errors));
  return res.data;
}
const phase = () => t.app.maintenance.stateOf('n1')?.phase ?? null;
const nodeWrites = (from = 0): RecordedCall[] => t.sim.calls.slice(from).filter((c) => c.resource === 'nodes' && c.verb === 'patch' && c.name === 'n1');

function seed(sim: K8sSim): void {
  for (const n of ['n1', 'n2', 'n3']) sim.addNode(n, { roles: ['worker'] });
  sim.addVm({ name: 'sd', nodeName: 'n1', labels: { [MAINTENANCE_STRATEGY_LABEL]: 'Shutdown' } });
  sim.addVm({ name: 'mig', nodeName: 'n1' });
  sim.addVm({ name: 'gpu', nodeName: 'n1', gpu: true });
}

describe('k8s:scenario-6: node state on a cluster without Harvester', () => {
  it('a failed VALIDATING writes nothing; enable writes drain-requested (+ drain-forced), the cordon, one update to running removing both, then completed', async () => {
    t = await kubevirtApp(seed);
    // vm:N4 (a non-migratable VM): refused before any write (k8s:H3: nothing during VALIDATING).
    const refused = (await gql(`mutation { r: enableMaintenanceMode(nodeId: "n1") { __typename } }`)).r;
    expect(refused.__typename).toBe('PreconditionFailedError');
    expect(nodeWrites()).toEqual([]);

    // Every version of the node and of the VMs, in the order the API server stored them.
    const history: { kind: string; object: K8sObject }[] = [];
    t.sim.store.subscribe((e) => history.push({ kind: e.resource.kind, object: structuredClone(e.object) }));
    await gql(`mutation { r: enableMaintenanceMode(nodeId: "n1", force: true) { __typename } }`);
    await eventually(() => phase() === 'COMPLETED');
    expect(nodeWrites().map((c) => c.body)).toEqual([
      { metadata: { annotations: { [DRAIN_REQUESTED]: 'true', [DRAIN_FORCED]: 'true' } } },
      { spec: { unschedulable: true } },
      { metadata: { annotations: { [MAINTAIN_STATUS]: 'running', [DRAIN_REQUESTED]: null, [DRAIN_FORCED]: null } } },
      { metadata: { annotations: { [MAINTAIN_STATUS]: 'completed' } } },
    ]);
    // The request went on the node before any stop (k8s:H3), as Harvester's API writes it.
    const requested = history.findIndex((h) => h.kind === 'Node' && h.object.metadata.annotations?.[DRAIN_REQUESTED] === 'true');
    const firstHalt = history.findIndex((h) => h.kind === 'VirtualMachine' && h.object.spec?.runStrategy === 'Halted');
    expect(requested).toBeGreaterThanOrEqual(0);
    expect(requested).toBeLessThan(firstHalt);
    const running = history.findIndex((h) => h.kind === 'Node' && h.object.metadata.annotations?.[MAINTAIN_STATUS] === 'running');
    const vmisLeftAtRunning = history.slice(0, running).filter((h) => h.kind === 'VirtualMachineInstance');
    expect(vmisLeftAtRunning.length).toBeGreaterThan(0);
    // k8s:H5/H6: `completed` is what Harvester's UI shows as "Maintenance" and what makes it offer power actions.
    expect(t.sim.node('n1')!.metadata.annotations).toEqual({ [MAINTAIN_STATUS]: 'completed' });
  });

  it('disable removes the three annotations, uncordons and drops the first kubevirt.io/drain taint in one update; a 409 is tried again 2 s later', async () => {
    t = await kubevirtApp((sim) => {
      for (const n of ['n1', 'n2']) sim.addNode(n, { roles: ['worker'] });
      sim.addVm({ name: 'mig', nodeName: 'n1' });
    });
    await gql(`mutation { r: enableMaintenanceMode(nodeId: "n1") { __typename } }`);
    await eventually(() => phase() === 'COMPLETED');
    // Someone (an upgrade, a person) tainted it meanwhile, and also added another taint.
    t.sim.setNodeTaints('n1', [
      { key: 'kubevirt.io/drain', effect: 'NoSchedule' },
      { key: 'example.com/keep', value: 'x', effect: 'NoSchedule' },
    ]);
    // The disable must start from the taints as the plugin's cache holds them: wait until it has seen them.
    await caughtUp(t.sim, t.backend);
    let conflicts = 1;
    t.sim.api.beforeWrite = (verb, r, _ns, name) => {
      // A concurrent writer, once: the disable's patch carries a resourceVersion that is now stale (409).
      if (verb === 'patch' && r.plural === 'nodes' && name === 'n1' && conflicts-- > 0)
        t.sim.store.mutate(t.sim.def('nodes'), undefined, 'n1', (n) => (n.metadata.labels = { ...n.metadata.labels, touched: 'yes' }));
    };
    const from = t.sim.calls.length;
    const result = (await gql(`mutation { r: disableMaintenanceMode(nodeId: "n1") { __typename ... on DisableMaintenanceResult { node { cordoned } } } }`)).r;
    expect(result).toEqual({ __typename: 'DisableMaintenanceResult', node: { cordoned: false } });
    const writes = nodeWrites(from);
    expect(writes).toHaveLength(2);
    expect(writes[1]!.at - writes[0]!.at).toBeGreaterThanOrEqual(2_000);
    expect(writes[1]!.body).toMatchObject({
      metadata: { annotations: { [DRAIN_REQUESTED]: null, [DRAIN_FORCED]: null, [MAINTAIN_STATUS]: null } },
      spec: { unschedulable: null, taints: [{ key: 'example.com/keep', value: 'x', effect: 'NoSchedule' }] },
    });
    const node = t.sim.node('n1')!;
    // k8s:H5/H6: no maintain-status left, so Harvester's UI offers enable again and no power action.
    expect(node.metadata.annotations ?? {}).toEqual({});
    expect(node.spec.unschedulable).toBeUndefined();
    expect(node.spec.taints).toEqual([{ key: 'example.com/keep', value: 'x', effect: 'NoSchedule' }]);
  });

  it("k8s:H7: the last available node (the other cordoned) is refused before any write, as Harvester's node webhook would refuse it", async () => {
    t = await kubevirtApp((sim) => {
      for (const n of ['n1', 'n2']) sim.addNode(n, { roles: ['worker'] });
      sim.addVm({ name: 'mig', nodeName: 'n1' });
    });
    await t.backend.cordonNode('n2');
    const from = t.sim.calls.length;
    const refused = (await gql(`mutation { r: enableMaintenanceMode(nodeId: "n1") { __typename ... on PreconditionFailedError { reason } } }`)).r;
    expect(refused).toEqual({ __typename: 'PreconditionFailedError', reason: 'LAST_AVAILABLE_NODE' });
    expect(nodeWrites(from)).toEqual([]);
    expect(t.sim.node('n1')!.metadata.annotations ?? {}).toEqual({});
  });

  it('k8s:H10: a deleted node clears the tracking that points at it even though it carried no maintain-status (a departure from Harvester)', async () => {
    t = await kubevirtApp((sim) => {
      for (const n of ['n1', 'n2']) sim.addNode(n, { roles: ['worker'] });
      sim.addVm({
        name: 'parked',
        runStrategy: 'Halted',
        labels: { [MAINTENANCE_STRATEGY_LABEL]: 'ShutdownAndRestartAfterDisable' },
        annotations: { 'harvesterhci.io/maintain-mode-strategy-node-name': 'n2', 'harvesterhci.io/vmRunStrategy': 'Always' },
      });
    });
    expect(t.sim.node('n2')!.metadata.annotations?.[MAINTAIN_STATUS]).toBeUndefined();
    t.sim.deleteNode('n2');
    await eventually(() => t.sim.vm('default', 'parked')!.metadata.annotations?.['harvesterhci.io/maintain-mode-strategy-node-name'] === undefined);
    expect(t.sim.vm('default', 'parked')!.spec.runStrategy).toBe('Halted');
  });
});
