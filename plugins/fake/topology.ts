import { z } from 'zod';
import { NODE_SELECTOR_OPERATORS, RUN_STRATEGIES, SHARD_POLICIES, VM_STATUSES } from '../../src/cluster/types.ts';

/**
 * The shape of a simulated cluster's initial state. `TopologySpec` (the schema's input)
 * is what people write in a config file or a test: most fields have defaults.
 * `Topology` (the schema's output) is the normalised form the cluster is built from.
 */

const labelsSchema = z.record(z.string(), z.string());

const nodeSpecSchema = z
  .object({
    id: z.string().min(1),
    /** Defaults to `node-<id>`; also the `kubernetes.io/hostname` label. */
    name: z.string().min(1).optional(),
    zone: z.string().min(1).nullable().default(null),
    roles: z.array(z.string()).default(['worker', 'storage']),
    availability: z.enum(['ACTIVE', 'WARMING_UP', 'OFFLINE']).default('ACTIVE'),
    cordoned: z.boolean().default(false),
    labels: labelsSchema.default({}),
  })
  .strict();

const nodeSelectorTermSchema = z
  .object({
    matchExpressions: z.array(
      z
        .object({
          key: z.string(),
          operator: z.enum(NODE_SELECTOR_OPERATORS),
          values: z.array(z.string()).default([]),
        })
        .strict(),
    ),
  })
  .strict();

const vmSpecSchema = z
  .object({
    namespace: z.string().min(1).default('default'),
    name: z.string().min(1),
    /** Null for a VM that has no running instance. */
    nodeId: z.string().nullable(),
    runStrategy: z.enum(RUN_STRATEGIES).default('Always'),
    /** Defaults to Running when placed on a node, Stopped otherwise. */
    status: z.enum(VM_STATUSES).optional(),
    maintenanceStrategyLabel: z.string().nullable().default(null),
    labels: labelsSchema.default({}),
    volumes: z
      .array(
        z
          .object({
            name: z.string(),
            replicas: z.array(z.object({ nodeId: z.string(), healthy: z.boolean().default(true) }).strict()),
          })
          .strict(),
      )
      .default([]),
    liveMigratable: z.boolean().default(true),
    liveMigratableReason: z.string().nullable().default(null),
    nodeSelector: labelsSchema.default({}),
    requiredNodeAffinity: z.array(nodeSelectorTermSchema).default([]),
    tracking: z
      .object({
        nodeName: z.string(),
        strategy: z.string(),
        savedRunStrategy: z.enum(RUN_STRATEGIES).nullable(),
      })
      .strict()
      .nullable()
      .default(null),
  })
  .strict();

const secondarySpecSchema = z
  .object({
    nodeId: z.string(),
    /** Bytes this secondary still has to download (0 = warm). */
    lagBytes: z.number().int().nonnegative().default(0),
    /** Overrides the cluster-wide download rate for this secondary (0 = never catches up). */
    downloadBytesPerSecond: z.number().nonnegative().optional(),
    /** False: no heatmap yet, so the lag is unknown (storage:D4). */
    heatmapKnown: z.boolean().default(true),
  })
  .strict();

const shardSpecSchema = z
  .object({
    tenantId: z.string().min(1),
    shardNumber: z.number().int().nonnegative().default(0),
    /** 0 = unsharded (Neon's convention): the shard id is then the tenant id. */
    shardCount: z.number().int().nonnegative().default(0),
    attachedNodeId: z.string(),
    secondaries: z.array(secondarySpecSchema).default([]),
    preferredZone: z.string().nullable().default(null),
    policy: z.enum(SHARD_POLICIES).default('ACTIVE'),
    /** Size of the shard's layers: what a secondary holds when it is fully warm. */
    sizeBytes: z
      .number()
      .int()
      .nonnegative()
      .default(1024 ** 3),
  })
  .strict();

export const topologySchema = z
  .object({
    nodes: z.array(nodeSpecSchema).default([]),
    vms: z.array(vmSpecSchema).default([]),
    shards: z.array(shardSpecSchema).default([]),
  })
  .strict()
  .superRefine(checkReferences);

export type TopologySpec = z.input<typeof topologySchema>;
export type Topology = z.output<typeof topologySchema>;
export type NodeSpec = z.input<typeof nodeSpecSchema>;
export type VmSpec = z.input<typeof vmSpecSchema>;
export type ShardSpec = z.input<typeof shardSpecSchema>;
export type SecondarySpec = z.input<typeof secondarySpecSchema>;

/** Neon's tenant shard id: `<tenant>-<number:02x><count:02x>`, the tenant id alone when unsharded. */
export function shardIdOf(shard: { tenantId: string; shardNumber: number; shardCount: number }): string {
  if (shard.shardCount === 0) return shard.tenantId;
  const hex = (n: number) => n.toString(16).padStart(2, '0');
  return `${shard.tenantId}-${hex(shard.shardNumber)}${hex(shard.shardCount)}`;
}

/** Config mistakes are reported with the path of the offending entry, not as a crash later. */
function checkReferences(topology: Topology, ctx: z.RefinementCtx): void {
  const nodeIds = new Set<string>();
  topology.nodes.forEach((node, i) => {
    if (nodeIds.has(node.id)) ctx.addIssue({ code: 'custom', path: ['nodes', i, 'id'], message: `duplicate node id ${node.id}` });
    nodeIds.add(node.id);
  });
  const unknownNode = (id: string | null, path: (string | number)[]) => {
    if (id !== null && !nodeIds.has(id)) ctx.addIssue({ code: 'custom', path, message: `unknown node ${id}` });
  };
  const vmIds = new Set<string>();
  topology.vms.forEach((vm, i) => {
    const id = `${vm.namespace}/${vm.name}`;
    if (vmIds.has(id)) ctx.addIssue({ code: 'custom', path: ['vms', i, 'name'], message: `duplicate VM ${id}` });
    vmIds.add(id);
    unknownNode(vm.nodeId, ['vms', i, 'nodeId']);
  });
  const shardIds = new Set<string>();
  topology.shards.forEach((shard, i) => {
    const id = shardIdOf(shard);
    if (shardIds.has(id)) ctx.addIssue({ code: 'custom', path: ['shards', i], message: `duplicate shard ${id}` });
    shardIds.add(id);
    unknownNode(shard.attachedNodeId, ['shards', i, 'attachedNodeId']);
    shard.secondaries.forEach((s, j) => {
      unknownNode(s.nodeId, ['shards', i, 'secondaries', j, 'nodeId']);
      if (s.nodeId === shard.attachedNodeId) {
        ctx.addIssue({ code: 'custom', path: ['shards', i, 'secondaries', j], message: 'a secondary must be on another node than the attached one' });
      }
    });
  });
}

export const emptyTopology = (): TopologySpec => ({ nodes: [], vms: [], shards: [] });
