import { afterEach, describe, expect, it } from 'vitest';
import { createKubevirtBackend, type KubevirtBackend } from '../../../plugins/kubevirt/index.ts';
import { DEFAULT_CONFIG } from '../../../src/config/defaults.ts';
import { K8sSim, MIGRATION_JOB_LABEL } from '../../../simulators/kubernetes/index.ts';
import { eventually, nodeDownSettled } from '../../support/kubevirt-app.ts';
import { VirtualClock } from '../../support/virtual-clock.ts';
import type { BackendError } from '../../../src/cluster/errors.ts';

/** The plugin and the simulator on the rules the scenarios do not reach (k8s:K5, k8s:K6, k8s:E2, k8s:E3, k8s:C4, k8s:C5, k8s:C10, k8s:U7). */
let sim: K8sSim;
let backend: KubevirtBackend | null = null;
afterEach(async () => {
  await backend?.close();
  backend = null;
  await sim?.close();
});

async function start(options: Parameters<typeof K8sSim.start>[0] = {}, plugin: Record<string, unknown> = {}) {
  sim = await K8sSim.start({ msPerGraceSecond: 1, ...options });
  for (const n of ['n1', 'n2']) sim.addNode(n);
  return async () => (backend = await createKubevirtBackend({ kubeconfigPath: sim.kubeconfigFile(), ...plugin }));
}
const evictions = () => sim.calls.filter((c) => c.resource === 'pods/eviction');
/** An eviction as kubectl would send it (plain fetch, for the simulator's own answers). */
async function evict(name: string, namespace = 'default') {
  const res = await fetch(`${sim.url}/api/v1/namespaces/${namespace}/pods/${name}/eviction`, {
    method: 'POST',
    headers: { authorization: `Bearer ${sim.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name, namespace } }),
  });
  return { status: res.status, body: (await res.json()) as any };
}
const launcherOf = (vm: string) =>
  sim.store.list(sim.def('pods')).find((p) => p.metadata.labels?.['vm.kubevirt.io/name'] === vm && !p.metadata.labels?.['kubevirt.io/migrationJobUID'])!;

describe('k8s:K5 Eviction version, k8s:K6 answers', () => {
  it('policy/v1beta1 only when discovery lists pods/eviction there; v1 otherwise', async () => {
    const connect = await start();
    sim.api.evictionVersion = 'v1beta1';
    sim.addPod({ name: 'web', nodeName: 'n1', owner: { kind: 'ReplicaSet', name: 'web' } });
    const b = await connect();
    expect(await b.podDrain.evictPod({ namespace: 'default', name: 'web' }, 5)).toEqual({ kind: 'EVICTED' });
    expect(evictions()[0]!.body).toMatchObject({ apiVersion: 'policy/v1beta1', kind: 'Eviction' });
  });

  it('403 NamespaceTerminating, 404 gone, 429 naming the budget (also a stale one), 500 for two budgets', async () => {
    const connect = await start();
    sim.addPod({ name: 'web', nodeName: 'n1', owner: { kind: 'ReplicaSet', name: 'web' }, labels: { app: 'web' } });
    sim.addPod({ name: 'api', nodeName: 'n1', owner: { kind: 'ReplicaSet', name: 'api' }, labels: { app: 'api', tier: 'x' } });
    sim.addPdb('default', 'web-pdb', { matchLabels: { app: 'web' }, minAvailable: 1 });
    sim.addPdb('default', 'a', { matchLabels: { app: 'api' }, maxUnavailable: 1 });
    sim.addPdb('default', 'b', { matchLabels: { tier: 'x' }, maxUnavailable: 1 });
    const b = await connect();
    const pd = b.podDrain;
    expect(await pd.evictPod({ namespace: 'default', name: 'nope' }, 0)).toEqual({ kind: 'GONE' });
    expect(await pd.evictPod({ namespace: 'default', name: 'web' }, 0)).toEqual({
      kind: 'BLOCKED',
      budget: 'web-pdb',
      message: "Cannot evict pod as it would violate the pod's disruption budget.: The disruption budget web-pdb needs 1 healthy pods and has 1 currently",
    });
    expect(await pd.evictPod({ namespace: 'default', name: 'api' }, 0)).toMatchObject({
      kind: 'FAILED',
      status: 500,
      message: expect.stringContaining('more than one PodDisruptionBudget'),
    });
    // A budget whose status lags its generation (the disruption controller has not seen the change yet).
    sim.pods.pausePdbSync = true;
    sim.store.mutate(sim.def('poddisruptionbudgets', 'policy'), 'default', 'web-pdb', (p) => (p.spec.minAvailable = 0));
    expect(await pd.evictPod({ namespace: 'default', name: 'web' }, 0)).toMatchObject({
      kind: 'BLOCKED',
      budget: 'web-pdb',
      message: expect.stringContaining('is still being processed'),
    });
    sim.pods.terminatingNamespaces.add('default');
    expect(await pd.evictPod({ namespace: 'default', name: 'web' }, 0)).toMatchObject({ kind: 'NAMESPACE_TERMINATING' });
  });
});

describe("k8s:E2, k8s:E3: KubeVirt's eviction of launcher pods, as the simulator answers it", () => {
  it('None passes; LiveMigrate not migratable is denied; migratable is marked and evacuated, then its completed pod passes; External is marked and never migrated', async () => {
    await start();
    sim.addVm({ name: 'none', nodeName: 'n1', evictionStrategy: 'None' });
    sim.addVm({ name: 'stuck', nodeName: 'n1', evictionStrategy: 'LiveMigrate', gpu: true });
    sim.addVm({ name: 'lm', nodeName: 'n1', evictionStrategy: 'LiveMigrate' });
    sim.addVm({ name: 'ext', nodeName: 'n1', evictionStrategy: 'External' });
    sim.addVm({ name: 'bare', nodeName: 'n1', liveMigratableCondition: false, evictionStrategy: 'LiveMigrateIfPossible' });
    const webhook = 'admission webhook "virt-launcher-eviction-interceptor.kubevirt.io" denied the request: ';
    expect((await evict(launcherOf('none').metadata.name)).status).toBe(201);
    expect(await evict(launcherOf('stuck').metadata.name)).toMatchObject({
      status: 429,
      body: { message: `${webhook}VMI stuck is configured with an eviction strategy but is not live-migratable` },
    });
    // No LiveMigratable condition at all: not migratable for an eviction (k8s:E6's other side); IfPossible then passes.
    expect((await evict(launcherOf('bare').metadata.name)).status).toBe(201);
    const lmPod = launcherOf('lm').metadata.name;
    expect(await evict(lmPod)).toMatchObject({ status: 429, body: { message: `${webhook}Eviction triggered evacuation of VMI "default/lm"` } });
    expect(sim.vmi('default', 'lm')!.status.evacuationNodeName).toBe('n1');
    await eventually(() => sim.vmi('default', 'lm')?.status?.nodeName === 'n2');
    expect(sim.migrations('default').find((m) => m.spec.vmiName === 'lm')!.metadata.generateName).toBe('kubevirt-evacuation-');
    expect((await evict(lmPod)).status).toBe(201);
    const extPod = launcherOf('ext').metadata.name;
    expect((await evict(extPod)).status).toBe(429);
    const marked = sim.store.currentRv;
    expect(sim.vmi('default', 'ext')!.status.evacuationNodeName).toBe('n1');
    expect(await evict(extPod)).toMatchObject({ status: 429, body: { message: expect.stringContaining('Evacuation in progress') } });
    // The evacuation controller has looked at the cluster since ext was marked: no migration for it.
    await eventually(() => sim.eviction.syncedRv >= marked);
    expect(sim.migrations('default').filter((m) => m.spec.vmiName === 'ext')).toEqual([]);
  });

  it("a live VMI's migration target pod and its hotplug-disk pod are denied, with KubeVirt's messages", async () => {
    await start();
    const webhook = 'admission webhook "virt-launcher-eviction-interceptor.kubevirt.io" denied the request: ';
    sim.addVm({ name: 'm', nodeName: 'n1', evictionStrategy: 'LiveMigrate' });
    sim.holdMigrations({ pending: () => true });
    sim.controller.createMigration('default', 'm', { generateName: 'x-' });
    const targetOf = () => sim.store.list(sim.def('pods')).find((p) => p.metadata.labels?.[MIGRATION_JOB_LABEL]);
    await eventually(() => targetOf() !== undefined);
    expect(await evict(targetOf()!.metadata.name)).toMatchObject({ status: 429, body: { message: `${webhook}Eviction request for target Pod` } });
    const launcher = launcherOf('m');
    sim.store.create(sim.def('pods'), {
      metadata: {
        name: 'hp-m',
        namespace: 'default',
        labels: { 'kubevirt.io': 'hotplug-disk' },
        ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: launcher.metadata.name, uid: launcher.metadata.uid }],
      },
      spec: { nodeName: 'n1', containers: [{ name: 'hotplug', image: 'quay.io/kubevirt/virt-launcher:v1.6.0' }] },
      status: { phase: 'Running' },
    });
    expect(await evict('hp-m')).toMatchObject({
      status: 429,
      body: { message: `${webhook}cannot evict hotplug pod: hp-m associated with running vmi: m in namespace default` },
    });
  });

  it('the drain taint route migrates every VMI that migrates on eviction, with no eviction (k8s:E3)', async () => {
    await start();
    sim.setKubevirtConfig({ evictionStrategy: 'LiveMigrate' });
    sim.addVm({ name: 'a', nodeName: 'n1' });
    sim.addVm({ name: 'none', nodeName: 'n1', evictionStrategy: 'None' });
    sim.setNodeTaints('n1', [{ key: 'kubevirt.io/drain', effect: 'NoSchedule' }]);
    await eventually(() => sim.vmi('default', 'a')?.status?.nodeName === 'n2');
    expect(sim.vmi('default', 'a')!.spec.evictionStrategy).toBe('LiveMigrate');
    expect(sim.vmi('default', 'none')!.status.nodeName).toBe('n1');
    expect(sim.calls.filter((c) => c.resource === 'pods/eviction')).toEqual([]);
  });
});

describe('k8s:C4, k8s:C5, k8s:C10', () => {
  it('a second migration in flight for a VMI is refused; final ones beyond the newest 5 are collected, and all go with their VMI', async () => {
    await start({ delays: { migrateMs: 1 } });
    sim.addVm({ name: 'a', nodeName: 'n1' });
    sim.holdMigrations({ pending: () => true });
    const create = () =>
      fetch(`${sim.url}/apis/kubevirt.io/v1/namespaces/default/virtualmachineinstancemigrations`, {
        method: 'POST',
        headers: { authorization: `Bearer ${sim.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          apiVersion: 'kubevirt.io/v1',
          kind: 'VirtualMachineInstanceMigration',
          metadata: { generateName: 'm-' },
          spec: { vmiName: 'a' },
        }),
      });
    expect((await create()).status).toBe(201);
    const second = await create();
    expect(second.status).toBe(400);
    expect(((await second.json()) as { message: string }).message).toMatch(
      /in-flight migration detected\. Active migration job \(.+\) is currently already in progress for VMI a\./,
    );
    sim.holdMigrations({ pending: () => false });
    sim.releaseMigrations();
    for (let i = 0; i < 6; i++) {
      await eventually(() => sim.migrations('default').every((m) => ['Succeeded', 'Failed'].includes(m.status?.phase)));
      expect((await create()).status).toBe(201);
    }
    await eventually(() => sim.migrations('default').every((m) => ['Succeeded', 'Failed'].includes(m.status?.phase)) && sim.migrations('default').length === 5);
    sim.store.mutate(sim.def('virtualmachines', 'kubevirt.io'), 'default', 'a', (v) => (v.spec.runStrategy = 'Halted'));
    await eventually(() => sim.migrations('default').length === 0);
  });

  it('an unschedulable target pod fails its migration after 300 s; failed evacuation migrations back off 20 s, then 40 s', async () => {
    const clock = new VirtualClock();
    await start({ clock });
    sim.addVm({ name: 'a', nodeName: 'n1', evictionStrategy: 'LiveMigrate' });
    sim.holdMigrations({ pending: () => true });
    // Every migration KubeVirt creates, with the simulated time it appeared.
    const created: { name: string; at: number }[] = [];
    sim.store.subscribe((e) => {
      if (e.type === 'ADDED' && e.resource.kind === 'VirtualMachineInstanceMigration') created.push({ name: e.object.metadata.name!, at: clock.now() });
    });
    const t0 = clock.now();
    // The drain taint route (k8s:E3): KubeVirt's evacuation controller migrates it, no eviction.
    sim.setNodeTaints('n1', [{ key: 'kubevirt.io/drain', effect: 'NoSchedule' }]);
    await eventually(() => created.length === 1);
    const phaseOf = (name: string) => sim.migrations('default').find((m) => m.metadata.name === name)?.status?.phase;
    await eventually(() => phaseOf(created[0]!.name) === 'Pending');
    await clock.advance(299_999);
    expect(phaseOf(created[0]!.name)).toBe('Pending');
    await clock.advance(1);
    const failed = sim.migrations('default').find((m) => m.metadata.name === created[0]!.name)!;
    expect(failed.status.phase).toBe('Failed');
    expect(failed.status.migrationState.failureReason).toMatch(/^unschedulable pod default\/virt-launcher-a-\w+ timeout period exceeded$/);
    expect(sim.store.list(sim.def('pods')).filter((p) => p.metadata.labels?.[MIGRATION_JOB_LABEL] === failed.metadata.uid)).toEqual([]);
    // handleMigrationBackoff: the next evacuation migration 20 s after the failure, the one after 40 s.
    await clock.advance(19_999);
    expect(created).toHaveLength(1);
    await clock.advance(1);
    await eventually(() => created.length === 2);
    expect(created[1]!.at - t0).toBe(320_000);
    await eventually(() => phaseOf(created[1]!.name) === 'Pending');
    await clock.advance(300_000 + 39_999);
    expect(created).toHaveLength(2);
    await clock.advance(1);
    await eventually(() => created.length === 3);
    expect(created[2]!.at - t0).toBe(660_000);
  });

  /** A migration Lockkeeper starts, held by the simulator; what the plugin answers once KubeVirt's bound fails it. */
  async function heldMigration(holds: Parameters<typeof sim.holdMigrations>[0], memory: string, phase: 'Pending' | 'Running') {
    const clock = new VirtualClock();
    const connect = await start({ clock });
    sim.addVm({ name: 'a', nodeName: 'n1', memory });
    sim.holdMigrations(holds);
    const b = await connect();
    const outcome = b.migrateVm('default/a', { fromNodeId: 'n1' }).then(
      () => expect.fail('expected the migration to fail'),
      (e: BackendError) => e,
    );
    await eventually(() => sim.migrations('default')[0]?.status?.phase === phase);
    const phaseNow = () => sim.migrations('default')[0]?.status?.phase;
    return { clock, outcome, phaseNow };
  }

  /** k8s:C10's three bounds on a migration Lockkeeper started: still in its phase until the bound, Failed at it. */
  const BOUNDS: {
    bound: string;
    holds: Parameters<K8sSim['holdMigrations']>[0];
    memory: string;
    phase: 'Pending' | 'Running';
    /** Clock steps after each of which the migration is still in `phase`; 1 ms more fails it. */
    still: number[];
    message: RegExp;
  }[] = [
    {
      bound: 'a target pod pending for another reason than unschedulable fails its migration after 900 s, not 300 s',
      holds: { pending: () => true, pendingCause: 'ContainerCreating' },
      memory: '1Gi',
      phase: 'Pending',
      still: [300_000, 599_999],
      message:
        /migration default\/a-lockkeeper-\w+ failed: pending pod default\/virt-launcher-a-\w+ timeout period exceeded \(ended by KubeVirt's pending target pod timeout\)$/,
    },
    {
      // 4 GiB: the completion bound (600 s) is far off, so only the progress bound can fire.
      bound: 'a Running migration with no progress for 150 s is aborted (progressTimeout)',
      holds: { running: () => true, transfer: 'stalled' },
      memory: '4Gi',
      phase: 'Running',
      still: [149_999],
      message: /failed: Live migration stuck for 150 sec and has been aborted \(ended by KubeVirt's progressTimeout \(no progress for that long\)\)$/,
    },
    {
      // Progressing: the 150 s progress bound does not fire.
      bound: 'a migration still copying after 150 s per GiB of memory is aborted (completionTimeoutPerGiB)',
      holds: { running: () => true, transfer: 'progressing' },
      memory: '2Gi',
      phase: 'Running',
      still: [299_999],
      message:
        /failed: Live migration is not completed after 300 sec and has been aborted \(ended by KubeVirt's completion timeout \(completionTimeoutPerGiB × memory\)\)$/,
    },
  ];

  for (const { bound, holds, memory, phase, still, message } of BOUNDS)
    it(`${bound}; Lockkeeper gets a transient failure`, async () => {
      const { clock, outcome, phaseNow } = await heldMigration(holds, memory, phase);
      for (const ms of still) {
        await clock.advance(ms);
        expect(phaseNow()).toBe(phase);
      }
      await clock.advance(1);
      expect(phaseNow()).toBe('Failed');
      const e = await outcome;
      expect(e.code).toBe('Transient');
      expect(e.message).toMatch(message);
      expect(sim.vmi('default', 'a')!.status.nodeName).toBe('n1');
    });

  it("Lockkeeper's migration limits are KubeVirt's: 5 per cluster, 2 outbound per node", () => {
    expect(DEFAULT_CONFIG.operations.maxParallelMigrations).toBe(5);
    expect(DEFAULT_CONFIG.operations.maxOutboundMigrationsPerNode).toBe(2);
  });
});

describe('k8s:U7 and k8s:H9 together', () => {
  it("nodeDown.enable is ignored where Harvester's controllers run, and confirmNodeDown says so", async () => {
    const clock = new VirtualClock();
    const connect = await start({ harvester: true, clock }, { nodeDown: { enable: true, period: 1 }, clock });
    const b = await connect();
    expect(b.nodeMaintenance.delegate?.controller).toBe('Harvester');
    // Once the plugin has seen the node go Unknown, a long stretch of time: nothing is written.
    let seen = false;
    b.watch((e) => (seen ||= e.type === 'nodeChanged' && e.node.id === 'n1' && e.node.availability === 'OFFLINE'));
    sim.setNodeReady('n1', false);
    await eventually(() => seen);
    await clock.advance(1_000_000);
    // A node-down controller, had one started, has acted on all of it by now (no real-time sleep).
    await nodeDownSettled(sim, b);
    expect(sim.node('n1')!.spec.taints).toBeUndefined();
    expect(sim.calls.filter((c) => c.resource === 'nodes' && c.verb === 'patch')).toEqual([]);
    await expect(b.confirmNodeDown('n1')).rejects.toThrow(/node-down handling is Harvester's on this cluster/);
  });

  it('the config can force either mode', async () => {
    const connect = await start({}, { harvester: 'delegate' });
    expect((await connect()).nodeMaintenance.delegate?.reason).toBe('config: harvester = delegate');
    await backend!.close();
    backend = await createKubevirtBackend({ kubeconfigPath: sim.kubeconfigFile(), harvester: 'act' });
    expect(backend.nodeMaintenance.delegate).toBeNull();
  });
});
