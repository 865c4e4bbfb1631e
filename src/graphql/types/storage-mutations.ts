import { ConflictError, NotFoundError, OperationLimitReachedError, PreconditionFailedError, UnavailableError } from '../../domain/errors.ts';
import { audited } from '../../operations/core/audited.ts';
import type { OperationSnapshot, RequestMeta } from '../../domain/operations.ts';
import { builder } from '../builder.ts';
import type { GraphQLContext } from '../context.ts';
import { ClusterNodeType } from './cluster-node.ts';
import { OperationType, SchedulingPolicyEnum } from './operation.ts';

/** storage:S3/S4: the refusals a start can meet, in the spec's order. */
const START_ERRORS = [NotFoundError, ConflictError, OperationLimitReachedError, UnavailableError, PreconditionFailedError];
const CANCEL_ERRORS = [NotFoundError, PreconditionFailedError];

const meta = (ctx: GraphQLContext, reason: string | null | undefined): RequestMeta => ({ actor: ctx.actor, reason: reason ?? null });

function auditedCall<T>(ctx: GraphQLContext, action: string, args: { nodeId: string | number; reason?: string | null }, run: (m: RequestMeta) => Promise<T>) {
  const m = meta(ctx, args.reason);
  return audited({ audit: ctx.audit, clock: ctx.clock }, { action, arguments: args, nodeId: String(args.nodeId), meta: m }, () => run(m));
}

type OperationCall = (ctx: GraphQLContext, nodeId: string, m: RequestMeta, force: boolean) => Promise<OperationSnapshot>;

const FORCE_DESCRIPTION =
  'Do not wait for the cut-overs in flight (a backend that never answers): they are recorded ABANDONED with their last known state (each step’s `recheck` reads where its shard is now) and the operation ends CANCELLED at once. Also ends a cancel already waiting in CANCELLING.';

const OPERATION_MUTATIONS: Record<string, { description: string; errors: (typeof START_ERRORS)[number][]; call: OperationCall; forceable?: boolean }> = {
  startNodeDrain: {
    description: 'Moves the node’s shards to their warm secondaries; the node ends in PAUSE_FOR_RESTART.',
    errors: START_ERRORS,
    call: (ctx, nodeId, m) => ctx.storage.startDrain(nodeId, m),
  },
  cancelNodeDrain: {
    description: 'Stops the drain: moves in flight finish (unless `force`), moved shards stay moved, the policy returns to ACTIVE.',
    errors: CANCEL_ERRORS,
    forceable: true,
    call: (ctx, nodeId, m, force) => ctx.storage.cancelDrain(nodeId, m, { force }),
  },
  startNodeFill: {
    description: 'Promotes the node’s secondaries back to attached, up to its fair share; the node ends ACTIVE.',
    errors: START_ERRORS,
    call: (ctx, nodeId, m) => ctx.storage.startFill(nodeId, m),
  },
  cancelNodeFill: {
    description: 'Stops the fill: moves in flight finish (unless `force`), the policy returns to ACTIVE.',
    errors: CANCEL_ERRORS,
    forceable: true,
    call: (ctx, nodeId, m, force) => ctx.storage.cancelFill(nodeId, m, { force }),
  },
};

for (const [name, spec] of Object.entries(OPERATION_MUTATIONS)) {
  builder.mutationField(name, (t) =>
    t.field({
      type: OperationType,
      description: spec.description,
      args: {
        nodeId: t.arg.id({ required: true }),
        reason: t.arg.string({ required: false, description: 'Why; recorded in the audit log.' }),
        ...(spec.forceable && { force: t.arg.boolean({ required: false, defaultValue: false, description: FORCE_DESCRIPTION }) }),
      },
      errors: { types: spec.errors },
      resolve: (_, args, ctx) =>
        auditedCall(ctx, name, args, (m) => spec.call(ctx, String(args.nodeId), m, (args as { force?: boolean | null }).force === true)),
    }),
  );
}

builder.mutationField('configureNode', (t) =>
  t.field({
    type: ClusterNodeType,
    description: 'Sets the node’s scheduling policy by hand; refused while an operation runs on it.',
    args: {
      nodeId: t.arg.id({ required: true }),
      policy: t.arg({ type: SchedulingPolicyEnum, required: true }),
      reason: t.arg.string({ required: false }),
    },
    errors: { types: [NotFoundError, PreconditionFailedError] },
    resolve: (_, args, ctx) =>
      auditedCall(ctx, 'configureNode', args, async (m) => {
        const nodeId = String(args.nodeId);
        await ctx.storage.configureNode(nodeId, args.policy, m);
        const node = await ctx.backend.getNode(nodeId);
        if (!node) throw new NotFoundError('node', nodeId);
        return node;
      }),
  }),
);
