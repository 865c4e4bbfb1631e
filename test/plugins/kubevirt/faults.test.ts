import { afterEach, describe, expect, it } from 'vitest';
import { BackendError } from '../../../src/cluster/errors.ts';
import type { ClusterEvent } from '../../../src/cluster/types.ts';
import { createKubevirtBackend, type KubevirtBackend } from '../../../plugins/kubevirt/index.ts';
import { K8sSim } from '../../../simulators/kubernetes/index.ts';
import { eventually } from '../../support/kubevirt-app.ts';

let sim: K8sSim;
let backend: KubevirtBackend | null;
afterEach(async () => {
  await backend?.close();
  await sim?.close();
  backend = null;
});

async function setup(options: { longhorn?: boolean } = {}) {
  sim = await K8sSim.start({ longhorn: options.longhorn ?? true, bookmarkIntervalMs: 50 });
  sim.addNode('node-1');
  sim.addNode('node-2');
  sim.addVm({ name: 'vm', nodeName: 'node-1', labels: { app: 'x' } });
  backend = await createKubevirtBackend({ kubeconfigPath: sim.kubeconfigFile(), watchBackoffMs: 20, watchBackoffMaxMs: 100 });
  return backend;
}

async function rejection(p: Promise<unknown>): Promise<BackendError> {
  const e = await p.then(
    () => expect.fail('expected a rejection'),
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(BackendError);
  return e as BackendError;
}

describe('kubevirt plugin: faults', () => {
  it('API server answering 5xx: reads and actions reject Unavailable (retryable); they work again after', async () => {
    const b = await setup();
    sim.api.setOutage(503);
    for (const p of [b.listNodes(), b.getNode('node-1'), b.listVms(), b.getVm('default/vm'), b.cordonNode('node-1')]) {
      const e = await rejection(p);
      expect(e.code).toBe('Unavailable');
      expect(e.retryable).toBe(true);
    }
    sim.api.setOutage(null);
    expect((await b.getNode('node-1'))?.availability).toBe('ACTIVE');
  });

  it('API server unreachable: Unavailable, naming the call', async () => {
    const b = await setup();
    await sim.close();
    const e = await rejection(b.listVms());
    expect(e.code).toBe('Unavailable');
    expect(e.message).toMatch(/unreachable/);
  });

  it('a 403 names the missing RBAC verb and resource', async () => {
    const b = await setup();
    sim.setRules([
      { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: ['kubevirt.io'], resources: ['*'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: ['longhorn.io', ''], resources: ['replicas', 'persistentvolumeclaims'], verbs: ['list'] },
    ]);
    const cordon = await rejection(b.cordonNode('node-1'));
    expect(cordon.code).toBe('Rejected');
    expect(cordon.message).toMatch(/verb "patch" on resource "nodes"/);
    const migrate = await rejection(b.migrateVm('default/vm', { fromNodeId: 'node-1', toNodeId: 'node-2' }));
    expect(migrate.message).toMatch(
      /verb "create" on resource "virtualmachineinstancemigrations" in API group "kubevirt.io"|create virtualmachineinstancemigrations in API group "kubevirt.io"/,
    );
  });

  it('watches resume after a dropped connection and after an outage, from their resourceVersion', async () => {
    const b = await setup();
    const events: ClusterEvent[] = [];
    b.watch((e) => events.push(e));
    const before = b.watchStats;
    sim.api.dropWatches();
    sim.store.mutate(sim.def('nodes'), undefined, 'node-2', (n) => (n.metadata.labels = { ...n.metadata.labels, rack: 'r1' }));
    await eventually(() => events.some((e) => e.type === 'nodeChanged' && e.node.id === 'node-2' && e.node.labels['rack'] === 'r1'));
    sim.api.setOutage(503);
    // The outage cuts the open watches: the signal that the informers lost them.
    await eventually(() => sim.api.openWatches === 0);
    sim.api.setOutage(null);
    sim.setNodeReady('node-2', false);
    await eventually(() => events.some((e) => e.type === 'nodeChanged' && e.node.id === 'node-2' && e.node.availability === 'OFFLINE'));
    const after = b.watchStats;
    expect(after.watchesStarted).toBeGreaterThan(before.watchesStarted);
    // Resumed, not relisted: nothing was compacted.
    expect(after.relists).toBe(before.relists);
  });

  it('410 Gone on resume: relists and reports what changed meanwhile, deletions included', async () => {
    const b = await setup();
    const events: ClusterEvent[] = [];
    b.watch((e) => events.push(e));
    sim.api.setOutage(503);
    sim.deleteNode('node-2');
    sim.store.compact();
    const relists = b.watchStats.relists;
    sim.api.setOutage(null);
    await eventually(() => events.some((e) => e.type === 'nodeRemoved' && e.nodeId === 'node-2'));
    expect(b.watchStats.relists).toBeGreaterThan(relists);
  });

  it('a VM deleted during its stop: the stop resolves (nothing left to stop) and vmRemoved is emitted', async () => {
    const b = await setup();
    sim.controller.delays.stopMs = 500;
    const events: ClusterEvent[] = [];
    b.watch((e) => events.push(e));
    const stopping = b.stopVm('default/vm');
    await eventually(() => sim.vm('default', 'vm')?.spec.runStrategy === 'Halted');
    sim.store.delete(sim.def('virtualmachines', 'kubevirt.io'), 'default', 'vm');
    await stopping;
    await eventually(() => events.some((e) => e.type === 'vmRemoved' && e.vmId === 'default/vm'));
    expect(await b.getVm('default/vm')).toBeNull();
  });

  it('without Longhorn (404 on replicas.longhorn.io) volumes report no replicas', async () => {
    sim = await K8sSim.start({ longhorn: false });
    sim.addNode('node-1');
    sim.addPvc('default', 'disk');
    sim.addVm({ name: 'vm', nodeName: 'node-1', claims: ['disk'] });
    backend = await createKubevirtBackend({ kubeconfigPath: sim.kubeconfigFile() });
    // Detected when the plugin starts, before any VM read.
    expect(backend.capabilities.replicaHealth).toBe(false);
    expect((await backend.getVm('default/vm'))?.volumes).toEqual([{ name: 'disk', replicas: [] }]);
  });

  it('with Longhorn, replicaHealth is true from the start', async () => {
    const b = await setup({ longhorn: true });
    expect(b.capabilities.replicaHealth).toBe(true);
  });

  it('an outage while a stop waits for the watch: the stop rejects Unavailable (retryable) at once; repeated after it, it completes', async () => {
    const b = await setup();
    sim.controller.delays.stopMs = 400;
    const stopping = b.stopVm('default/vm').then(
      () => null,
      (e: unknown) => e,
    );
    await eventually(() => sim.vm('default', 'vm')?.spec.runStrategy === 'Halted');
    sim.api.setOutage(503);
    const e = (await stopping) as BackendError;
    expect(e).toBeInstanceOf(BackendError);
    expect(e.code).toBe('Unavailable');
    expect(e.retryable).toBe(true);
    expect(e.message).toMatch(/^stop VM default\/vm: lost the watch on the Kubernetes API server, the outcome is not known yet \(.*HTTP 503/);
    sim.api.setOutage(null);
    await b.stopVm('default/vm');
    expect(sim.vmi('default', 'vm')).toBeNull();
  });

  it('an outage during a migration: the migration keeps waiting and resolves once the watch is back (one migration object)', async () => {
    const b = await setup();
    sim.controller.delays.migrateMs = 300;
    const migrating = b.migrateVm('default/vm', { fromNodeId: 'node-1', toNodeId: 'node-2' });
    await eventually(() => sim.migrations('default').length === 1);
    let settled = false;
    void migrating.finally(() => (settled = true)).catch(() => {});
    await sim.setReachable(false);
    // The migration finishes in the cluster while the plugin cannot see it: it must keep waiting, not fail.
    await eventually(() => sim.migrations('default')[0]?.status?.phase === 'Succeeded');
    expect(settled).toBe(false);
    await sim.setReachable(true);
    await migrating;
    expect(sim.vmi('default', 'vm')!.status.nodeName).toBe('node-2');
    expect(sim.migrations('default').map((m) => m.status.phase)).toEqual(['Succeeded']);
  });

  it('optimistic concurrency: a 409 on the run-strategy write is retried on a fresh read', async () => {
    const b = await setup();
    const vms = sim.def('virtualmachines', 'kubevirt.io');
    let raced = false;
    sim.api.beforeWrite = (_verb, r, ns, name) => {
      if (raced || r !== vms || name !== 'vm') return;
      raced = true;
      // Someone else writes the VM between the plugin's read and its write.
      sim.store.mutate(vms, ns, name, (v) => (v.metadata.labels = { ...v.metadata.labels, touched: 'yes' }));
    };
    const patchesBefore = sim.calls.filter((c) => c.verb === 'patch' && c.resource === 'virtualmachines').length;
    await b.stopVm('default/vm');
    expect(raced).toBe(true);
    expect(sim.calls.filter((c) => c.verb === 'patch' && c.resource === 'virtualmachines').length - patchesBefore).toBe(2);
    const vm = sim.vm('default', 'vm')!;
    expect(vm.spec.runStrategy).toBe('Halted');
    expect(vm.metadata.labels?.['touched']).toBe('yes');
  });
});
