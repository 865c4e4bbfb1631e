import { afterEach, describe, expect, it } from 'vitest';
import type { ClusterVm } from '../../src/cluster/types.ts';
import type { DurationSampler } from '../../src/domain/rehearsal/types.ts';
import { createKubevirtBackend, type KubevirtBackend } from '../../plugins/kubevirt/index.ts';
import loadKubevirt from '../../rehearsal/loaders/kubevirt.ts';
import type { LoadedSimulators } from '../../rehearsal/loaders/types.ts';
import { K8sSim } from '../../simulators/kubernetes/index.ts';
import { VirtualClock } from '../support/virtual-clock.ts';

const fixed: DurationSampler = { draw: () => ({ ms: 1_000, source: 'CLUSTER' }) };

let source: K8sSim | null = null;
let live: KubevirtBackend | null = null;
let loaded: LoadedSimulators | null = null;
let rehearsed: KubevirtBackend | null = null;
afterEach(async () => {
  await rehearsed?.close();
  await loaded?.stop();
  await live?.close();
  await source?.close();
  source = live = loaded = rehearsed = null;
});

/** Two zones; a VM KubeVirt calls not live-migratable, one pinned to a zone; pods under a budget that allows no disruption. */
async function liveCluster(): Promise<K8sSim> {
  const sim = await K8sSim.start({ msPerGraceSecond: 1 });
  sim.addNode('n1', { zone: 'zone-a', roles: ['worker'] });
  sim.addNode('n2', { zone: 'zone-a', roles: ['worker'] });
  sim.addNode('n3', { zone: 'zone-b', roles: ['worker'], labels: { 'topology.kubernetes.io/region': 'eu-1' } });
  sim.addNode('n4', { zone: 'zone-b', roles: ['control-plane'], unschedulable: true, taints: [{ key: 'dedicated', value: 'infra', effect: 'NoSchedule' }] });
  for (const n of ['n1', 'n2', 'n3', 'n4']) {
    sim.store.mutate(sim.def('nodes'), undefined, n, (o) => {
      o.status.nodeInfo = {
        ...{ machineID: `m-${n}`, systemUUID: `u-${n}`, kernelVersion: '6.4.0', osImage: 'Harvester v1.6.1', containerRuntimeVersion: 'containerd://1.7.27' },
        ...{ kubeletVersion: 'v1.33.3+rke2r1', kubeProxyVersion: '', operatingSystem: 'linux', architecture: 'amd64', bootID: `boot-${n}` },
      };
      o.status.allocatable = { memory: '64Gi', cpu: '16' };
    });
  }
  sim.setKubevirtConfig({
    evictionStrategy: 'LiveMigrate',
    migrations: { parallelMigrationsPerCluster: 3, parallelOutboundMigrationsPerNode: 1, bandwidthPerMigration: '64Mi', completionTimeoutPerGiB: 100 },
  });
  sim.addPvc('default', 'disk');
  sim.addReplica('pvc-disk', 'n1', true);
  sim.addReplica('pvc-disk', 'n3', false);
  sim.addVm({ name: 'db', nodeName: 'n1', claims: ['disk'], memory: '8Gi' });
  // A reason the simulator would not compute itself: only the snapshot can carry it.
  sim.store.mutate(sim.def('virtualmachineinstances', 'kubevirt.io'), 'default', 'db', (v) => {
    v.status.conditions = [
      { type: 'Ready', status: 'True' },
      { type: 'LiveMigratable', status: 'False', reason: 'InterfaceNotLiveMigratable', message: 'cannot migrate VMI which does not use masquerade' },
    ];
  });
  sim.addVm({
    name: 'pinned',
    nodeName: 'n3',
    affinity: {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [{ matchExpressions: [{ key: 'topology.kubernetes.io/zone', operator: 'In', values: ['zone-b'] }] }],
        },
      },
    },
  });
  sim.addVm({ name: 'app', nodeName: 'n2', evictionStrategy: 'None', labels: { tier: 'app' } });
  sim.addVm({ name: 'off', namespace: 'batch', runStrategy: 'Halted' });
  sim.addPod({ name: 'web-1', nodeName: 'n1', labels: { app: 'web' }, owner: { kind: 'ReplicaSet', name: 'web' } });
  sim.addPod({ name: 'web-2', nodeName: 'n2', labels: { app: 'web' }, owner: { kind: 'ReplicaSet', name: 'web' } });
  sim.addPdb('default', 'web', { matchLabels: { app: 'web' }, minAvailable: 2 });
  sim.addPod({ name: 'agent-n1', nodeName: 'n1', labels: { app: 'agent' }, owner: { kind: 'DaemonSet', name: 'agent' } });
  sim.addPod({ name: 'ghost', nodeName: 'n1', labels: { app: 'ghost' }, owner: { kind: 'DaemonSet', name: 'ghost' }, ownerMissing: true });
  sim.addPod({ name: 'cache-0', nodeName: 'n2', emptyDir: true, labels: { app: 'cache' }, owner: { kind: 'StatefulSet', name: 'cache' } });
  sim.addPod({ name: 'bare', nodeName: 'n3', terminationGracePeriodSeconds: 5 });
  return sim;
}

const withoutUid = <T extends { uid: string }>(pods: T[]) => pods.map(({ uid: _uid, ...rest }) => rest);
/** Launcher pods are named by KubeVirt with a random suffix: compared by their VM. */
const byVm = (pods: { name: string; labels: Record<string, string> }[]) =>
  pods.map((p) => (p.labels['kubevirt.io'] === 'virt-launcher' ? `launcher of ${p.labels['kubevirt.io/domain'] ?? '?'}` : p.name)).sort();

describe('rehearsal: a kubevirt snapshot loaded into a fresh simulator (issue 33)', () => {
  it('round trip: a plugin over the loaded simulator lists the same nodes, VMs (reasons, constraints), pods and budget-blocked pods', async () => {
    source = await liveCluster();
    live = await createKubevirtBackend({ kubeconfigPath: source.kubeconfigFile(), vmActionTimeoutMs: 123_000 });
    const [snapshot] = await live.snapshot();
    expect(snapshot!.plugin).toBe('kubevirt');
    // Through JSON, as the worker receives it.
    const carried = JSON.parse(JSON.stringify(snapshot));

    const clock = new VirtualClock();
    loaded = await loadKubevirt(
      carried,
      { kubeconfigPath: '/live/kubeconfig', context: 'prod', vmActionTimeoutMs: 123_000 },
      {
        clock,
        durations: fixed,
        seed: 1,
      },
    );
    expect(loaded.options).toMatchObject({ vmActionTimeoutMs: 123_000 });
    expect(loaded.options).not.toHaveProperty('context');
    expect((loaded.options as { kubeconfigPath: string }).kubeconfigPath).not.toBe('/live/kubeconfig');
    expect(loaded.urls).toHaveLength(1);
    expect(loaded.urls[0]).not.toBe(source.url);
    rehearsed = await createKubevirtBackend({ ...(loaded.options as object), clock });

    // Nodes: zones, roles, cordon, labels, readiness, boot ids.
    const nodes = await rehearsed.listNodes();
    expect(nodes).toEqual(await live.listNodes());
    expect(nodes.map((n) => [n.id, n.zone, n.roles, n.cordoned, n.availability, n.bootId])).toEqual([
      ['n1', 'zone-a', ['worker'], false, 'ACTIVE', 'boot-n1'],
      ['n2', 'zone-a', ['worker'], false, 'ACTIVE', 'boot-n2'],
      ['n3', 'zone-b', ['worker'], false, 'ACTIVE', 'boot-n3'],
      ['n4', 'zone-b', ['control-plane'], true, 'ACTIVE', 'boot-n4'],
    ]);
    expect(nodes.find((n) => n.id === 'n3')!.labels['topology.kubernetes.io/region']).toBe('eu-1');

    // VMs: placement, strategy, migratability with KubeVirt's reason, constraints, volumes with replicas, bounds.
    const vms = await rehearsed.listVms();
    expect(vms).toEqual(await live.listVms());
    const vm = (id: string) => vms.find((v) => v.id === id) as ClusterVm;
    expect(vms.map((v) => [v.id, v.nodeId, v.runStrategy, v.liveMigratable, v.liveMigratableReason])).toEqual([
      ['batch/off', null, 'Halted', true, null],
      ['default/app', 'n2', 'Always', true, null],
      ['default/db', 'n1', 'Always', false, 'InterfaceNotLiveMigratable'],
      ['default/pinned', 'n3', 'Always', true, null],
    ]);
    expect(vm('default/pinned').requiredNodeAffinity).toEqual([
      { matchExpressions: [{ key: 'topology.kubernetes.io/zone', operator: 'In', values: ['zone-b'] }] },
    ]);
    expect(vm('default/app').evictionStrategy).toBe('None');
    expect(vm('default/db').evictionStrategy).toBe('LiveMigrate');
    expect(vm('default/db').volumes).toEqual([
      {
        name: 'disk',
        replicas: [
          { nodeId: 'n1', healthy: true },
          { nodeId: 'n3', healthy: false },
        ],
      },
    ]);
    // 8 GiB × 100 s/GiB from the KubeVirt CR's migration settings, plus KubeVirt's 900 s catch-all pending bound.
    expect(vm('default/db').migrationBoundMs).toBe(1_700_000);

    // Pods per node, as the drain lists them (owners, local storage, orphans).
    for (const node of ['n1', 'n2', 'n3', 'n4']) {
      const [was, is] = [await live.podDrain.listNodePods(node, ''), await rehearsed.podDrain.listNodePods(node, '')];
      expect(byVm(is)).toEqual(byVm(was));
      const plain = (pods: typeof is) =>
        withoutUid(pods.filter((p) => p.labels['kubevirt.io'] !== 'virt-launcher')).sort((a, b) => a.name.localeCompare(b.name));
      expect(plain(is)).toEqual(plain(was));
    }
    const n1 = await rehearsed.podDrain.listNodePods('n1', '');
    expect(n1.find((p) => p.name === 'ghost')!.controllerFound).toBe(false);
    expect(n1.find((p) => p.name === 'agent-n1')!.controllerFound).toBe(true);
    expect((await rehearsed.podDrain.listNodePods('n2', '')).find((p) => p.name === 'cache-0')!.hasEmptyDir).toBe(true);

    // The budget allows no disruption: evicting either web pod is refused by name.
    for (const name of ['web-1', 'web-2']) {
      expect(await rehearsed.podDrain.evictPod({ namespace: 'default', name }, null)).toMatchObject({ kind: 'BLOCKED', budget: 'web' });
    }
    expect(await rehearsed.podDrain.evictPod({ namespace: 'default', name: 'bare' }, 0)).toEqual({ kind: 'EVICTED' });
  });

  it('the snapshot carries no credential: no token, no kubeconfig, no cloud-init data, no secret-named or applied-configuration annotation', async () => {
    source = await liveCluster();
    source.store.mutate(source.def('virtualmachines', 'kubevirt.io'), 'default', 'app', (vm) => {
      vm.metadata.annotations = {
        ...vm.metadata.annotations,
        'kubectl.kubernetes.io/last-applied-configuration': '{"password":"hunter2"}',
        'example.com/api-token': 'tok-4242',
        'example.com/owner': 'team-blue',
      };
      vm.spec.template.spec.volumes.push({ name: 'cloudinit', cloudInitNoCloud: { userData: '#cloud-config\npassword: hunter2\n' } });
    });
    source.store.mutate(source.def('pods'), 'default', 'bare', (p) => {
      p.spec.containers[0].env = [{ name: 'DB_PASSWORD', value: 'hunter2' }];
      p.spec.volumes = [{ name: 'creds', secret: { secretName: 'db-creds' } }];
    });
    const kubeconfig = source.kubeconfigFile();
    live = await createKubevirtBackend({ kubeconfigPath: kubeconfig });
    const text = JSON.stringify(await live.snapshot());

    for (const secret of ['hunter2', 'tok-4242', source.token, kubeconfig, source.url, 'userData', 'DB_PASSWORD', 'db-creds', 'last-applied-configuration']) {
      expect(text).not.toContain(secret);
    }
    // What maintenance reads is still there.
    expect(text).toContain('"example.com/owner":"team-blue"');
    expect(text).toContain('"cloudinit"');
    expect(text).toContain('"name":"creds","secret":{}');
  });

  it('refuses a snapshot of another plugin or format, before starting anything', async () => {
    const context = { clock: new VirtualClock(), durations: fixed, seed: 1 };
    await expect(loadKubevirt({ plugin: 'pageserver', takenAt: 0, data: {} }, {}, context)).rejects.toThrow(/plugin "pageserver"/);
    await expect(loadKubevirt({ plugin: 'kubevirt', takenAt: 0, data: { version: 2 } }, {}, context)).rejects.toThrow(/not of version 1/);
    await expect(loadKubevirt({ plugin: 'kubevirt', takenAt: 0, data: { version: 1, nodes: [] } }, {}, context)).rejects.toThrow(/no list "vms"/);
  });
});

describe('rehearsal: a loaded snapshot reads back as itself (issue 33)', () => {
  it('Harvester mode: the snapshot of the loaded simulator equals the live one (settings, mode, budgets, KubeVirt CR, policies), but for uids and launcher pod names', async () => {
    source = await K8sSim.start({ harvester: true, msPerGraceSecond: 1 });
    for (const n of ['h1', 'h2']) {
      source.addNode(n, { zone: 'zone-a', roles: ['worker'] });
      source.store.mutate(source.def('nodes'), undefined, n, (o) => {
        o.status.nodeInfo = {
          ...{ machineID: 'm', systemUUID: 'u', kernelVersion: '6.4.0', osImage: 'Harvester v1.6.1', containerRuntimeVersion: 'containerd://1.7.27' },
          ...{ kubeletVersion: 'v1.33.3', kubeProxyVersion: '', operatingSystem: 'linux', architecture: 'amd64', bootID: `boot-${n}` },
        };
      });
    }
    source.setNodeTaints('h2', [{ key: 'kubevirt.io/drain', effect: 'NoSchedule' }]);
    source.store.create(source.def('settings', 'harvesterhci.io'), {
      metadata: { name: 'vm-force-reset-policy' },
      value: '{"enable":true,"period":15}',
      default: '',
    });
    source.setKubevirtConfig({ migrations: { parallelMigrationsPerCluster: 2 } });
    source.addMigrationPolicy('slow', { bandwidthPerMigration: '16Mi' });
    source.addVm({ name: 'vm', nodeName: 'h1', memory: '2Gi', labels: { 'harvesterhci.io/maintain-mode-strategy': 'Migrate' } });
    source.addPod({ name: 'db-0', nodeName: 'h1', labels: { app: 'db' }, owner: { kind: 'StatefulSet', name: 'db' } });
    source.addPdb('default', 'db', { matchLabels: { app: 'db' }, maxUnavailable: 0 });
    live = await createKubevirtBackend({ kubeconfigPath: source.kubeconfigFile() });
    const [taken] = await live.snapshot();

    const clock = new VirtualClock(taken!.takenAt);
    loaded = await loadKubevirt(JSON.parse(JSON.stringify(taken)), {}, { clock, durations: fixed, seed: 1 });
    rehearsed = await createKubevirtBackend({ ...(loaded.options as object), clock });
    const [again] = await rehearsed.snapshot();

    const normal = (s: unknown) =>
      JSON.parse(
        JSON.stringify(s, (key, value) => (key === 'uid' || key === 'kubevirt.io/created-by' ? undefined : value)).replace(
          /virt-launcher-([a-z0-9-]+?)-[a-z0-9]{5}"/g,
          'virt-launcher-$1"',
        ),
      );
    expect(normal(again)).toEqual(normal(taken));
    const data = (again as { data: { mode: string; harvester: unknown; pdbs: { status: unknown }[] } }).data;
    expect(data.mode).toBe('delegate');
    expect(data.harvester).toEqual({
      settings: [
        { name: 'vm-force-reset-policy', value: '{"enable":true,"period":15}', default: '' },
        { name: 'default-vm-termination-grace-period-seconds', value: null, default: null },
      ],
    });
    expect(data.pdbs.map((b) => b.status)).toEqual([{ disruptionsAllowed: 0, currentHealthy: 1, desiredHealthy: 1, expectedPods: 1 }]);
  });
});
