import { NotFoundError } from '../../domain/errors.ts';
import { SCHEDULING_POLICIES } from '../../domain/storage/policy.ts';
import type { OperationProgress } from '../../events/bus.ts';
import {
  OPERATION_KINDS,
  OPERATION_STATES,
  STEP_STATES,
  type OperationCounts,
  type OperationSnapshot,
  type StepRecord,
  type WaitingOn,
} from '../../domain/operations.ts';
import { builder } from '../builder.ts';
import { refreshLoaders, type GraphQLContext } from '../context.ts';
import { ClusterNodeType } from './cluster-node.ts';
import { pageOf } from './common.ts';
import { ShardType } from './shard.ts';

export const SchedulingPolicyEnum = builder.enumType('SchedulingPolicy', {
  description: 'A storage node’s scheduling policy (Neon semantics).',
  values: Object.fromEntries(SCHEDULING_POLICIES.map((p) => [p, { value: p }])) as Record<
    (typeof SCHEDULING_POLICIES)[number],
    { value: (typeof SCHEDULING_POLICIES)[number] }
  >,
});
const OperationKindEnum = builder.enumType('OperationKind', { values: OPERATION_KINDS });
const OperationStateEnum = builder.enumType('OperationState', { values: OPERATION_STATES });
export const StepStateEnum = builder.enumType('StepState', { values: STEP_STATES });

const ReasonCountType = builder.objectRef<{ reason: string; count: number }>('ReasonCount').implement({
  fields: (t) => ({ reason: t.exposeString('reason'), count: t.exposeInt('count') }),
});

const byReason = (m: Record<string, number>) =>
  Object.entries(m)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([reason, count]) => ({ reason, count }));

const CountsType = builder.objectRef<OperationCounts>('OperationCounts').implement({
  fields: (t) => ({
    planned: t.exposeInt('planned', { description: 'Not started yet.' }),
    moving: t.exposeInt('moving', { description: 'In flight.' }),
    moved: t.exposeInt('moved'),
    skipped: t.exposeInt('skipped'),
    failed: t.exposeInt('failed'),
    total: t.int({ resolve: (c) => c.planned + c.moving + c.moved + c.skipped + c.failed }),
    skippedByReason: t.field({ type: [ReasonCountType], resolve: (c) => byReason(c.skippedByReason) }),
    failedByReason: t.field({ type: [ReasonCountType], resolve: (c) => byReason(c.failedByReason) }),
  }),
});

const WaitingOnType = builder.objectRef<WaitingOn>('WaitingOn').implement({
  description: 'What the operation is waiting for right now.',
  fields: (t) => ({
    kind: t.exposeString('kind', { description: 'MOVES_IN_FLIGHT or NODE_OFFLINE.' }),
    description: t.exposeString('description'),
    nodeId: t.exposeID('nodeId', { nullable: true }),
    workloadIds: t.exposeStringList('workloadIds', { description: 'Up to 20 of the workloads concerned.' }),
    since: t.field({ type: 'DateTime', resolve: (w) => w.since }),
  }),
});

/** A shard step's phase, kept in its `detail` by the storage runs. */
function shardPhase(s: StepRecord): { phase: string; description: string } | null {
  if (s.workloadKind !== 'shard' || !s.detail) return null;
  try {
    const d = JSON.parse(s.detail) as { phase?: unknown; description?: unknown };
    return typeof d.phase === 'string' && typeof d.description === 'string' ? { phase: d.phase, description: d.description } : null;
  } catch {
    return null;
  }
}

const StepType = builder.objectRef<StepRecord>('OperationStep').implement({
  description: 'One workload’s part of an operation.',
  fields: (t) => ({
    workloadKind: t.exposeString('workloadKind'),
    workloadId: t.exposeID('workloadId'),
    shard: t.field({
      type: ShardType,
      nullable: true,
      resolve: (s, _, ctx) => (s.workloadKind === 'shard' ? ctx.loaders.shard.load(s.workloadId) : null),
    }),
    action: t.exposeString('action'),
    state: t.field({ type: StepStateEnum, resolve: (s) => s.state }),
    reason: t.exposeString('reason', { nullable: true, description: 'Why it was skipped or failed (or, for fills, why it was planned).' }),
    error: t.exposeString('error', {
      nullable: true,
      description: 'Why it failed or was skipped; on a moved step, what happened on the way (e.g. retried requests).',
    }),
    fromNodeId: t.exposeID('fromNodeId', { nullable: true }),
    toNodeId: t.exposeID('toNodeId', { nullable: true }),
    seq: t.exposeInt('seq'),
    phase: t.string({
      nullable: true,
      description:
        'A shard move: the phase it is in or ended in (neon:C1–C9: ORIGIN_STALE, BASELINE, WARM_UP, GENERATION, DESTINATION_MULTI, WAL_CATCH_UP, COMPUTE_NOTIFY, ORIGIN_SECONDARY, DESTINATION_SINGLE; ROLLING_FORWARD, DIRECT_ATTACH).',
      resolve: (s) => shardPhase(s)?.phase ?? null,
    }),
    phaseDescription: t.string({
      nullable: true,
      description: 'What that phase waits for, e.g. "waiting for WAL catch-up on node 2".',
      resolve: (s) => shardPhase(s)?.description ?? null,
    }),
    startedAt: t.field({ type: 'DateTime', nullable: true, resolve: (s) => s.startedAt }),
    finishedAt: t.field({ type: 'DateTime', nullable: true, resolve: (s) => s.finishedAt }),
  }),
});

export const OperationType = builder.objectRef<OperationSnapshot>('Operation');

OperationType.implement({
  description: 'A background node operation (drain or fill): persisted, resumable, cancellable.',
  fields: (t) => ({
    id: t.exposeID('id'),
    kind: t.field({ type: OperationKindEnum, resolve: (o) => o.kind }),
    nodeId: t.exposeID('nodeId', { nullable: true, description: 'Null for a ROLLOUT, which has no node of its own.' }),
    node: t.field({ type: ClusterNodeType, nullable: true, resolve: (o, _, ctx) => (o.nodeId === null ? null : ctx.loaders.node.load(o.nodeId)) }),
    state: t.field({ type: OperationStateEnum, resolve: (o) => o.state }),
    reason: t.exposeString('reason', { nullable: true, description: 'Why it was started, as given by the caller.' }),
    startedBy: t.exposeString('actor', { nullable: true }),
    error: t.exposeString('error', { nullable: true, description: 'Why it failed, e.g. NODE_STATE_CHANGED or NODE_OFFLINE.' }),
    counts: t.field({ type: CountsType, resolve: (o) => o.counts }),
    waitingOn: t.field({ type: WaitingOnType, nullable: true, resolve: (o) => o.waitingOn }),
    createdAt: t.field({ type: 'DateTime', resolve: (o) => o.createdAt }),
    startedAt: t.field({ type: 'DateTime', resolve: (o) => o.startedAt }),
    finishedAt: t.field({ type: 'DateTime', nullable: true, resolve: (o) => o.finishedAt }),
    eta: t.field({ type: 'DateTime', nullable: true, description: 'Estimated completion, from the observed move rate.', resolve: (o) => o.etaAt }),
    etaSeconds: t.float({
      nullable: true,
      resolve: (o, _, ctx) => (o.etaAt === null ? null : Math.max(0, (o.etaAt - ctx.clock.now()) / 1000)),
    }),
    steps: t.connection(
      {
        type: StepType,
        args: { states: t.arg({ type: [StepStateEnum], required: false }) },
        resolve: async (o, args, ctx) => pageOf(args, await ctx.operations.getSteps(o.id, args.states ?? undefined)),
      },
      { name: 'OperationStepConnection' },
      { name: 'OperationStepEdge' },
    ),
  }),
});

builder.objectField(ClusterNodeType, 'schedulingPolicy', (t) =>
  t.field({ type: SchedulingPolicyEnum, description: 'Storage scheduling policy (persisted).', resolve: (n, _, ctx) => ctx.storage.policyOf(n.id) }),
);
builder.objectField(ClusterNodeType, 'maySchedule', (t) =>
  t.boolean({
    description: 'Whether new shards may be placed here: availability ACTIVE and policy ACTIVE or FILLING.',
    resolve: (n, _, ctx) => n.availability === 'ACTIVE' && ['ACTIVE', 'FILLING'].includes(ctx.storage.policyOf(n.id)),
  }),
);
builder.objectField(ClusterNodeType, 'operation', (t) =>
  t.field({
    type: OperationType,
    nullable: true,
    description: 'The operation running on this node, if any.',
    resolve: (n, _, ctx) => ctx.storage.activeOperation(n.id),
  }),
);

const ProgressType = builder.objectRef<OperationProgress>('OperationProgress').implement({
  fields: (t) => ({
    operation: t.field({ type: OperationType, resolve: (p) => p.operation }),
    steps: t.field({ type: [StepType], description: 'Steps that changed since the previous event.', resolve: (p) => p.steps }),
  }),
});

builder.queryFields((t) => ({
  operation: t.field({
    type: OperationType,
    args: { id: t.arg.id({ required: true }) },
    errors: { types: [NotFoundError] },
    resolve: async (_, { id }, ctx) => {
      const op = await ctx.operations.getOperation(String(id));
      if (!op) throw new NotFoundError('operation', String(id));
      return op;
    },
  }),
  operations: t.connection(
    {
      type: OperationType,
      description: 'Operations, newest first.',
      args: {
        nodeId: t.arg.id({ required: false }),
        kind: t.arg({ type: OperationKindEnum, required: false }),
        states: t.arg({ type: [OperationStateEnum], required: false }),
      },
      resolve: async (_, args, ctx) =>
        pageOf(
          args,
          await ctx.operations.listOperations({
            ...(args.nodeId != null && { nodeId: String(args.nodeId) }),
            ...(args.kind != null && { kind: args.kind }),
            ...(args.states != null && { states: args.states }),
          }),
        ),
    },
    { name: 'OperationConnection' },
    { name: 'OperationEdge' },
  ),
}));

const TERMINAL = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED']);

builder.subscriptionField('operationProgress', (t) =>
  t.field({
    type: ProgressType,
    description: 'The operation now, then every change (counts, steps, waiting-on, ETA); completes when it ends.',
    args: { id: t.arg.id({ required: true }) },
    subscribe: (_, { id }, ctx) => progressStream(ctx, String(id)),
    resolve: (p, _, ctx) => {
      refreshLoaders(ctx);
      return p;
    },
  }),
);

async function* progressStream(ctx: GraphQLContext, id: string): AsyncGenerator<OperationProgress> {
  // Subscribe before reading, so no change between the read and the subscription is lost. A
  // Repeater listens only from its first next(), so that call is made now and kept pending.
  const updates = ctx.bus.subscribe('operationProgress', id);
  const iterator = updates[Symbol.asyncIterator]();
  let pending = iterator.next();
  try {
    const current = await ctx.operations.getOperation(id);
    if (!current) throw new NotFoundError('operation', id);
    // Decided before the yield: the snapshot is the live run's, and may have ended by the time the client pulls again.
    const ended = TERMINAL.has(current.state);
    yield { operation: current, steps: [] };
    if (ended) return;
    for (;;) {
      const next = await pending;
      if (next.done) return;
      pending = iterator.next();
      const last = TERMINAL.has(next.value.operation.state);
      yield next.value;
      if (last) return;
    }
  } finally {
    await iterator.return?.();
  }
}
