/**
 * Done means safe, for pods (issue 17, point 1): a node's `remainingWorkloads` lists the pods
 * that would lose service if it restarted now, judged the way the pod drain judges them
 * (k8s:K1–K4): pods the drain would evict or refuses to evict are listed, with why; pods it
 * leaves by design (DaemonSet-managed, mirror, finished) are not. A maintenance whose pod
 * drain left pods (a PodDisruptionBudget, k8s:K6, k8s:K8) records them in its `remaining`
 * with that reason. The kubevirt plugin against the Kubernetes API simulator.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_POD_DRAIN_OPTIONS, type DrainPod } from '../../src/domain/pods/drain.ts';
import { remainingWorkloads } from '../../src/domain/remaining.ts';
import { RemainingReader } from '../../src/operations/core/remaining-reader.ts';
import { unsafeWorkloads } from '../../src/operations/rollouts/node-operations.ts';
import type { K8sSim } from '../../simulators/kubernetes/index.ts';
import { fivePodsOnN1, threeNodes } from '../support/k8s-seeds.ts';
import { eventually, kubevirtApp, type KubevirtTestApp } from '../support/kubevirt-app.ts';
import { VirtualClock } from '../support/virtual-clock.ts';
import { drive } from '../support/virtual-drive.ts';

let t: KubevirtTestApp | undefined;
afterEach(async () => {
  await t?.stop();
  t = undefined;
});

interface Remaining {
  kind: string;
  id: string;
  reason: string;
  message: string;
}

async function gql(query: string) {
  const res = await t!.gql(query);
  if (res.errors) throw new Error(JSON.stringify(res.errors));
  return res.data;
}
const nodeSafety = async (): Promise<{ safeToRestart: boolean; remainingWorkloads: Remaining[] }> =>
  (await gql(`{ node(id: "n1") { ... on ClusterNode { safeToRestart remainingWorkloads { kind id reason message } } } }`)).node;
const operation = async (id: string): Promise<{ state: string; remaining: Remaining[] | null }> =>
  (await gql(`{ operation(id: "${id}") { ... on Operation { state remaining { kind id reason message } } } }`)).operation;
const enable = async (args = '') =>
  (await gql(`mutation { r: enableMaintenanceMode(nodeId: "n1"${args}) { __typename ... on Operation { id } ... on Error { code message } } }`)).r as {
    __typename: string;
    id: string;
  };
const phase = () => t!.app.maintenance.stateOf('n1')?.phase ?? null;
const brief = (list: Remaining[]) => list.map((w) => `${w.kind} ${w.id} ${w.reason}`);

function fivePods(sim: K8sSim): void {
  threeNodes(sim);
  fivePodsOnN1(sim);
}

const pod = (name: string, more: Partial<DrainPod> = {}): DrainPod => ({
  namespace: 'default',
  name,
  uid: `uid-${name}`,
  phase: 'Running',
  labels: {},
  annotations: {},
  controller: { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'rs' },
  controllerFound: null,
  hasEmptyDir: false,
  deletionTimestamp: null,
  terminationGracePeriodSeconds: null,
  ...more,
});

describe('the rule for pods (domain/remaining.ts, k8s:K2)', () => {
  it('lists what the drain would evict or refuses, with why; leaves out what it skips by design and finished pods', () => {
    const pods = [
      pod('web'),
      pod('going', { deletionTimestamp: 1_000 }),
      pod('lonely', { controller: null }),
      pod('agent', { controller: { apiVersion: 'apps/v1', kind: 'DaemonSet', name: 'agent' }, controllerFound: true }),
      pod('static', { annotations: { 'kubernetes.io/config.mirror': 'x' } }),
      pod('job', { phase: 'Succeeded', controller: null }),
      pod('blocked'),
      // A VM's step reason under the same `namespace/name` is not a pod drain's reason.
      pod('same-as-vm'),
    ];
    const left = new Map([
      ['default/blocked', 'PDB_BLOCKED'],
      ['default/same-as-vm', 'NODE_NOT_READY'],
    ]);
    const judge = (options = DEFAULT_POD_DRAIN_OPTIONS) =>
      remainingWorkloads('n1', { vms: [], shards: [], pods: { byNode: new Map([['n1', pods]]), options, now: 2_000 } }, left);

    // Harvester's defaults (k8s:K4): force evicts the ownerless pod, ignoreDaemonSets skips the agent.
    const out = judge();
    expect(brief(out)).toEqual([
      'POD default/blocked PDB_BLOCKED',
      'POD default/going POD_TERMINATING',
      'POD default/lonely POD_EVICTABLE',
      'POD default/same-as-vm POD_EVICTABLE',
      'POD default/web POD_EVICTABLE',
    ]);
    expect(out[0]!.message).toBe(
      'still on node n1: the last pod drain left it (PDB_BLOCKED: its eviction was refused by a PodDisruptionBudget); a restart of the node kills it without an eviction (no PodDisruptionBudget consulted)',
    );
    // With every override off (k8s:K3), the refused pods are listed with their cause and its override.
    const strict = judge({ ...DEFAULT_POD_DRAIN_OPTIONS, force: false, ignoreDaemonSets: false });
    expect(brief(strict)).toEqual([
      'POD default/agent POD_DAEMONSET',
      'POD default/blocked PDB_BLOCKED',
      'POD default/going POD_TERMINATING',
      'POD default/lonely POD_UNREPLICATED',
      'POD default/same-as-vm POD_EVICTABLE',
      'POD default/web POD_EVICTABLE',
    ]);
    expect(strict.find((w) => w.id === 'default/lonely')!.message).toBe(
      'still on node n1: the pod drain refuses to evict it (pods not managed by a controller; use force: true), so a restart of the node kills it',
    );
    // Pods of other nodes are not this node's.
    expect(remainingWorkloads('n2', { vms: [], shards: [], pods: { byNode: new Map([['n1', pods]]), options: DEFAULT_POD_DRAIN_OPTIONS, now: 0 } })).toEqual(
      [],
    );
  });
});

describe('pods on a kubevirt node (the API simulator)', () => {
  it('before the maintenance the evictable pods remain; after its pod drain COMPLETED only DaemonSet and mirror pods are left and the node is safe to restart', async () => {
    t = await kubevirtApp(fivePods, {}, { msPerGraceSecond: 1 });
    const before = await nodeSafety();
    expect(before.safeToRestart).toBe(false);
    expect(brief(before.remainingWorkloads)).toEqual([
      'POD default/cache-1 POD_EVICTABLE',
      'POD default/lonely POD_EVICTABLE',
      'POD default/web-1 POD_EVICTABLE',
    ]);
    expect(before.remainingWorkloads[0]!.message).toBe(
      'still on node n1: not evicted yet; a restart of the node kills it without an eviction (no PodDisruptionBudget consulted)',
    );

    const op = await enable();
    expect(op.__typename).toBe('Operation');
    await eventually(() => phase() === 'COMPLETED');
    await eventually(async () => (await operation(op.id)).state === 'SUCCEEDED');
    expect((await operation(op.id)).remaining).toEqual([]);
    expect(
      t.sim
        .podsOn('n1')
        .map((p) => p.metadata.name)
        .sort(),
    ).toEqual(['agent-x', 'etcd-n1']);
    expect(await nodeSafety()).toEqual({ safeToRestart: true, remainingWorkloads: [] });
    expect(await t.db.prisma.event.count({ where: { type: 'WORKLOADS_REMAIN', operationId: op.id } })).toBe(0);
  });

  it('with the configured pod drain refusing ownerless pods (force: false), the node names the pod and the override', async () => {
    t = await kubevirtApp(fivePods, { podDrain: { ...DEFAULT_POD_DRAIN_OPTIONS, force: false } }, { msPerGraceSecond: 1 });
    const node = await nodeSafety();
    expect(brief(node.remainingWorkloads)).toEqual([
      'POD default/cache-1 POD_EVICTABLE',
      'POD default/lonely POD_UNREPLICATED',
      'POD default/web-1 POD_EVICTABLE',
    ]);
  });

  it('a pod drain stopped by a PodDisruptionBudget at the deadline: the maintenance records the pod PDB_BLOCKED, warns, and the node says so', async () => {
    const clock = new VirtualClock();
    t = await kubevirtApp(
      (sim) => {
        threeNodes(sim);
        sim.addPod({ name: 'web-0', nodeName: 'n1', owner: { kind: 'ReplicaSet', name: 'web' }, labels: { app: 'web' } });
        sim.addPdb('default', 'web-pdb', { matchLabels: { app: 'web' }, minAvailable: 1 });
      },
      {},
      {},
      { clock, plugin: { vmActionTimeoutMs: 3_600_000, migrationBackstopMs: 3_600_000 } },
    );
    const op = await enable(', deadlineSeconds: 30');
    await drive(clock, async () => (await operation(op.id)).state === 'FAILED', { stepMs: 500 });
    expect(phase()).toBe('ERROR');
    const ended = await operation(op.id);
    expect(ended.remaining).toEqual([
      {
        kind: 'POD',
        id: 'default/web-0',
        reason: 'PDB_BLOCKED',
        message:
          'still on node n1: the last pod drain left it (PDB_BLOCKED: its eviction was refused by a PodDisruptionBudget); a restart of the node kills it without an eviction (no PodDisruptionBudget consulted)',
      },
    ]);
    const events = await t.db.prisma.event.findMany({ where: { type: 'WORKLOADS_REMAIN', operationId: op.id } });
    expect(events).toHaveLength(1);
    expect(JSON.parse(events[0]!.payload)).toMatchObject({ outcome: 'FAILED', safeToRestart: false, remaining: [{ kind: 'POD', id: 'default/web-0' }] });
    // The node reads the reason its maintenance recorded, while that maintenance is the newest on it.
    expect(await nodeSafety()).toMatchObject({ safeToRestart: false, remainingWorkloads: [{ kind: 'POD', id: 'default/web-0', reason: 'PDB_BLOCKED' }] });
  });
});

describe('the rollout safety gate (rollout:O6) counts pods too', () => {
  it('a node with an evictable pod is not handed over for its restart; once the pod is gone it is', async () => {
    t = await kubevirtApp((sim) => {
      threeNodes(sim);
      // Without a controller (evicted under force, k8s:K2), so nothing brings it back once deleted.
      sim.addPod({ name: 'lonely', nodeName: 'n1', labels: { app: 'lonely' } });
      sim.addPod({ name: 'agent-x', nodeName: 'n1', owner: { kind: 'DaemonSet', name: 'agent' }, labels: { app: 'agent' } });
    });
    // The reader the rollout engine gives its runs (src/operations/rollouts/engine.ts: remainingOn).
    const reader = new RemainingReader(
      t.backend,
      { latestRemaining: async () => new Map() },
      { podDrain: DEFAULT_POD_DRAIN_OPTIONS },
      { now: () => Date.now() },
    );
    const gate = { remainingOn: (nodeId: string) => reader.now(nodeId) };
    expect(await unsafeWorkloads(gate, 'n1')).toEqual([
      {
        id: 'default/lonely',
        reasons: ['still on node n1: not evicted yet; a restart of the node kills it without an eviction (no PodDisruptionBudget consulted)'],
      },
    ]);
    t.sim.store.delete(t.sim.def('pods'), 'default', 'lonely');
    await eventually(async () => (await unsafeWorkloads(gate, 'n1')).length === 0);
    expect(await unsafeWorkloads(gate, 'n2')).toEqual([]);
  });
});
