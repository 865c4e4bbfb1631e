/**
 * ha:L8 (with ha:L2, ha:L3): the kubevirt plugin's own requests that change the cluster are
 * refused at the instant they would be sent while the gateway says this replica may not act,
 * however long before the action began; reads go on.
 */
import { afterEach, expect, it } from 'vitest';
import { EpochAuthority } from '../../../src/cluster/authority.ts';
import { createKubevirtBackend, type KubevirtBackend } from '../../../plugins/kubevirt/index.ts';
import { K8sSim } from '../../../simulators/kubernetes/index.ts';
import { eventually } from '../../support/kubevirt-app.ts';
import { flushMicrotasks, VirtualClock } from '../../support/virtual-clock.ts';

/** Leading at epoch 7 with a lease that never runs out. */
const r1at7 = new EpochAuthority({ holder: 'r1', epoch: 7, monotonic: () => 0, deadline: () => Infinity, expired: () => {} });

let sim: K8sSim | undefined;
let backend: KubevirtBackend | undefined;
afterEach(async () => {
  await backend?.close();
  await sim?.close();
  backend = sim = undefined;
});

it('ha:L8: with mayAct false no write request reaches the API server (typed Unavailable); reads are served; with true the write goes through', async () => {
  sim = await K8sSim.start();
  sim.addNode('node-1');
  sim.addNode('node-2');
  let leads = true;
  backend = await createKubevirtBackend({ kubeconfigPath: sim.kubeconfigFile(), mayAct: () => leads });
  leads = false;
  const writes = () => sim!.calls.filter((c) => c.verb !== 'get' && c.verb !== 'list' && c.verb !== 'watch');
  const before = writes().length;
  await expect(backend.cordonNode('node-1')).rejects.toMatchObject({ code: 'Unavailable', message: expect.stringMatching(/not the leader/) });
  expect(writes()).toHaveLength(before);
  expect((await backend.listNodes()).map((n) => n.id).sort()).toEqual(['node-1', 'node-2']);
  leads = true;
  await backend.cordonNode('node-1');
  expect(writes().length).toBeGreaterThan(before);
  expect(sim.node('node-1')!.spec!.unschedulable).toBe(true);
});

it('ha:L3: a write checked while this replica led but sent after it stopped leading (a freeze between the two) never reaches the API server', async () => {
  sim = await K8sSim.start();
  sim.addNode('node-1');
  // The lease is good when the request is built and gone by the time its connection is up:
  // what a replica frozen (SIGSTOP) between the two sees when it wakes.
  let checks = 0;
  let leads = true;
  backend = await createKubevirtBackend({
    kubeconfigPath: sim.kubeconfigFile(),
    mayAct: () => {
      if (!leads) return false;
      if (++checks === 1) return true;
      leads = false;
      return false;
    },
    authority: () => r1at7,
  });
  checks = 0;
  const writes = () => sim!.calls.filter((c) => c.verb !== 'get' && c.verb !== 'list' && c.verb !== 'watch');
  const before = writes().length;
  await expect(backend.cordonNode('node-1')).rejects.toMatchObject({ code: 'Unavailable', message: expect.stringMatching(/not the leader/) });
  expect(checks).toBe(2);
  expect(writes()).toHaveLength(before);
  expect(sim.node('node-1')!.spec!.unschedulable).not.toBe(true);
});

it('ha:L3: each write names the replica and epoch that sent it, as the API server records', async () => {
  sim = await K8sSim.start();
  sim.addNode('node-1');
  backend = await createKubevirtBackend({ kubeconfigPath: sim.kubeconfigFile(), mayAct: () => true, authority: () => r1at7 });
  await backend.cordonNode('node-1');
  const writes = sim.calls.filter((c) => c.verb === 'patch' && c.resource === 'nodes');
  expect(writes.length).toBeGreaterThan(0);
  expect(writes.every((c) => c.sender === 'r1@7/background')).toBe(true);
});

it('ha:L8: Kubernetes node-down handling (k8s:U3) runs only on the leader; a replica that becomes leader looks at every node again and handles one that went down before', async () => {
  const clock = new VirtualClock();
  sim = await K8sSim.start({ clock });
  for (const n of ['n1', 'n2']) sim.addNode(n, { roles: ['worker'] });
  let leads = false;
  const listeners = new Set<(leads: boolean) => void>();
  const warnings: string[] = [];
  backend = await createKubevirtBackend({
    kubeconfigPath: sim.kubeconfigFile(),
    clock,
    log: { info() {}, warn: (_o: object, msg?: string) => void warnings.push(msg ?? '') },
    nodeDown: { enable: true },
    mayAct: () => leads,
    onLeaderChange: (l) => (listeners.add(l), () => listeners.delete(l)),
  });
  const nodeDownCalls = () =>
    sim!.calls.filter((c) => ['upgrades', 'upgradeplans'].includes(c.resource) || (c.resource.startsWith('nodes') && c.verb === 'patch'));
  sim.setNodeReady('n1', false);
  // The stand-by has seen the node go down (its cache maps it OFFLINE) …
  await eventually(async () => (await backend!.getNode('n1'))?.availability === 'OFFLINE');
  await clock.advance(1_000_000);
  await flushMicrotasks();
  // … and did nothing about it: no upgrade check, no taint, no condition.
  expect(nodeDownCalls()).toEqual([]);
  expect(sim.node('n1')!.spec.taints ?? []).toEqual([]);

  // It now leads: nothing about n1 changes any more, and n1 is handled all the same.
  const switched = sim.calls.length;
  leads = true;
  for (const l of listeners) l(true);
  await eventually(() => ((sim!.node('n1')!.spec.taints ?? []) as { key: string }[]).some((t) => t.key === 'kubevirt.io/drain'));
  expect(sim.node('n2')!.spec.taints ?? []).toEqual([]);
  // Every node-down call came once it led (a stand-by that tried would have listed upgrades and had its writes refused).
  expect(sim.calls.slice(0, switched).filter((c) => nodeDownCalls().includes(c))).toEqual([]);
  expect(warnings.filter((w) => /node-down/.test(w))).toEqual([]);
});
