/**
 * ha:L8 (with ha:L2, ha:L3): the kubevirt plugin's own requests that change the cluster are
 * refused at the instant they would be sent while the gateway says this replica may not act,
 * however long before the action began; reads go on.
 */
import { afterEach, expect, it } from 'vitest';
import { createKubevirtBackend, type KubevirtBackend } from '../../../plugins/kubevirt/index.ts';
import { K8sSim } from '../../../simulators/kubernetes/index.ts';

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
    sender: () => 'r1@7',
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
  backend = await createKubevirtBackend({ kubeconfigPath: sim.kubeconfigFile(), mayAct: () => true, sender: () => 'r1@7' });
  await backend.cordonNode('node-1');
  const writes = sim.calls.filter((c) => c.verb === 'patch' && c.resource === 'nodes');
  expect(writes.length).toBeGreaterThan(0);
  expect(writes.every((c) => c.sender === 'r1@7')).toBe(true);
  expect(sim.calls.filter((c) => c.verb === 'list').every((c) => c.sender === undefined)).toBe(true);
});
