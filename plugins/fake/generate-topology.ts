import { createPrng } from '../../src/domain/prng.ts';
import type { NodeSpec, ShardSpec, TopologySpec, VmSpec } from './topology.ts';

export interface GenerateTopologyOptions {
  nodes: number;
  /** Nodes are spread round-robin over `zone-a`, `zone-b`, ... (default 2, at most `nodes`). */
  zones?: number;
  /** The first N nodes carry `control-plane` and `etcd` (default min(3, nodes)). */
  controlPlaneNodes?: number;
  vmsPerNode?: number;
  namespaces?: string[];
  /** Maintenance-strategy labels given to VMs in turn (default: none, i.e. Migrate). */
  strategyLabels?: (string | null)[];
  tenants?: number;
  shardsPerTenant?: number;
  /** Secondaries per shard on the following nodes (default 1, at most nodes − 1). */
  secondariesPerShard?: number;
  /** Seeds tenant ids and shard sizes. */
  seed?: number;
}

const zoneName = (i: number) => (i < 26 ? `zone-${String.fromCharCode(97 + i)}` : `zone-${i}`);

/** A Neon-style 32-hex-digit tenant id. */
function tenantIdFrom(random: () => number): string {
  let id = '';
  for (let i = 0; i < 4; i++)
    id += Math.floor(random() * 2 ** 32)
      .toString(16)
      .padStart(8, '0');
  return id;
}

function generateNodes(count: number, zones: number, controlPlaneNodes: number): NodeSpec[] {
  return Array.from({ length: count }, (_, i) => ({
    id: String(i + 1),
    zone: zoneName(i % Math.max(1, Math.min(zones, count))),
    roles: i < controlPlaneNodes ? ['control-plane', 'etcd', 'worker', 'storage'] : ['worker', 'storage'],
  }));
}

/**
 * Tenants' shards spread round-robin: shard k is attached to node k mod N and has its
 * secondaries on the nodes after it, with the attached node's zone preferred. Every node
 * thus attaches the same number of shards (± 1), as after a balanced fill.
 */
export function generateShards(
  nodes: readonly NodeSpec[],
  options: { tenants: number; shardsPerTenant: number; secondariesPerShard?: number; seed?: number },
): ShardSpec[] {
  const random = createPrng(options.seed ?? 1);
  const secondaries = Math.min(options.secondariesPerShard ?? 1, nodes.length - 1);
  const shards: ShardSpec[] = [];
  let k = 0;
  for (let t = 0; t < options.tenants; t++) {
    const tenantId = tenantIdFrom(random);
    for (let s = 0; s < options.shardsPerTenant; s++, k++) {
      const attached = nodes[k % nodes.length]!;
      shards.push({
        tenantId,
        shardNumber: s,
        // One shard per tenant is Neon's unsharded tenant: count 0, id = tenant id.
        shardCount: options.shardsPerTenant === 1 ? 0 : options.shardsPerTenant,
        attachedNodeId: attached.id,
        secondaries: Array.from({ length: secondaries }, (_, j) => ({ nodeId: nodes[(k + j + 1) % nodes.length]!.id })),
        preferredZone: attached.zone ?? null,
        sizeBytes: Math.floor((0.25 + random() * 1.75) * 1024 ** 3),
      });
    }
  }
  return shards;
}

function generateVms(nodes: readonly NodeSpec[], perNode: number, namespaces: string[], labels: (string | null)[]): VmSpec[] {
  const vms: VmSpec[] = [];
  nodes.forEach((node, n) => {
    for (let j = 0; j < perNode; j++) {
      const i = vms.length;
      const replicaNodes = [node.id, nodes[(n + 1) % nodes.length]!.id];
      vms.push({
        namespace: namespaces[i % namespaces.length]!,
        name: `vm-${node.id}-${j}`,
        nodeId: node.id,
        maintenanceStrategyLabel: labels[i % labels.length] ?? null,
        volumes: [{ name: 'rootdisk', replicas: [...new Set(replicaNodes)].map((nodeId) => ({ nodeId })) }],
      });
    }
  });
  return vms;
}

/** A deterministic topology of any size, for tests and benchmarks (e.g. 500 VMs, 10 000 shards). */
export function generateTopology(options: GenerateTopologyOptions): TopologySpec {
  const nodes = generateNodes(options.nodes, options.zones ?? 2, options.controlPlaneNodes ?? Math.min(3, options.nodes));
  return {
    nodes,
    vms: generateVms(nodes, options.vmsPerNode ?? 0, options.namespaces ?? ['default'], options.strategyLabels ?? [null]),
    shards:
      nodes.length === 0
        ? []
        : generateShards(nodes, {
            tenants: options.tenants ?? 0,
            shardsPerTenant: options.shardsPerTenant ?? 1,
            secondariesPerShard: options.secondariesPerShard,
            seed: options.seed,
          }),
  };
}
