import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import type { BackendSnapshot } from '../../src/cluster/rehearsal.ts';
import type { DurationSampler, RehearsedAction } from '../../src/domain/rehearsal/types.ts';
import { createKubevirtBackend, type KubevirtBackend } from '../../plugins/kubevirt/index.ts';
import loadKubevirt from '../../rehearsal/loaders/kubevirt.ts';
import type { LoadedSimulators } from '../../rehearsal/loaders/types.ts';
import { K8sSim } from '../../simulators/kubernetes/index.ts';
import { eventually } from '../support/kubevirt-app.ts';
import { VirtualClock } from '../support/virtual-clock.ts';

/** Draws fixed durations per action and records what was drawn for whom. */
class RecordingSampler implements DurationSampler {
  readonly draws: [RehearsedAction, string, string | null][] = [];
  constructor(private readonly ms: Partial<Record<RehearsedAction, number>>) {}
  draw(action: RehearsedAction, workloadId: string, nodeId: string | null) {
    this.draws.push([action, workloadId, nodeId]);
    return { ms: this.ms[action] ?? 1, source: 'WORKLOAD' as const };
  }
}

let loaded: LoadedSimulators | null = null;
let backend: KubevirtBackend | null = null;
afterEach(async () => {
  await backend?.close();
  await loaded?.stop();
  loaded = backend = null;
});

/** A live cluster's snapshot: three nodes, a movable VM, an unmovable one, a pod. */
function seedDefault(live: K8sSim): void {
  for (const n of ['n1', 'n2', 'n3']) live.addNode(n, { zone: 'zone-a' });
  live.addVm({ name: 'mover', nodeName: 'n1' });
  live.addVm({ name: 'gpu', nodeName: 'n1', gpu: true });
  live.addPod({ name: 'web-1', nodeName: 'n1', labels: { app: 'web' }, owner: { kind: 'ReplicaSet', name: 'web' }, terminationGracePeriodSeconds: 30 });
}

async function snapshotOfLiveCluster(seed: (live: K8sSim) => void): Promise<BackendSnapshot> {
  const live = await K8sSim.start();
  try {
    seed(live);
    const backend = await createKubevirtBackend({ kubeconfigPath: live.kubeconfigFile() });
    try {
      const [snapshot] = await backend.snapshot();
      return JSON.parse(JSON.stringify(snapshot)) as BackendSnapshot;
    } finally {
      await backend.close();
    }
  } finally {
    await live.close();
  }
}

async function rehearse(sampler: DurationSampler, seed = seedDefault): Promise<{ clock: VirtualClock }> {
  const clock = new VirtualClock();
  const snapshot = await snapshotOfLiveCluster(seed);
  loaded = await loadKubevirt(snapshot, {}, { clock, durations: sampler, seed: 7 });
  backend = await createKubevirtBackend({ ...(loaded.options as object), clock });
  return { clock };
}

/** GET from the loaded simulator's API as any client would, with the loader's kubeconfig. */
async function read<T>(path: string): Promise<T> {
  const kubeconfig = JSON.parse(readFileSync((loaded!.options as { kubeconfigPath: string }).kubeconfigPath, 'utf8'));
  const response = await fetch(`${loaded!.urls[0]}${path}`, { headers: { authorization: `Bearer ${kubeconfig.users[0].user.token}` } });
  return (await response.json()) as T;
}

/** A pod's Ready condition (the plugin maps no readiness). */
async function podReady(namespace: string, name: string): Promise<string | undefined> {
  const pod = await read<{ status?: { conditions?: { type: string; status: string }[] } }>(`/api/v1/namespaces/${namespace}/pods/${name}`);
  return pod.status?.conditions?.find((c) => c.type === 'Ready')?.status;
}

/** The migrations' phases by VMI. */
async function migrationPhases(): Promise<Record<string, string | undefined>> {
  const list = await read<{ items: { spec: { vmiName: string }; status?: { phase?: string } }[] }>(
    '/apis/kubevirt.io/v1/namespaces/default/virtualmachineinstancemigrations',
  );
  return Object.fromEntries(list.items.map((m) => [m.spec.vmiName, m.status?.phase]));
}

/** Settles a promise's state without waiting for it. */
function tracked<T>(p: Promise<T>): { settled: () => boolean; promise: Promise<T> } {
  let done = false;
  const promise = p.finally(() => (done = true));
  return { settled: () => done, promise };
}

describe('rehearsal: drawn durations in virtual time on the kubevirt simulator (issue 33)', () => {
  it('a migration drawn at 90 s completes 90 s of virtual time after it starts copying, not a millisecond before', async () => {
    const sampler = new RecordingSampler({ VM_MIGRATE: 90_000 });
    const { clock } = await rehearse(sampler);
    const migration = tracked(backend!.migrateVm('default/mover', { fromNodeId: 'n1' }));
    await eventually(async () => (await backend!.getVm('default/mover'))?.status === 'Migrating');
    expect(sampler.draws).toEqual([['VM_MIGRATE', 'default/mover', 'n1']]);

    await clock.advance(89_999);
    expect(migration.settled()).toBe(false);
    expect((await backend!.getVm('default/mover'))!.nodeId).toBe('n1');

    await clock.advance(1);
    await migration.promise;
    expect((await backend!.getVm('default/mover'))!.nodeId).not.toBe('n1');
  });

  it("KubeVirt's parallelOutboundMigrationsPerNode (2 by default) queues the third migration off a node until one of the first two ends", async () => {
    const sampler = new RecordingSampler({ VM_MIGRATE: 90_000 });
    const { clock } = await rehearse(sampler, (live) => {
      for (const n of ['n1', 'n2', 'n3']) live.addNode(n);
      for (const vm of ['a', 'b', 'c']) live.addVm({ name: vm, nodeName: 'n1' });
    });
    const migrations = ['a', 'b', 'c'].map((vm) => tracked(backend!.migrateVm(`default/${vm}`, { fromNodeId: 'n1' })));
    const queued = { a: 'Running', b: 'Running', c: 'Pending' };
    await eventually(async () => JSON.stringify(await migrationPhases()) === JSON.stringify(queued));
    expect(sampler.draws.map(([, vm]) => vm)).toEqual(['default/a', 'default/b']);
    await clock.advance(90_000);
    await Promise.all(migrations.slice(0, 2).map((m) => m.promise));
    // The third starts copying only now, and takes its own 90 s.
    await eventually(() => sampler.draws.length === 3);
    expect(migrations[2]!.settled()).toBe(false);
    await clock.advance(89_999);
    expect(migrations[2]!.settled()).toBe(false);
    await clock.advance(1);
    await migrations[2]!.promise;
    expect((await backend!.listVms()).map((v) => v.nodeId === 'n1')).toEqual([false, false, false]);
  });

  it('a stop drawn at 40 s, a start at 25 s and a pod termination at 50 s take that long in virtual time', async () => {
    const sampler = new RecordingSampler({ VM_STOP: 40_000, VM_START: 25_000, POD_EVICT: 50_000 });
    const { clock } = await rehearse(sampler);

    const stop = tracked(backend!.stopVm('default/mover'));
    await eventually(() => sampler.draws.some(([a]) => a === 'VM_STOP'));
    await clock.advance(39_999);
    expect(stop.settled()).toBe(false);
    await clock.advance(1);
    await stop.promise;
    expect((await backend!.getVm('default/mover'))!.nodeId).toBeNull();

    const start = tracked(backend!.startVm('default/mover', { runStrategy: 'Always', nodeId: 'n2' }));
    await eventually(() => sampler.draws.some(([a]) => a === 'VM_START'));
    await clock.advance(24_999);
    expect(start.settled()).toBe(false);
    await clock.advance(1);
    await start.promise;
    expect((await backend!.getVm('default/mover'))!.nodeId).toBe('n2');

    const [pod] = (await backend!.podDrain.listNodePods('n1', 'app=web')).map((p) => ({ namespace: p.namespace, name: p.name, uid: p.uid }));
    expect(await backend!.podDrain.evictPod(pod!, null)).toEqual({ kind: 'EVICTED' });
    await clock.advance(49_999);
    expect(await backend!.podDrain.podGone(pod!)).toBe(false);
    await clock.advance(1);
    expect(await backend!.podDrain.podGone(pod!)).toBe(true);

    expect(sampler.draws).toEqual([
      ['VM_STOP', 'default/mover', 'n1'],
      ['VM_START', 'default/mover', 'n2'],
      ['POD_EVICT', 'default/web-1', 'n1'],
    ]);
  });

  it('restartNode: the node is down (guests gone, pods not ready) for downMs of virtual time, then Ready with a new boot id', async () => {
    const sampler = new RecordingSampler({ VM_START: 10_000 });
    const { clock } = await rehearse(sampler);
    const before = (await backend!.getNode('n1'))!;
    expect(before.availability).toBe('ACTIVE');

    await loaded!.restartNode('n1', 120_000);
    await eventually(async () => (await backend!.getNode('n1'))?.availability === 'OFFLINE');
    // The guests died with the node: the GPU VM (which could not have moved) runs again elsewhere once started.
    await eventually(() => sampler.draws.filter(([a]) => a === 'VM_START').length === 2);
    expect(sampler.draws.map(([a, vm, node]) => [a, vm, node === 'n1' ? 'n1' : 'elsewhere']).sort()).toEqual([
      ['VM_START', 'default/gpu', 'elsewhere'],
      ['VM_START', 'default/mover', 'elsewhere'],
    ]);
    // Other pods stay (the kubelet restarts them) but are not ready while the node is down.
    expect((await backend!.podDrain.listNodePods('n1', 'app=web')).map((p) => p.name)).toEqual(['web-1']);
    expect(await podReady('default', 'web-1')).toBe('False');

    await clock.advance(10_000);
    await eventually(async () => (await backend!.getVm('default/gpu'))?.status === 'Running');
    expect(['n2', 'n3']).toContain((await backend!.getVm('default/gpu'))!.nodeId);

    await clock.advance(109_999);
    expect((await backend!.getNode('n1'))!.availability).toBe('OFFLINE');
    await clock.advance(1);
    await eventually(async () => (await backend!.getNode('n1'))?.availability === 'ACTIVE');
    const after = (await backend!.getNode('n1'))!;
    expect(after.bootId).not.toBe(before.bootId);
    expect(after.bootId).toBe('n1-boot-1');
    expect(await podReady('default', 'web-1')).toBe('True');

    // The runner asks every loader of a sample: a node this one does not have is another plugin's, left alone.
    await expect(loaded!.restartNode('n9', 1_000)).resolves.toBeUndefined();
  });

  it('a node restarted before the snapshot was read (an earlier run left it n1-boot-1) comes back with a boot id it never had', async () => {
    const { clock } = await rehearse(new RecordingSampler({}), (live) => {
      seedDefault(live);
      live.store.mutate(live.def('nodes'), undefined, 'n1', (n) => {
        n.status.nodeInfo = {
          ...{ machineID: 'm-n1', systemUUID: 'u-n1', kernelVersion: '6.4.0', osImage: 'Linux', containerRuntimeVersion: 'containerd://1.7.27' },
          ...{ kubeletVersion: 'v1.33.3', kubeProxyVersion: '', operatingSystem: 'linux', architecture: 'amd64', bootID: 'n1-boot-1' },
        };
      });
    });
    expect((await backend!.getNode('n1'))!.bootId).toBe('n1-boot-1');
    // The first restart of this sample: its boot id must still change, or the rollout waits for the re-attach forever (rollout:O7).
    await loaded!.restartNode('n1', 60_000);
    await eventually(async () => (await backend!.getNode('n1'))?.availability === 'OFFLINE');
    await clock.advance(60_000);
    await eventually(async () => (await backend!.getNode('n1'))?.availability === 'ACTIVE');
    expect((await backend!.getNode('n1'))!.bootId).toBe('n1-boot-2');
    await loaded!.restartNode('n1', 60_000);
    await clock.advance(60_000);
    await eventually(async () => (await backend!.getNode('n1'))?.bootId === 'n1-boot-3');
  });
});
