import { afterEach, describe, expect, it } from 'vitest';
import type { K8sSim } from '../../simulators/kubernetes/index.ts';
import { startSimCluster, type SimCluster } from '../support/pageserver-cluster.ts';
import { eventually, kubevirtApp, type KubevirtTestApp } from '../support/kubevirt-app.ts';

/**
 * issue 26: a config of kubevirt + pageserver keeps every Kubernetes part of the kubevirt
 * backend (pod drain, Harvester marks, node-down): before, the composite dropped them and a
 * maintenance ended COMPLETED with the node's pods still on it.
 */
let t: KubevirtTestApp | undefined;
let pageservers: SimCluster | undefined;
afterEach(async () => {
  await t?.stop();
  await pageservers?.close();
  t = undefined;
  pageservers = undefined;
});

function seed(sim: K8sSim): void {
  for (const n of ['n1', 'n2', 'n3']) sim.addNode(n, { roles: ['worker'] });
  sim.addPod({ name: 'web-1', nodeName: 'n1', owner: { kind: 'ReplicaSet', name: 'web' }, labels: { app: 'web' } });
}

describe('kubevirt + pageserver combined', () => {
  it('a forced maintenance with pod grace 1 s evicts the ReplicaSet pod, marks the node, and /healthz shows who maintains', async () => {
    pageservers = await startSimCluster({ nodes: [{ id: 1 }, { id: 2 }], shards: [{ tenant: 1, attached: 1, secondaries: [2] }] });
    const controller = await pageservers.startController();
    t = await kubevirtApp(seed, {}, { msPerGraceSecond: 1 }, { combine: [controller] });
    expect(t.served.name).toBe('kubevirt+pageserver');
    expect(typeof t.served.confirmNodeDown).toBe('function');

    const { port } = await t.app.start(0, '127.0.0.1');
    const health = await (await fetch(`http://127.0.0.1:${port}/healthz`)).json();
    expect(health.maintenance).toEqual({ mode: 'act' });

    const res = await t.gql(
      `mutation { r: enableMaintenanceMode(nodeId: "n1", force: true, podDrain: { gracePeriodSeconds: 1 }) { __typename ... on Error { message } } }`,
    );
    expect(res.errors).toBeUndefined();
    expect(res.data.r.__typename).toBe('Operation');
    await eventually(() => t!.app.maintenance.stateOf('n1')?.phase === 'COMPLETED');
    expect(t.sim.calls.filter((c) => c.resource === 'pods/eviction').map((c) => c.name)).toEqual(['web-1']);
    expect(t.sim.podsOn('n1').map((p) => p.metadata.name)).toEqual([]);
    // k8s:H3: the node carries Harvester's marks, written by Lockkeeper.
    expect(t.sim.node('n1')?.metadata.annotations?.['harvesterhci.io/maintain-status']).toBe('completed');
  });
});
