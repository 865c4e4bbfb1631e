/**
 * Assertions shared by the high-availability acceptance tests (real processes, test/leadership).
 * Apart from ha-processes.ts, which bench/takeover.ts imports outside vitest.
 */
import { expect } from 'vitest';
import type { SimulatorProcess } from './ha-processes.ts';

/** Every VM of the cluster has one VMI, running on a node other than `node`. */
export async function everyVmOnce(sim: SimulatorProcess, node: string, vmCount: number) {
  const vmis = (await sim.get('/apis/kubevirt.io/v1/namespaces/default/virtualmachineinstances')) as {
    items: { metadata: { name: string }; status: { nodeName: string; phase: string } }[];
  };
  const names = vmis.items.map((v) => v.metadata.name);
  expect(new Set(names).size).toBe(names.length);
  expect(names).toHaveLength(vmCount);
  expect(vmis.items.filter((v) => v.status.nodeName === node)).toEqual([]);
  expect(vmis.items.every((v) => v.status.phase === 'Running')).toBe(true);
}
