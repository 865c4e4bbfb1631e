import { SHARD_POLICIES, type ClusterNode, type ClusterShard } from '../../cluster/types.ts';
import { NotFoundError, UnavailableError } from '../../domain/errors.ts';
import { typedBackendCall } from '../map-backend-error.ts';
import { builder } from '../builder.ts';
import { ClusterNodeType } from './cluster-node.ts';
import { enumValuesOf, pageFrom, pageOf } from './common.ts';
import { compareShards } from '../../domain/compare.ts';

export const ShardPolicyEnum = builder.enumType('ShardSchedulingPolicy', { values: enumValuesOf(SHARD_POLICIES) });

export const ShardType = builder.objectRef<ClusterShard>('TenantShard');

ShardType.implement({
  description: 'A tenant shard: one attached location and warm secondaries on other nodes.',
  fields: (t) => ({
    id: t.exposeID('id', { description: "Neon's tenant shard id." }),
    tenantId: t.exposeString('tenantId'),
    shardNumber: t.exposeInt('shardNumber'),
    shardCount: t.exposeInt('shardCount'),
    attachedNode: t.field({
      type: ClusterNodeType,
      nullable: true,
      resolve: (s, _, ctx) => ctx.loaders.node.load(s.attachedNodeId),
    }),
    attachedNodeId: t.exposeID('attachedNodeId'),
    secondaryNodes: t.field({
      type: [ClusterNodeType],
      resolve: async (s, _, ctx) => (await ctx.loaders.node.loadMany(s.secondaryNodeIds)).filter((n): n is ClusterNode => n != null && !(n instanceof Error)),
    }),
    secondaryNodeIds: t.exposeIDList('secondaryNodeIds'),
    highlyAvailable: t.boolean({ description: 'Has at least one secondary.', resolve: (s) => s.secondaryNodeIds.length > 0 }),
    preferredZone: t.exposeString('preferredZone', { nullable: true }),
    policy: t.field({ type: ShardPolicyEnum, resolve: (s) => s.policy }),
  }),
});

builder.queryFields((t) => ({
  shards: t.connection(
    {
      type: ShardType,
      description: 'Tenant shards sorted by tenant id and shard number.',
      args: {
        nodeId: t.arg.id({ required: false, description: 'Only shards attached to this node.' }),
        secondaryNodeId: t.arg.id({ required: false, description: 'Only shards with a secondary on this node.' }),
        tenantId: t.arg.string({ required: false }),
      },
      resolve: async (_, args, ctx) => {
        const filter = {
          ...(args.nodeId != null && { attachedNodeId: String(args.nodeId) }),
          ...(args.secondaryNodeId != null && { secondaryNodeId: String(args.secondaryNodeId) }),
          ...(args.tenantId != null && { tenantId: args.tenantId }),
        };
        const { backend } = ctx;
        if (backend.pageShards) return pageFrom(args, (page) => backend.pageShards!(filter, page));
        const rows = await backend.listShards(filter);
        rows.sort(compareShards);
        return pageOf(args, rows);
      },
    },
    { name: 'TenantShardConnection' },
    { name: 'TenantShardEdge' },
  ),
  shard: t.field({
    type: ShardType,
    args: { id: t.arg.id({ required: true }) },
    errors: { types: [NotFoundError, UnavailableError] },
    resolve: async (_, { id }, ctx) => {
      const shard = await typedBackendCall(() => ctx.loaders.shard.load(String(id)));
      if (!shard) throw new NotFoundError('shard', String(id));
      return shard;
    },
  }),
}));
