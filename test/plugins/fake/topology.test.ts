import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../support/virtual-clock.ts';
import { matchesPlacement } from '../../../src/domain/placement.ts';
import { createSimulatedCluster, demoTopology, generateTopology, topologySchema } from '../../../plugins/fake/index.ts';

/** Sizes of the groups `key` makes (Node 20 has no Map.groupBy). */
function groupSizes<T>(items: T[], key: (item: T) => string): number[] {
  const counts = new Map<string, number>();
  for (const item of items) counts.set(key(item), (counts.get(key(item)) ?? 0) + 1);
  return [...counts.values()];
}

const demo = () => createSimulatedCluster({ topology: 'demo', clock: new VirtualClock() });

describe('demo topology', () => {
  it('has 4 nodes in 2 zones, 3 of them control-plane, all storage, with the well-known labels', async () => {
    const nodes = await demo().listNodes();
    expect(nodes).toHaveLength(4);
    expect(new Set(nodes.map((n) => n.zone))).toEqual(new Set(['zone-a', 'zone-b']));
    expect(nodes.filter((n) => n.roles.includes('control-plane'))).toHaveLength(3);
    expect(nodes.every((n) => n.roles.includes('storage') && n.availability === 'ACTIVE' && !n.cordoned)).toBe(true);
    for (const n of nodes) {
      expect(n.labels['kubernetes.io/hostname']).toBe(n.name);
      expect(n.labels['topology.kubernetes.io/zone']).toBe(n.zone);
    }
  });

  it('has VMs in several namespaces covering every strategy label, with the blockers the spec cares about', async () => {
    const vms = await demo().listVms();
    expect(vms.length).toBeGreaterThanOrEqual(20);
    expect(new Set(vms.map((v) => v.namespace)).size).toBeGreaterThanOrEqual(2);
    expect(new Set(vms.map((v) => v.maintenanceStrategyLabel))).toEqual(
      new Set(['Migrate', 'ShutdownAndRestartAfterEnable', 'ShutdownAndRestartAfterDisable', 'Shutdown', null]),
    );
    expect(vms.find((v) => !v.liveMigratable)?.liveMigratableReason).toBe('HostDeviceNotLiveMigratable');
    const lastReplicaHere = vms.filter((v) =>
      v.volumes.some((vol) => {
        const healthy = vol.replicas.filter((r) => r.healthy);
        return healthy.length === 1 && healthy[0]!.nodeId === v.nodeId;
      }),
    );
    expect(lastReplicaHere.length).toBeGreaterThanOrEqual(1);
    expect(vms.some((v) => Object.keys(v.nodeSelector).length > 0)).toBe(true);
    expect(vms.some((v) => v.requiredNodeAffinity.length > 0)).toBe(true);
  });

  it('places every running VM on a node that satisfies its own constraints', async () => {
    const cluster = demo();
    const nodes = new Map((await cluster.listNodes()).map((n) => [n.id, n]));
    for (const vm of await cluster.listVms()) {
      if (vm.nodeId === null) expect(vm.status).toBe('Stopped');
      else expect(matchesPlacement(nodes.get(vm.nodeId)!.labels, vm), vm.id).toBe(true);
    }
  });

  it('has 5 tenants × 8 shards, each with exactly one secondary on another node and a preferred zone', async () => {
    const shards = await demo().listShards();
    expect(shards).toHaveLength(40);
    expect(groupSizes(shards, (s) => s.tenantId)).toEqual([8, 8, 8, 8, 8]);
    for (const s of shards) {
      expect(s.secondaryNodeIds).toHaveLength(1);
      expect(s.secondaryNodeIds[0]).not.toBe(s.attachedNodeId);
      expect(s.preferredZone).toMatch(/^zone-/);
      expect(s.id).toMatch(/^[0-9a-f]{32}-[0-9a-f]{2}08$/);
    }
  });

  it('uses latencies in the hundreds of milliseconds so progress is visible', () => {
    const latencies = demo().simulation.getLatencies();
    expect(latencies).toEqual({ migrate: 800, stop: 400, start: 500, cutOver: 300, cordon: 50 });
  });

  it('is a fresh object every time (a cluster cannot alter the next one)', () => {
    const a = demoTopology();
    a.nodes!.pop();
    expect(demoTopology().nodes).toHaveLength(4);
  });
});

describe('generateTopology', () => {
  it('builds 500 VMs and 10 000 shards that pass validation', async () => {
    const spec = generateTopology({ nodes: 50, zones: 3, vmsPerNode: 10, tenants: 1250, shardsPerTenant: 8 });
    expect(topologySchema.safeParse(spec).success).toBe(true);
    const cluster = createSimulatedCluster({ topology: spec, clock: new VirtualClock() });
    expect(await cluster.listVms()).toHaveLength(500);
    const shards = await cluster.listShards();
    expect(shards).toHaveLength(10_000);
    expect(new Set(groupSizes(shards, (s) => s.attachedNodeId))).toEqual(new Set([200]));
    expect((await cluster.listNodes()).filter((n) => n.roles.includes('control-plane'))).toHaveLength(3);
  });

  it('is deterministic for a seed and varies with it', () => {
    const options = { nodes: 3, tenants: 2, shardsPerTenant: 2, seed: 5 };
    expect(generateTopology(options)).toEqual(generateTopology(options));
    expect(generateTopology({ ...options, seed: 6 }).shards![0]!.tenantId).not.toBe(generateTopology(options).shards![0]!.tenantId);
  });

  it('treats one shard per tenant as unsharded (shard id = tenant id), as Neon does', async () => {
    const cluster = createSimulatedCluster({ topology: generateTopology({ nodes: 2, tenants: 1 }), clock: new VirtualClock() });
    const [shard] = await cluster.listShards();
    expect(shard!.id).toBe(shard!.tenantId);
  });

  it('gives several secondaries on distinct other nodes when asked', () => {
    const { shards } = generateTopology({ nodes: 4, tenants: 1, shardsPerTenant: 4, secondariesPerShard: 5 });
    for (const s of shards!) {
      const ids = s.secondaries!.map((x) => x.nodeId);
      expect(ids).toHaveLength(3);
      expect(new Set([...ids, s.attachedNodeId]).size).toBe(4);
    }
  });
});
