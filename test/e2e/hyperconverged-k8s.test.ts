/**
 * Issue 26 point 4 (and point 3's node-down): the Kubernetes parity scenarios that involve
 * pods, PodDisruptionBudgets, Harvester's marks and delegation (k8s:H9) and node down
 * (k8s:U), again on hyperconverged hosts with a shard on the node under maintenance. The
 * harness (test/support/hyperconverged-app.ts) runs kubevirt + pageserver combined on one
 * virtual clock; the seeds are the Kubernetes scenarios' own (test/support/k8s-seeds.ts).
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { K8sObject, K8sSim } from '../../simulators/kubernetes/index.ts';
import { shardIdOf } from '../../simulators/pageserver/index.ts';
import { hyperconvergedApp, nonLauncherPods, onMarkedCompleted, SHARD_ON_N1, type HyperconvergedApp } from '../support/hyperconverged-app.ts';
import { fivePodsOnN1 } from '../support/k8s-seeds.ts';
import { refuseOperationsOfKind } from '../support/test-database.ts';
import { nodeDownSettled } from '../support/kubevirt-app.ts';

// Literals, not imported from the code under test (issue 26 point 7).
const DRAIN_REQUESTED = 'harvesterhci.io/drain-requested';
const MAINTAIN_STATUS = 'harvesterhci.io/maintain-status';
const OUT_OF_SERVICE_TAINT = 'node.kubernetes.io/out-of-service';
const SHARD = shardIdOf(SHARD_ON_N1);
const LONE_SHARD_ON_N1 = { tenant: 2, attached: 1, secondaries: [] };
const LONE = shardIdOf(LONE_SHARD_ON_N1);

// Each scenario starts Kubernetes, three pageservers and the app; a loaded machine (two suites at once) gets room.
let h: HyperconvergedApp | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

async function gql(query: string) {
  const res = await h!.t.gql(query);
  if (res.errors) throw new Error(JSON.stringify(res.errors));
  return res.data;
}
const enable = async (args = '') =>
  (await gql(`mutation { r: enableMaintenanceMode(nodeId: "n1"${args}) { __typename ... on Operation { id } ... on Error { code message } } }`)).r as {
    __typename: string;
    id: string;
    message?: string;
  };
const operation = async (id: string) =>
  (await gql(`{ operation(id: "${id}") { ... on Operation { state error waitingOn { kind description workloadIds } remaining { kind id reason } } } }`))
    .operation;
const phase = () => h!.t.app.maintenance.stateOf('n1')?.phase ?? null;
const attachedOn = async () => (await h!.t.served.getShard(SHARD))?.attachedNodeId;
const nodeSafety = async (): Promise<{ safeToRestart: boolean; remaining: string[] }> => {
  const n = (await gql(`{ node(id: "n1") { ... on ClusterNode { safeToRestart remainingWorkloads { kind id reason } } } }`)).node;
  return {
    safeToRestart: n.safeToRestart,
    remaining: n.remainingWorkloads.map((w: { kind: string; id: string; reason: string }) => `${w.kind} ${w.id} ${w.reason}`),
  };
};
/** The phases the maintenance went through and its shard's step ends, in the order the event log has them. */
const history = async () =>
  (await gql(`{ eventLog(after: 0, first: 500, nodeId: "n1") { events { type payload } } }`)).eventLog.events
    .filter((e: { type: string }) => e.type === 'MAINTENANCE_PHASE_CHANGED' || e.type.startsWith('SHARD_'))
    .map((e: { type: string; payload: { to?: string; shard?: string } }) =>
      e.type === 'MAINTENANCE_PHASE_CHANGED' ? e.payload.to : `${e.type} ${e.payload.shard}`,
    );

/** k8s:scenario-1's pods, a VM, a CSI pod and a hotplug-disk pod (k8s:K1 leaves them out) on n1. */
function podsAndVm(sim: K8sSim): void {
  fivePodsOnN1(sim);
  sim.addVm({ name: 'web', nodeName: 'n1', evictionStrategy: 'LiveMigrate' });
  sim.addPod({ name: 'csi-attacher-0', nodeName: 'n1', owner: { kind: 'StatefulSet', name: 'csi-attacher' }, labels: { app: 'csi-attacher' } });
}

describe('k8s:scenario-1 on a hyperconverged host with a shard', { timeout: 60_000 }, () => {
  it('COMPLETED only once the VM has moved, the shard has moved and only the pods k8s:K1/K2 leave remain; then safe to restart', async () => {
    h = await hyperconvergedApp(podsAndVm);
    const before = await nodeSafety();
    expect(before.safeToRestart).toBe(false);
    expect(before.remaining.sort()).toEqual([
      'POD default/cache-1 POD_EVICTABLE',
      'POD default/lonely POD_EVICTABLE',
      'POD default/web-1 POD_EVICTABLE',
      `SHARD ${SHARD} NOT_CUT_OVER`,
      'VM default/web VM_RUNNING',
    ]);
    // What n1 carried at the instant the maintenance wrote `completed` on it.
    let atCompleted: { pods: string[]; vmOnN1: boolean } | null = null;
    const stopWatching = onMarkedCompleted(h.t.sim, 'n1', () => {
      atCompleted = { pods: nonLauncherPods(h!.t.sim, 'n1'), vmOnN1: h!.t.sim.vmi('default', 'web')!.status.nodeName === 'n1' };
    });
    // The shard's cut-over takes 20 s (location_config on n2), longer than the VM's migration and the pods' evictions.
    h.c.sim(2).setLatency(20_000);
    const op = await enable();
    expect(op.__typename).toBe('Operation');
    await h.drive(() => phase() === 'COMPLETED', 'maintenance COMPLETED', 500);
    stopWatching();
    expect((await operation(op.id)).state).toBe('SUCCEEDED');
    // DaemonSet, mirror and CSI pods may stay (k8s:K1, k8s:K2 b, c); everything else was gone first.
    expect(atCompleted).toEqual({ pods: ['agent-x', 'csi-attacher-0', 'etcd-n1'], vmOnN1: false });
    expect(await attachedOn()).not.toBe('n1');
    const order = await history();
    expect(order.indexOf(`SHARD_MOVED ${SHARD}`)).toBeGreaterThan(-1);
    expect(order.indexOf(`SHARD_MOVED ${SHARD}`)).toBeLessThan(order.indexOf('COMPLETED'));
    expect(await nodeSafety()).toEqual({ safeToRestart: true, remaining: [] });
  });
});

describe('k8s:scenario-2 on a hyperconverged host with shards', { timeout: 60_000 }, () => {
  it('a PodDisruptionBudget holds the maintenance once the shards are handled (moved, or skipped as storage:D2 says) and is named in waitingOn; the pod and the skipped shard are what is left', async () => {
    h = await hyperconvergedApp(
      (sim) => {
        sim.addPod({ name: 'web-0', nodeName: 'n1', owner: { kind: 'ReplicaSet', name: 'web' }, labels: { app: 'web' } });
        sim.addPdb('default', 'web-pdb', { matchLabels: { app: 'web' }, minAvailable: 1 });
      },
      // A second tenant without a secondary: the drain skips it (storage:D2), it stays on n1.
      { shards: [SHARD_ON_N1, LONE_SHARD_ON_N1] },
    );
    // The shard's cut-over takes 20 s (location_config on n2).
    h.c.sim(2).setLatency(20_000);
    const op = await enable(', deadlineSeconds: 60');
    await h.drive(async () => (await operation(op.id)).waitingOn?.kind === 'PODS_ON_NODE', 'waiting on the pod');
    // Shards go by the storage rules alongside the VMs; the pod drain starts once they are handled (k8s:K9).
    expect(await attachedOn()).not.toBe('n1');
    const moved = (await gql(`{ eventLog(after: 0, first: 500, nodeId: "n1", types: ["SHARD_MOVED"]) { events { at } } }`)).eventLog.events;
    expect(moved).toHaveLength(1);
    const firstEviction = h.t.sim.calls.find((c) => c.resource === 'pods/eviction')!;
    expect(firstEviction.at).toBeGreaterThanOrEqual(Date.parse(moved[0].at));
    expect((await h.t.served.getShard(LONE))?.attachedNodeId).toBe('n1');
    const waiting = (await operation(op.id)).waitingOn;
    expect(waiting.workloadIds).toEqual(['default/web-0']);
    expect(waiting.description).toContain('default/web-0: blocked by PodDisruptionBudget web-pdb');
    expect(phase()).toBe('EVACUATING');
    expect(h.t.sim.node('n1')!.metadata.annotations?.[MAINTAIN_STATUS]).toBeUndefined();
    const held = await nodeSafety();
    expect(held.safeToRestart).toBe(false);
    expect(held.remaining.sort()).toEqual(['POD default/web-0 POD_EVICTABLE', `SHARD ${LONE} NO_SECONDARY`]);

    await h.drive(() => phase() === 'ERROR', 'maintenance ERROR at its deadline', 1_000);
    expect((await operation(op.id)).state).toBe('FAILED');
    const ended = await operation(op.id);
    expect(ended.error).toMatch(
      /^DEADLINE_EXCEEDED: pods still on the node: 1 pod\(s\) left on node n1: default\/web-0: blocked by PodDisruptionBudget web-pdb/,
    );
    expect(ended.remaining.map((w: { kind: string; id: string; reason: string }) => `${w.kind} ${w.id} ${w.reason}`).sort()).toEqual([
      'POD default/web-0 PDB_BLOCKED',
      `SHARD ${LONE} NO_SECONDARY`,
    ]);
    expect(h.t.sim.pod('default', 'web-0')?.metadata.deletionTimestamp).toBeUndefined();
    const after = await nodeSafety();
    expect(after.safeToRestart).toBe(false);
    expect(after.remaining.sort()).toEqual(['POD default/web-0 PDB_BLOCKED', `SHARD ${LONE} NO_SECONDARY`]);
  });
});

describe('k8s:scenario-9 (k8s:H9) on a hyperconverged host with a shard', { timeout: 60_000 }, () => {
  it("delegates the VMs and pods to Harvester and drains the shard itself: Lockkeeper's COMPLETED waits for both; it wrote only the request to Kubernetes", async () => {
    h = await hyperconvergedApp(
      (sim) => {
        sim.addVm({ name: 'web', nodeName: 'n1', evictionStrategy: 'LiveMigrate' });
        sim.addPod({ name: 'api-1', nodeName: 'n1', owner: { kind: 'ReplicaSet', name: 'api' }, labels: { app: 'api' } });
      },
      { simOptions: { harvester: true, harvesterRetryMs: 50 } },
    );
    // The cut-over's location_config takes 20 s on n2: Harvester's `completed` comes first.
    h.c.sim(2).setLatency(20_000);
    const { port } = await h.t.app.start(0, '127.0.0.1');
    const health = await (await fetch(`http://127.0.0.1:${port}/healthz`)).json();
    expect(health.maintenance).toEqual({ mode: 'delegate', controller: 'Harvester', reason: 'CRD settings.harvesterhci.io found at start' });
    const from = h.t.sim.calls.length;
    const op = await enable();
    expect(op.__typename).toBe('Operation');
    await h.drive(() => h!.t.sim.node('n1')!.metadata.annotations?.[MAINTAIN_STATUS] === 'completed', "Harvester's completed");
    expect(phase()).not.toBe('COMPLETED');
    expect((await operation(op.id)).waitingOn?.kind).toBe('SHARDS');
    await h.drive(() => phase() === 'COMPLETED', 'maintenance COMPLETED', 1_000);
    expect((await operation(op.id)).state).toBe('SUCCEEDED');
    expect(await attachedOn()).not.toBe('n1');
    const order = await history();
    expect(order.indexOf(`SHARD_MOVED ${SHARD}`)).toBeGreaterThan(-1);
    expect(order.indexOf(`SHARD_MOVED ${SHARD}`)).toBeLessThan(order.indexOf('COMPLETED'));
    // Harvester evicted the pod and KubeVirt moved the VM; Lockkeeper's only Kubernetes write was Harvester's API request.
    expect(h.t.sim.pod('default', 'api-1')).toBeNull();
    expect(h.t.sim.vmi('default', 'web')!.status.nodeName).not.toBe('n1');
    expect(
      h.t.sim.calls
        .slice(from)
        .filter((c) => !['get', 'list', 'watch'].includes(c.verb))
        .map((c) => ({ verb: c.verb, resource: c.resource, name: c.name, body: c.body })),
    ).toEqual([{ verb: 'patch', resource: 'nodes', name: 'n1', body: { metadata: { annotations: { [DRAIN_REQUESTED]: 'true' } } } }]);
    expect(await nodeSafety()).toEqual({ safeToRestart: true, remaining: [] });
  });
});

describe('k8s:scenario-8 (k8s:U) on a hyperconverged host with a shard', { timeout: 60_000 }, () => {
  it('node down runs every step (taint, Drained, out-of-service, pods deleted) while the shard stays; it fails over only once the pageserver is lost too', async () => {
    h = await hyperconvergedApp(
      (sim) => {
        sim.addVm({ name: 'web', nodeName: 'n1', evictionStrategy: 'LiveMigrate' });
        sim.addPod({ name: 'api-1', nodeName: 'n1', owner: { kind: 'ReplicaSet', name: 'api' }, labels: { app: 'api' } });
      },
      { plugin: { nodeDown: { enable: true } } },
    );
    const { t } = h;
    const taints = () => (t.sim.node('n1')!.spec.taints ?? []).map((x: { key: string }) => x.key);
    const drained = () => (t.sim.node('n1')!.status.conditions ?? []).find((c: K8sObject) => c.type === 'Drained');
    t.sim.setNodeReady('n1', false);
    // k8s:U3: stage 1 after 15 s.
    await h.drive(() => drained() !== undefined, 'Drained=False');
    expect(taints()).toEqual(['kubevirt.io/drain']);
    expect(drained()).toMatchObject({ status: 'False', reason: 'HarvesterNodeIsDraining' });
    // k8s:U7: stage 2 needs confirmation; past vmMigrationTimeout without it, nothing more, and the shard stays.
    await h.c.advance(200_000, 1_000);
    await nodeDownSettled(t.sim, t.backend);
    expect(taints()).toEqual(['kubevirt.io/drain']);
    expect(await attachedOn()).toBe('n1');
    const confirmed = await gql(`mutation { confirmNodeDown(nodeId: "n1", reason: "power is off") { __typename ... on ClusterNode { id } } }`);
    expect(confirmed.confirmNodeDown).toEqual({ __typename: 'ClusterNode', id: 'n1' });
    // k8s:U4: out-of-service; the simulated PodGC deletes the node's pods; Harvester's condition annotations follow.
    await h.drive(() => drained()?.status === 'True' && t.sim.node('n1')!.metadata.annotations?.['harvesterhci.io/condition'] === 'Drained', 'Drained=True');
    expect(taints()).toContain(OUT_OF_SERVICE_TAINT);
    await h.drive(() => t.sim.podsOn('n1').length === 0, 'pods of n1 deleted');
    // The pageserver still answers: no failover, the shard stays attached on n1; the node shows both sides.
    await h.c.advance(60_000, 1_000);
    expect(await attachedOn()).toBe('n1');
    expect((await t.served.getNode('n1'))?.sides).toEqual([
      { backend: 'kubevirt', availability: 'OFFLINE' },
      { backend: 'pageserver', availability: 'ACTIVE', servesShards: true },
    ]);
    const failovers = async () =>
      (await gql('{ operations(first: 20) { edges { node { kind nodeId } } } }')).operations.edges
        .filter((e: { node: { kind: string } }) => e.node.kind === 'FAILOVER')
        .map((e: { node: { nodeId: string } }) => e.node.nodeId)
        .sort();
    expect(await failovers()).toEqual([]);
    // Now n1's pageserver side is lost too: neon:H5 fails its shard over.
    h.c.sim(1).stopAnswering();
    await h.drive(async () => (await attachedOn()) === 'n2', 'shard failed over to n2');
    expect(await failovers()).toEqual(['n1']);
  });
});

describe('neon:H9 retries on hyperconverged hosts', { timeout: 60_000 }, () => {
  it('the failover retry acts on a host’s pageserver side: a Kubernetes node NotReady whose pageserver answers keeps its shard', async () => {
    const ON_N3 = { tenant: 3, attached: 3, secondaries: [2] };
    h = await hyperconvergedApp(() => {}, { shards: [SHARD_ON_N1, ON_N3] });
    const { t } = h;
    t.sim.setNodeReady('n1', false);
    await h.c.advance(30_000, 1_000);
    expect((await t.served.getNode('n1'))?.availability).toBe('OFFLINE');
    // n3's pageserver is lost while the database refuses the failover: the retry sweep (every 5 s) takes over.
    const allow = await refuseOperationsOfKind(t.db, 'FAILOVER');
    h.c.sim(3).stopAnswering();
    await h.drive(async () => (await t.served.getNode('n3'))?.sides?.find((s) => s.backend === 'pageserver')?.availability === 'OFFLINE', 'pageserver 3 lost');
    await allow();
    const third = shardIdOf(ON_N3);
    await h.drive(async () => (await t.served.getShard(third))?.attachedNodeId === 'n2', 'n3’s shard failed over');
    // Several more sweeps: n1 (OFFLINE as a host, its pageserver ACTIVE) is not failed over.
    await h.c.advance(20_000, 1_000);
    expect(await attachedOn()).toBe('n1');
    const failovers = (await gql('{ operations(first: 20) { edges { node { kind nodeId } } } }')).operations.edges
      .filter((e: { node: { kind: string } }) => e.node.kind === 'FAILOVER')
      .map((e: { node: { nodeId: string } }) => e.node.nodeId);
    expect(failovers).toEqual(['n3']);
  });
});
