import { afterEach, describe, expect, it } from 'vitest';
import type { TestApp } from '../support/graphql-app.ts';
import { cluster, enable, maintenanceApp, untilPhase } from './harness.ts';

/**
 * KubeVirt's migration limits, as Lockkeeper's defaults (k8s parity, issue 26 point 7):
 * enforced, not only declared — at most 5 live migrations in the whole cluster and 2 leaving
 * any one node, with several nodes draining at once.
 */
let t: TestApp;
afterEach(async () => {
  await t?.stop();
});

const SOURCES = ['1', '2', '3', '4'];
const TARGETS = ['5', '6', '7', '8'];

describe('migration limits (KubeVirt: parallelMigrationsPerCluster 5, parallelOutboundMigrationsPerNode 2)', () => {
  it('four nodes draining at once with the default limits: never more than 5 migrations in flight, never more than 2 leaving one node, and both peaks reached', async () => {
    const vms = SOURCES.flatMap((node) => Array.from({ length: 4 }, (_, i) => ({ namespace: 'default', name: `vm-${node}-${i}`, nodeId: node })));
    t = await maintenanceApp(
      cluster(vms, { nodes: [...SOURCES, ...TARGETS].map((id) => ({ id, name: `node-${id}`, roles: ['worker'] })) }),
      // Only how many maintenances may run at once is changed; the migration limits are the defaults.
      { settings: { maxConcurrentOperations: 4 } },
    );
    const from = new Map<string, string>();
    let clusterPeak = 0;
    const nodePeak = new Map<string, number>();
    t.cluster.watch((e) => {
      if (e.type !== 'vmChanged') return;
      if (e.vm.status === 'Migrating') from.set(e.vm.id, from.get(e.vm.id) ?? e.vm.nodeId!);
      else from.delete(e.vm.id);
      clusterPeak = Math.max(clusterPeak, from.size);
      for (const node of SOURCES) nodePeak.set(node, Math.max(nodePeak.get(node) ?? 0, [...from.values()].filter((n) => n === node).length));
    });
    for (const node of SOURCES) expect((await enable(t, node)).__typename).toBe('Operation');
    for (const node of SOURCES) await untilPhase(t, node, 'COMPLETED');
    expect(clusterPeak).toBe(5);
    expect(Math.max(...nodePeak.values())).toBe(2);
    for (const v of vms) expect(SOURCES).not.toContain((await t.cluster.getVm(`default/${v.name}`))!.nodeId);
  });

  it('the limits are settings: 3 per cluster and 1 per node hold when configured', async () => {
    const vms = SOURCES.flatMap((node) => Array.from({ length: 3 }, (_, i) => ({ namespace: 'default', name: `vm-${node}-${i}`, nodeId: node })));
    t = await maintenanceApp(cluster(vms, { nodes: [...SOURCES, ...TARGETS].map((id) => ({ id, name: `node-${id}`, roles: ['worker'] })) }), {
      settings: { maxConcurrentOperations: 4, maxParallelMigrations: 3, maxOutboundMigrationsPerNode: 1 },
    });
    const from = new Map<string, string>();
    let clusterPeak = 0;
    let nodePeak = 0;
    t.cluster.watch((e) => {
      if (e.type !== 'vmChanged') return;
      if (e.vm.status === 'Migrating') from.set(e.vm.id, from.get(e.vm.id) ?? e.vm.nodeId!);
      else from.delete(e.vm.id);
      clusterPeak = Math.max(clusterPeak, from.size);
      for (const node of SOURCES) nodePeak = Math.max(nodePeak, [...from.values()].filter((n) => n === node).length);
    });
    for (const node of SOURCES) await enable(t, node);
    for (const node of SOURCES) await untilPhase(t, node, 'COMPLETED');
    expect(clusterPeak).toBe(3);
    expect(nodePeak).toBe(1);
  });
});
