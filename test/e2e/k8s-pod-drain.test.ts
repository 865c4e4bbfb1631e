import { afterEach, describe, expect, it } from 'vitest';
import { DRAIN_REQUESTED, type K8sSim, type RecordedCall } from '../../simulators/kubernetes/index.ts';
import { fivePodsOnN1, threeNodes } from '../support/k8s-seeds.ts';
import { eventually, kubevirtApp, type KubevirtTestApp } from '../support/kubevirt-app.ts';
import { VirtualClock } from '../support/virtual-clock.ts';
import { drive } from '../support/virtual-drive.ts';

/** k8s:scenario-1–3 through GraphQL, the kubevirt plugin against the API simulator; asserts on the Kubernetes objects. */
let t: KubevirtTestApp;
afterEach(async () => {
  await t?.stop();
});

const ENABLE = `__typename ... on Operation { id } ... on Error { code message } ... on PreconditionFailedError { reason blockers { id reasons } }`;
async function gql(query: string) {
  const res = await t.gql(query);
  if (res.errors) throw new Error(JSON.stringify(res.errors));
  return res.data;
}
const enable = async (args = '') => (await gql(`mutation { r: enableMaintenanceMode(nodeId: "n1"${args}) { ${ENABLE} } }`)).r;
const operation = async (id: string) =>
  (await gql(`{ operation(id: "${id}") { ... on Operation { state error waitingOn { kind description workloadIds } } } }`)).operation;
const phase = () => t.app.maintenance.stateOf('n1')?.phase ?? null;
const evictions = (): RecordedCall[] => t.sim.calls.filter((c) => c.resource === 'pods/eviction');
const writesTo = (calls: RecordedCall[], resource: string) =>
  calls.filter((c) => c.resource === resource && c.verb !== 'get' && c.verb !== 'list' && c.verb !== 'watch');

function fivePods(sim: K8sSim): void {
  threeNodes(sim);
  fivePodsOnN1(sim);
}

describe('k8s:scenario-1: classification (kubectl filters, k8s:K2–K4)', () => {
  it('with every flag off enable is refused naming the three blockers and their flags, nothing written; with the defaults only the last three are evicted', async () => {
    t = await kubevirtApp(fivePods, {}, { msPerGraceSecond: 1 });
    const plan = (
      await gql(`{ maintenancePlan(nodeId: "n1", podDrain: { ignoreDaemonSets: false, deleteEmptyDirData: false, force: false }) {
        accepted refusals { code message blockers { id reasons } } pods { id action reason override warning } } }`)
    ).maintenancePlan;
    expect(plan.accepted).toBe(false);
    expect(plan.pods).toEqual([
      { id: 'default/agent-x', action: 'ERROR', reason: 'DAEMONSET', override: 'ignoreDaemonSets', warning: null },
      { id: 'default/cache-1', action: 'ERROR', reason: 'EMPTY_DIR', override: 'deleteEmptyDirData', warning: null },
      { id: 'default/etcd-n1', action: 'SKIP', reason: 'MIRROR', override: null, warning: null },
      { id: 'default/lonely', action: 'ERROR', reason: 'UNREPLICATED', override: 'force', warning: null },
      { id: 'default/web-1', action: 'EVICT', reason: null, override: null, warning: null },
    ]);
    const before = t.sim.calls.length;
    const refused = await enable(', podDrain: { ignoreDaemonSets: false, deleteEmptyDirData: false, force: false }');
    expect(refused).toMatchObject({ __typename: 'PreconditionFailedError', reason: 'POD_DRAIN_BLOCKED' });
    // k8s:K3: grouped by cause, each naming its override.
    expect(refused.message).toContain('cannot delete DaemonSet-managed pods (use ignoreDaemonSets: true): default/agent-x');
    expect(refused.message).toContain('cannot delete pods with local storage (emptyDir) (use deleteEmptyDirData: true): default/cache-1');
    expect(refused.message).toContain('cannot delete pods not managed by a controller (use force: true): default/lonely');
    expect(refused.blockers.map((b: { id: string }) => b.id)).toEqual(['default/agent-x', 'default/cache-1', 'default/lonely']);
    // Nothing evicted, nothing written to the node (vm:M1).
    const after = t.sim.calls.slice(before);
    expect(after.filter((c) => c.resource === 'pods/eviction')).toEqual([]);
    expect(writesTo(after, 'nodes')).toEqual([]);
    expect(t.sim.podsOn('n1')).toHaveLength(5);
    expect(phase()).toBeNull();

    // The defaults (Harvester's): DaemonSet and mirror stay, the other three go.
    const defaults = (await gql(`{ maintenancePlan(nodeId: "n1") { accepted warnings pods { id action } } }`)).maintenancePlan;
    expect(defaults.accepted).toBe(true);
    expect(defaults.warnings).toEqual(
      expect.arrayContaining([
        'ignoring DaemonSet-managed pod default/agent-x',
        'deleting pod default/cache-1 with local storage (emptyDir)',
        'deleting pod default/lonely, which is not managed by a controller (force)',
      ]),
    );
    const op = await enable();
    expect(op.__typename).toBe('Operation');
    await eventually(() => phase() === 'COMPLETED');
    expect(
      evictions()
        .map((c) => c.name)
        .sort(),
    ).toEqual(['cache-1', 'lonely', 'web-1']);
    expect(
      t.sim
        .podsOn('n1')
        .map((p) => p.metadata.name)
        .sort(),
    ).toEqual(['agent-x', 'etcd-n1']);
    // The ReplicaSets made replacements elsewhere (n1 is cordoned); the ownerless pod is simply gone.
    expect(t.sim.store.list(t.sim.def('pods')).filter((p) => p.metadata.labels?.app === 'web' && p.spec.nodeName !== 'n1')).toHaveLength(1);
    expect(t.sim.pod('default', 'lonely')).toBeNull();
    await eventually(async () => (await operation(op.id)).state === 'SUCCEEDED');
  });
});

describe('k8s:scenario-2: PodDisruptionBudgets (k8s:K6, k8s:K8)', () => {
  it('minAvailable 1 over one replica: 429 with a DisruptionBudget cause, waitingOn names the PDB, tries 5 s apart, ERROR at the deadline listing the pod', async () => {
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
    const op = await enable(', deadlineSeconds: 60');
    await drive(clock, () => evictions().length >= 2);
    const waiting = (await operation(op.id)).waitingOn;
    expect(waiting).toMatchObject({ kind: 'PODS_ON_NODE', workloadIds: ['default/web-0'] });
    expect(waiting.description).toContain('default/web-0: blocked by PodDisruptionBudget web-pdb');
    expect(waiting.description).toContain('The disruption budget web-pdb needs 1 healthy pods and has 1 currently');
    await drive(clock, async () => (await operation(op.id)).state === 'FAILED', { stepMs: 500 });
    expect(phase()).toBe('ERROR');
    const tries = evictions().map((c) => c.at);
    for (let i = 1; i < tries.length; i++) expect(tries[i]! - tries[i - 1]!).toBeGreaterThanOrEqual(5_000);
    // About one try every 5 s within the 60 s deadline (the first comes once the node is cordoned).
    expect(tries.length).toBeGreaterThanOrEqual(8);
    expect(tries.length).toBeLessThanOrEqual(13);
    const ended = await operation(op.id);
    expect(ended.state).toBe('FAILED');
    expect(ended.error).toMatch(
      /^DEADLINE_EXCEEDED: pods still on the node: 1 pod\(s\) left on node n1: default\/web-0: blocked by PodDisruptionBudget web-pdb/,
    );
    expect(t.sim.pod('default', 'web-0')?.metadata.deletionTimestamp).toBeUndefined();
    // k8s:H3 Decision: ERROR keeps what the node carried (the request; the drain never finished, so no maintain-status).
    expect(t.sim.node('n1')!.metadata.annotations).toEqual({ [DRAIN_REQUESTED]: 'true' });
    expect(t.sim.node('n1')!.spec.unschedulable).toBe(true);
  });

  it('two replicas let it finish; a pod under two PDBs fails at once (500), without a retry loop', async () => {
    t = await kubevirtApp(
      (sim) => {
        threeNodes(sim);
        sim.addPod({ name: 'web-0', nodeName: 'n1', owner: { kind: 'ReplicaSet', name: 'web' }, labels: { app: 'web' } });
        sim.addPod({ name: 'web-1', nodeName: 'n2', owner: { kind: 'ReplicaSet', name: 'web' }, labels: { app: 'web' } });
        sim.addPdb('default', 'web-pdb', { matchLabels: { app: 'web' }, minAvailable: 1 });
      },
      {},
      { msPerGraceSecond: 1 },
    );
    await enable();
    await eventually(() => phase() === 'COMPLETED');
    expect(evictions().map((c) => c.name)).toEqual(['web-0']);
    expect(t.sim.pod('default', 'web-0')).toBeNull();
    await t.stop();

    t = await kubevirtApp(
      (sim) => {
        threeNodes(sim);
        sim.addPod({ name: 'api-0', nodeName: 'n1', owner: { kind: 'ReplicaSet', name: 'api' }, labels: { app: 'api', tier: 'front' } });
        sim.addPod({ name: 'api-1', nodeName: 'n2', owner: { kind: 'ReplicaSet', name: 'api' }, labels: { app: 'api', tier: 'front' } });
        sim.addPdb('default', 'by-app', { matchLabels: { app: 'api' }, maxUnavailable: 1 });
        sim.addPdb('default', 'by-tier', { matchLabels: { tier: 'front' }, maxUnavailable: 1 });
      },
      {},
      { msPerGraceSecond: 1 },
    );
    const op = await enable();
    await eventually(async () => (await operation(op.id)).state === 'FAILED');
    expect(phase()).toBe('ERROR');
    expect(evictions()).toHaveLength(1);
    const ended = await operation(op.id);
    expect(ended.error).toContain(
      'POD_EVICTION_FAILED: default/api-0: eviction failed: HTTP 500: Internal error occurred: This pod has more than one PodDisruptionBudget',
    );
    expect(t.sim.pod('default', 'api-0')?.metadata.deletionTimestamp).toBeUndefined();
  });
});

describe('k8s:scenario-3: grace period and identity (k8s:K5, k8s:K7, k8s:K8)', () => {
  it('evictions carry gracePeriodSeconds 180, the pod stays Terminating through it, and its name back with a new UID counts as gone', async () => {
    const clock = new VirtualClock();
    t = await kubevirtApp(
      (sim) => {
        threeNodes(sim);
        sim.addPod({ name: 'db-0', nodeName: 'n1', owner: { kind: 'StatefulSet', name: 'db' }, labels: { app: 'db' }, terminationGracePeriodSeconds: 30 });
      },
      {},
      {},
      { clock, plugin: { vmActionTimeoutMs: 3_600_000, migrationBackstopMs: 3_600_000 } },
    );
    const uid = t.sim.pod('default', 'db-0')!.metadata.uid;
    await enable();
    await drive(clock, () => evictions().length === 1);
    const [eviction] = evictions();
    expect(eviction!.body).toEqual({
      apiVersion: 'policy/v1',
      kind: 'Eviction',
      metadata: { name: 'db-0', namespace: 'default' },
      deleteOptions: { gracePeriodSeconds: 180 },
    });
    await eventually(() => t.sim.pod('default', 'db-0')?.metadata.deletionTimestamp !== undefined);
    const evictedAt = clock.now();
    // k8s:K7: 180 s overrides the pod's own 30 s: still Terminating after 179 s.
    await drive(clock, () => clock.now() >= evictedAt + 179_000, { stepMs: 1000 });
    expect(t.sim.pod('default', 'db-0')?.metadata.uid).toBe(uid);
    expect(phase()).toBe('EVACUATING');
    await drive(clock, () => phase() === 'COMPLETED', { stepMs: 500 });
    // The StatefulSet brought the name back with another UID, elsewhere: that counted as gone (k8s:K8).
    const back = t.sim.pod('default', 'db-0')!;
    expect(back.metadata.uid).not.toBe(uid);
    expect(back.spec.nodeName).not.toBe('n1');
    expect(clock.now() - evictedAt).toBeGreaterThanOrEqual(180_000);
    expect(evictions()).toHaveLength(1);
  });
});

describe('k8s:K9: the VMs first, then the pods', () => {
  it('no pod is evicted while a VM still runs on the node; the drain starts once the last VM has left', async () => {
    t = await kubevirtApp(
      (sim) => {
        threeNodes(sim);
        sim.addVm({ name: 'a', nodeName: 'n1' });
        sim.addPod({ name: 'web-1', nodeName: 'n1', owner: { kind: 'ReplicaSet', name: 'web' }, labels: { app: 'web' } });
        // The VM's migration waits (its target pod not scheduled) until the test lets it go.
        sim.holdMigrations({ pending: () => true });
      },
      {},
      { msPerGraceSecond: 1 },
    );
    // What ran on n1 at the moment each non-VM pod's eviction reached the API server.
    const vmsOnNodeAtEviction: string[][] = [];
    const vmis = t.sim.def('virtualmachineinstances', 'kubevirt.io');
    t.sim.pods.evictionWebhooks.push((pod) => {
      if (pod.metadata.labels?.['kubevirt.io'] === undefined)
        vmsOnNodeAtEviction.push(
          t.sim.store
            .list(vmis)
            .filter((v) => v.status?.nodeName === 'n1')
            .map((v) => v.metadata.name),
        );
    });
    await enable();
    await eventually(() => phase() === 'EVACUATING' && t.sim.migrations('default').length === 1);
    expect(evictions()).toEqual([]);
    t.sim.holdMigrations({ pending: () => false });
    t.sim.releaseMigrations();
    await eventually(() => phase() === 'COMPLETED');
    expect(vmsOnNodeAtEviction).toEqual([[]]);
    expect(t.sim.pod('default', 'web-1')).toBeNull();
  });
});
