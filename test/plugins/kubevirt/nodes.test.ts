import { afterEach, describe, expect, it } from 'vitest';
import type { ClusterEvent } from '../../../src/cluster/types.ts';
import { createKubevirtBackend, type KubevirtBackend } from '../../../plugins/kubevirt/index.ts';
import { K8sSim } from '../../../simulators/kubernetes/index.ts';
import { caughtUp, eventually, kubevirtApp, type KubevirtTestApp } from '../../support/kubevirt-app.ts';
import { untilSubscribed } from '../../support/subscribers.ts';

/**
 * Node Ready transitions → availability. Kubernetes has no re-attach: a node that is Ready
 * again is ACTIVE at once (one `nodeChanged`), never WARMING_UP, never `nodeReattached`.
 */
let sim: K8sSim | null = null;
let backend: KubevirtBackend | null = null;
let t: KubevirtTestApp | null = null;
afterEach(async () => {
  await backend?.close();
  await sim?.close();
  await t?.stop();
  backend = null;
  sim = null;
  t = null;
});

describe('kubevirt plugin: node Ready transitions', () => {
  it('Ready → NotReady (Unknown) → NotReady (False) → Ready: nodeChanged OFFLINE, then ACTIVE; heartbeats and NotReady reasons emit nothing; no re-attach', async () => {
    sim = await K8sSim.start({ bookmarkIntervalMs: 50 });
    sim.addNode('node-1');
    sim.addNode('node-2');
    backend = await createKubevirtBackend({ kubeconfigPath: sim.kubeconfigFile() });
    const events: ClusterEvent[] = [];
    backend.watch((e) => events.push(e));
    const availabilities = () => events.flatMap((e) => (e.type === 'nodeChanged' && e.node.id === 'node-1' ? [e.node.availability] : []));

    sim.heartbeat('node-1');
    await caughtUp(sim, backend);
    expect(events).toEqual([]);

    sim.setNodeReady('node-1', false); // kubelet stopped posting: Ready=Unknown
    await eventually(() => availabilities().length === 1);
    expect(availabilities()).toEqual(['OFFLINE']);
    expect((await backend.getNode('node-1'))?.availability).toBe('OFFLINE');

    sim.setNodeReady('node-1', false, 'False'); // kubelet back but not ready: still not Ready
    sim.heartbeat('node-1');
    await caughtUp(sim, backend);
    expect(availabilities()).toEqual(['OFFLINE']);

    sim.setNodeReady('node-1', true);
    await eventually(() => availabilities().length === 2);
    await caughtUp(sim, backend);
    expect(availabilities()).toEqual(['OFFLINE', 'ACTIVE']);
    const back = events.at(-1)!;
    expect(back).toMatchObject({ type: 'nodeChanged', node: { id: 'node-1', availability: 'ACTIVE', cordoned: false } });
    expect((await backend.getNode('node-1'))?.availability).toBe('ACTIVE');
    // Kubernetes has no re-attach and nothing to warm up.
    expect(events.filter((e) => e.type === 'nodeReattached')).toEqual([]);
    expect(events.filter((e) => e.type !== 'nodeChanged' || e.node.id !== 'node-1')).toEqual([]);
  });

  it('the Ready flap reaches a GraphQL nodeChanged subscriber: OFFLINE, then ACTIVE', async () => {
    t = await kubevirtApp((s) => {
      s.addNode('node-1');
      s.addNode('node-2');
    });
    const res = await t.app.yoga.fetch('http://lockkeeper.test/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ query: 'subscription { nodeChanged(nodeId: "node-1") { id availability } }' }),
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const seen: string[] = [];
    let buffer = '';
    const pump = (async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer += new TextDecoder().decode(value);
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = frame.split('\n').find((l) => l.startsWith('data:'));
          if (data) seen.push(JSON.parse(data.slice(5)).data?.nodeChanged?.availability);
        }
      }
    })();
    await untilSubscribed(t.app.bus, 'nodeChanged');
    t.sim.setNodeReady('node-1', false);
    await eventually(() => seen.includes('OFFLINE'));
    t.sim.setNodeReady('node-1', true);
    await eventually(() => seen.includes('ACTIVE'));
    expect(seen).toEqual(['OFFLINE', 'ACTIVE']);
    await reader.cancel();
    await pump.catch(() => {});
    const node = await t.gql('{ node(id: "node-1") { ... on ClusterNode { availability } } }');
    expect(node.data.node.availability).toBe('ACTIVE');
  });
});

describe('kubevirt plugin: listing order', () => {
  it('lists nodes and VMs in the order every backend uses (node-9 before node-10)', async () => {
    sim = await K8sSim.start({ bookmarkIntervalMs: 50 });
    for (const name of ['node-10', 'node-9', 'node-1']) sim.addNode(name);
    for (const name of ['vm-10', 'vm-9']) sim.addVm({ name, nodeName: 'node-1' });
    backend = await createKubevirtBackend({ kubeconfigPath: sim.kubeconfigFile() });
    expect((await backend.listNodes()).map((n) => n.id)).toEqual(['node-1', 'node-9', 'node-10']);
    expect((await backend.listVms()).map((v) => v.id)).toEqual(['default/vm-9', 'default/vm-10']);
  });
});
