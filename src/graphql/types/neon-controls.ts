/**
 * Neon parity in GraphQL: a node's commanded availability (neon:E6, neon:H8), graceful
 * deletes (neon:L4–L5), per-shard controls (neon:W1–W9), and what the controller knows of
 * a shard (neon:C14). Each mutation is audited and answers typed errors.
 */
import {
  ConflictError,
  InvalidInputError,
  NotFoundError,
  OperationLimitReachedError,
  PreconditionFailedError,
  ReconcileFailedError,
  TimeoutError,
  UnavailableError,
} from '../../domain/errors.ts';
import type { RequestMeta } from '../../domain/operations.ts';
import { audited } from '../../operations/core/audited.ts';
import type { MigrateResult } from '../../operations/shard-controls/service.ts';
import { tenantConfigPatchSchema, tenantConfigSchema } from '../../domain/storage/tenant-config.ts';
import { builder } from '../builder.ts';
import type { GraphQLContext } from '../context.ts';
import { ClusterNodeType, NodeAvailabilityEnum } from './cluster-node.ts';
import { OperationType } from './operation.ts';
import { ShardPolicyEnum, ShardType } from './shard.ts';

function auditedCall<T>(
  ctx: GraphQLContext,
  action: string,
  args: Record<string, unknown> & { reason?: string | null },
  nodeId: string | null,
  run: (m: RequestMeta) => Promise<T>,
) {
  const meta: RequestMeta = { actor: ctx.actor, reason: args.reason ?? null };
  return audited({ audit: ctx.audit, clock: ctx.clock }, { action, arguments: args, nodeId, meta }, () => run(meta));
}

builder.objectFields(ShardType, (t) => ({
  pendingComputeNotification: t.boolean({
    description: 'neon:C14: the compute notification for the shard’s current attached node has not succeeded yet; it is retried by every reconcile.',
    resolve: (s) => s.pendingComputeNotification ?? false,
  }),
  generation: t.int({
    nullable: true,
    description: 'The generation last issued for the shard (backends with per-shard controls).',
    resolve: async (s, _, ctx) => (await ctx.backend.placement?.describeShard(s.id))?.generation ?? null,
  }),
  reconciling: t.boolean({
    description: 'A reconcile of the shard is in flight.',
    resolve: async (s, _, ctx) => (await ctx.backend.placement?.describeShard(s.id))?.reconciling ?? false,
  }),
}));

builder.mutationField('setNodeAvailability', (t) =>
  t.field({
    type: ClusterNodeType,
    description:
      'neon:E6: commands a node’s availability. OFFLINE fails its shards over at once (neon:H8; on a node that still answers, the next heartbeat brings it back); ACTIVE activates it (UnavailableError when it cannot list its locations); WARMING_UP from now.',
    args: {
      nodeId: t.arg.id({ required: true }),
      availability: t.arg({ type: NodeAvailabilityEnum, required: true }),
      reason: t.arg.string({ required: false }),
    },
    errors: { types: [NotFoundError, PreconditionFailedError, UnavailableError] },
    resolve: (_, args, ctx) =>
      auditedCall(ctx, 'setNodeAvailability', args, String(args.nodeId), (m) => ctx.failover.setNodeAvailability(String(args.nodeId), args.availability, m)),
  }),
);

builder.mutationField('startNodeDelete', (t) =>
  t.field({
    type: OperationType,
    description:
      'neon:L4: deletes a node gracefully as an operation of kind DELETE: policy DELETING, its shards moved (Pause/Stop skipped) with replacement secondaries, then the node tombstoned. `force`: no waiting for the reconciles.',
    args: { nodeId: t.arg.id({ required: true }), force: t.arg.boolean({ required: false }), reason: t.arg.string({ required: false }) },
    errors: { types: [NotFoundError, ConflictError, OperationLimitReachedError, PreconditionFailedError] },
    resolve: (_, args, ctx) =>
      auditedCall(ctx, 'startNodeDelete', args, String(args.nodeId), (m) => ctx.deletes.startDelete(String(args.nodeId), { force: args.force ?? false }, m)),
  }),
);

builder.mutationField('cancelNodeDelete', (t) =>
  t.field({
    type: OperationType,
    description: 'neon:L5: stops the delete; moved shards stay moved; the node gets its starting policy back.',
    args: { nodeId: t.arg.id({ required: true }), reason: t.arg.string({ required: false }) },
    errors: { types: [NotFoundError, PreconditionFailedError] },
    resolve: (_, args, ctx) => auditedCall(ctx, 'cancelNodeDelete', args, String(args.nodeId), (m) => ctx.deletes.cancelDelete(String(args.nodeId), m)),
  }),
);

const ShardMigrationType = builder.objectRef<MigrateResult>('ShardMigration').implement({
  description: 'A shard migration: the shard now, and the MIGRATE operation doing the rest of a prewarmed one (neon:W2).',
  fields: (t) => ({
    shard: t.field({ type: ShardType, resolve: (r) => r.shard }),
    operation: t.field({ type: OperationType, nullable: true, resolve: (r) => r.operation }),
  }),
});

const SHARD_CONTROL_ERRORS = [NotFoundError, InvalidInputError, PreconditionFailedError, ConflictError, UnavailableError, TimeoutError, ReconcileFailedError];

builder.mutationField('migrateShard', (t) =>
  t.field({
    type: ShardMigrationType,
    description:
      'neon:W1–W4: moves a shard’s attachment to `nodeId`. `prewarm` (default): a secondary there first, the rest as a MIGRATE operation; otherwise at once (a live cut-over), waiting up to 30 s for the reconcile (TimeoutError: it goes on).',
    args: {
      shardId: t.arg.id({ required: true }),
      nodeId: t.arg.id({ required: true }),
      originNodeId: t.arg.id({ required: false, description: 'Refused unless the shard is attached there.' }),
      prewarm: t.arg.boolean({ required: false }),
      overrideScheduler: t.arg.boolean({ required: false, description: 'Allow an unavailable or worse-scoring target.' }),
      secondaryWarmupTimeoutSeconds: t.arg.int({ required: false }),
      secondaryDownloadRequestTimeoutSeconds: t.arg.int({ required: false }),
      reason: t.arg.string({ required: false }),
    },
    errors: { types: SHARD_CONTROL_ERRORS },
    resolve: (_, args, ctx) =>
      auditedCall(ctx, 'migrateShard', args, String(args.nodeId), (m) =>
        ctx.shardControls.migrate(
          {
            shardId: String(args.shardId),
            nodeId: String(args.nodeId),
            originNodeId: args.originNodeId == null ? null : String(args.originNodeId),
            prewarm: args.prewarm ?? true,
            overrideScheduler: args.overrideScheduler ?? false,
            warmup:
              args.secondaryWarmupTimeoutSeconds != null || args.secondaryDownloadRequestTimeoutSeconds != null
                ? {
                    timeoutMs: (args.secondaryWarmupTimeoutSeconds ?? 300) * 1000,
                    requestTimeoutMs: (args.secondaryDownloadRequestTimeoutSeconds ?? 20) * 1000,
                  }
                : null,
          },
          m,
        ),
      ),
  }),
);

builder.mutationField('migrateShardSecondary', (t) =>
  t.field({
    type: ShardType,
    description: 'neon:W5: replaces the shard’s secondaries by one on `nodeId` (an unavailable node is accepted).',
    args: { shardId: t.arg.id({ required: true }), nodeId: t.arg.id({ required: true }), reason: t.arg.string({ required: false }) },
    errors: { types: SHARD_CONTROL_ERRORS },
    resolve: (_, args, ctx) =>
      auditedCall(ctx, 'migrateShardSecondary', args, String(args.nodeId), () => ctx.shardControls.migrateSecondary(String(args.shardId), String(args.nodeId))),
  }),
);

builder.mutationField('cancelShardReconcile', (t) =>
  t.field({
    type: ShardType,
    description: 'neon:W6: stops the shard’s reconcile in flight (waiting up to 5 s); the next background pass starts another unless the shard is STOP.',
    args: { shardId: t.arg.id({ required: true }), reason: t.arg.string({ required: false }) },
    errors: { types: SHARD_CONTROL_ERRORS },
    resolve: (_, args, ctx) => auditedCall(ctx, 'cancelShardReconcile', args, null, () => ctx.shardControls.cancelReconcile(String(args.shardId))),
  }),
);

const ShardPolicyResultType = builder.objectRef<{ shards: import('../../cluster/types.ts').ClusterShard[] }>('ShardPolicyResult').implement({
  fields: (t) => ({ shards: t.field({ type: [ShardType], resolve: (r) => r.shards }) }),
});

builder.mutationField('setShardPolicy', (t) =>
  t.field({
    type: ShardPolicyResultType,
    description:
      'neon:W7: a tenant’s shard scheduling policy and/or its number of secondaries (Neon’s placement Attached(n)), for every shard of the tenant; each is rescheduled and reconciled without waiting.',
    args: {
      tenantId: t.arg.string({ required: true }),
      policy: t.arg({ type: ShardPolicyEnum, required: false }),
      secondaryCount: t.arg.int({ required: false }),
      reason: t.arg.string({ required: false }),
    },
    errors: { types: SHARD_CONTROL_ERRORS },
    resolve: (_, args, ctx) =>
      auditedCall(ctx, 'setShardPolicy', args, null, async () => ({
        shards: await ctx.shardControls.setTenantPolicy(args.tenantId, {
          ...(args.policy != null && { policy: args.policy }),
          ...(args.secondaryCount != null && { secondaryCount: args.secondaryCount }),
        }),
      })),
  }),
);

const PreferredZoneResultType = builder.objectRef<{ updated: string[] }>('PreferredZoneResult').implement({
  fields: (t) => ({ updated: t.exposeIDList('updated', { description: 'The shards found and updated; unknown ids are left out.' }) }),
});

builder.mutationField('setPreferredZone', (t) =>
  t.field({
    type: PreferredZoneResultType,
    description: 'neon:W9: sets (or with null clears) the preferred zone of shards; nothing moves now — later fills, failovers and migrations use it.',
    args: { shardIds: t.arg.idList({ required: true }), zone: t.arg.string({ required: false }), reason: t.arg.string({ required: false }) },
    errors: { types: SHARD_CONTROL_ERRORS },
    resolve: (_, args, ctx) =>
      auditedCall(ctx, 'setPreferredZone', args, null, async () => ({
        updated: await ctx.shardControls.setPreferredZones(Object.fromEntries(args.shardIds.map((id) => [String(id), args.zone ?? null]))),
      })),
  }),
);

/** neon:W10: a tenant's stored config (Neon's `TenantConfig` fields, humantime strings for durations). */
const TenantConfigResultType = builder.objectRef<{ tenantId: string; config: Record<string, unknown> }>('TenantConfigResult').implement({
  fields: (t) => ({
    tenantId: t.exposeString('tenantId'),
    config: t.field({
      type: 'JSON',
      description: 'The config as stored, sent in every location_config with heatmap_period made HA-aware (neon:W11).',
      resolve: (r) => r.config,
    }),
  }),
});

const TenantConfigModeEnum = builder.enumType('TenantConfigMode', {
  description:
    'neon:W10: REPLACE sets the whole config (PUT /v1/tenant/config); PATCH applies Neon’s field-patch rules (null removes a field, a field left out is kept).',
  values: ['REPLACE', 'PATCH'] as const,
});

/** The config argument parsed as Neon parses the REST body: unknown fields and wrong types are an InvalidInputError naming the field. */
function parseTenantConfigArg(value: unknown, mode: 'REPLACE' | 'PATCH'): Record<string, unknown> {
  const parsed = (mode === 'PATCH' ? tenantConfigPatchSchema : tenantConfigSchema).safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const field = issue.code === 'unrecognized_keys' ? (issue.keys[0] ?? 'config') : issue.path.map(String).join('.') || 'config';
  throw new InvalidInputError(`config.${field}`, JSON.stringify(value), `config: ${issue.message}`);
}

builder.queryField('tenantConfig', (t) =>
  t.field({
    type: TenantConfigResultType,
    description: 'neon:W10: a tenant’s stored config (GET /v1/tenant/:tenant_id/config); admin, as Neon’s.',
    args: { tenantId: t.arg.string({ required: true }) },
    errors: { types: [NotFoundError, PreconditionFailedError, UnavailableError] },
    resolve: async (_, args, ctx) => ({ tenantId: args.tenantId, config: await ctx.shardControls.getTenantConfig(args.tenantId) }),
  }),
);

builder.mutationField('setTenantConfig', (t) =>
  t.field({
    type: TenantConfigResultType,
    description:
      'neon:W10: stores a tenant’s config for every shard (PUT or PATCH /v1/tenant/config) and answers once it is stored; every location_config sends it from then on (reconciles follow).',
    args: {
      tenantId: t.arg.string({ required: true }),
      config: t.arg({ type: 'JSON', required: true }),
      mode: t.arg({ type: TenantConfigModeEnum, required: false, defaultValue: 'REPLACE' }),
      reason: t.arg.string({ required: false }),
    },
    errors: { types: SHARD_CONTROL_ERRORS },
    resolve: (_, args, ctx) =>
      auditedCall(ctx, 'setTenantConfig', args, null, async () => {
        const mode = args.mode ?? 'REPLACE';
        const config = parseTenantConfigArg(args.config, mode);
        const stored =
          mode === 'PATCH' ? await ctx.shardControls.patchTenantConfig(args.tenantId, config) : await ctx.shardControls.setTenantConfig(args.tenantId, config);
        return { tenantId: args.tenantId, config: stored };
      }),
  }),
);
