import { NotFoundError } from '../../domain/errors.ts';
import { SCHEDULING_POLICIES } from '../../domain/storage/policy.ts';
import type { OperationProgress } from '../../events/bus.ts';
import {
  OPERATION_KINDS,
  OPERATION_STATES,
  STEP_STATES,
  totalOf,
  type OperationCounts,
  type OperationSnapshot,
  type StepRecord,
  type WaitingOn,
} from '../../domain/operations.ts';
import { etaAt, overBy, type StalledStep } from '../../domain/stall.ts';
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
    moved: t.exposeInt('moved', { description: 'Cut over, migrated, or restarted elsewhere.' }),
    stopped: t.int({ description: 'VMs stopped (they stay off, or restart on disable).', resolve: (c) => c.stopped }),
    skipped: t.exposeInt('skipped'),
    failed: t.exposeInt('failed'),
    abandoned: t.int({
      description: 'In flight when a forced cancel or disable ended the operation (see each step’s `recheck`).',
      resolve: (c) => c.abandoned,
    }),
    total: t.int({ resolve: (c) => totalOf(c) }),
    skippedByReason: t.field({ type: [ReasonCountType], resolve: (c) => byReason(c.skippedByReason) }),
    failedByReason: t.field({ type: [ReasonCountType], resolve: (c) => byReason(c.failedByReason) }),
  }),
});

const StalledStepType = builder.objectRef<StalledStep>('StalledStep').implement({
  description:
    'A step running past twice its expected duration: the median of its operation’s finished steps, else the backend’s declared latency, else `operations.expectedStepMs`.',
  fields: (t) => ({
    workloadKind: t.exposeString('workloadKind', { description: 'vm or shard.' }),
    workloadId: t.exposeID('workloadId'),
    action: t.exposeString('action'),
    since: t.field({ type: 'DateTime', description: 'When the step started.', resolve: (s) => s.since }),
    expectedSeconds: t.float({ resolve: (s) => s.expectedMs / 1000 }),
    overSeconds: t.float({ description: 'How far past its expected duration it is now.', resolve: (s, _, ctx) => overBy(s, ctx.clock.now()) / 1000 }),
  }),
});

/** The ETA as of now: never in the past (domain/stall.ts); null with a reason while there is none. */
function etaNow(o: OperationSnapshot, now: number) {
  if (o.finishedAt !== null) return { at: null, unknownReason: null };
  const c = o.counts;
  return etaAt({
    now,
    firstStartAt: o.startedAt,
    finished: c.moved + c.stopped + c.failed + c.abandoned,
    planned: c.planned,
    moving: c.moving,
    stalled: o.waitingOn?.stalled?.length ?? 0,
  });
}

const WaitingOnType = builder.objectRef<WaitingOn>('WaitingOn').implement({
  description: 'What the operation is waiting for right now.',
  fields: (t) => ({
    kind: t.exposeString('kind', { description: 'MOVES_IN_FLIGHT or NODE_OFFLINE.' }),
    description: t.exposeString('description'),
    nodeId: t.exposeID('nodeId', { nullable: true }),
    workloadIds: t.exposeStringList('workloadIds', { description: 'Up to 20 of the workloads concerned.' }),
    since: t.field({ type: 'DateTime', resolve: (w) => w.since }),
    stalled: t.field({
      type: [StalledStepType],
      description: 'Steps past twice their expected duration, named first in `workloadIds`.',
      resolve: (w) => w.stalled ?? [],
    }),
  }),
});

interface StepRecheck {
  settled: boolean;
  nodeId: string | null;
  description: string;
}

const StepRecheckType = builder.objectRef<StepRecheck>('StepRecheck').implement({
  description: 'Where an ABANDONED step’s workload is now, read from the backend when asked.',
  fields: (t) => ({
    settled: t.exposeBoolean('settled', {
      description: 'The move ended, one way or the other (the workload is where it was, or where it was sent); false: still under way.',
    }),
    nodeId: t.exposeID('nodeId', { nullable: true, description: 'The node the VM runs on, or the shard is attached to, now.' }),
    description: t.exposeString('description'),
  }),
});

/** An abandoned step, re-checked against the backend: Lockkeeper stopped waiting, the cluster may not have. */
async function recheck(step: StepRecord, ctx: GraphQLContext): Promise<StepRecheck | null> {
  if (step.state !== 'ABANDONED') return null;
  const where = (nodeId: string | null) =>
    nodeId === step.toNodeId && nodeId !== null ? 'where it was sent' : nodeId === step.fromNodeId ? 'where it was' : 'elsewhere';
  if (step.workloadKind === 'shard') {
    const shard = await ctx.loaders.shard.load(step.workloadId);
    if (!shard) return { settled: true, nodeId: null, description: `shard ${step.workloadId} no longer exists` };
    return { settled: true, nodeId: shard.attachedNodeId, description: `attached to node ${shard.attachedNodeId} (${where(shard.attachedNodeId)})` };
  }
  if (step.workloadKind === 'vm') {
    const vm = await ctx.loaders.vm.load(step.workloadId);
    if (!vm) return { settled: true, nodeId: null, description: `VM ${step.workloadId} no longer exists` };
    const moving = vm.status === 'Migrating' || vm.status === 'Stopping' || vm.status === 'Starting';
    return { settled: !moving, nodeId: vm.nodeId, description: `${vm.status}${vm.nodeId ? ` on node ${vm.nodeId} (${where(vm.nodeId)})` : ''}` };
  }
  return null;
}

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
        'A shard move: the phase it is in or ended in (neon:C1–C9: ORIGIN_STALE, BASELINE, WARM_UP, GENERATION, DESTINATION_MULTI, WAL_CATCH_UP, COMPUTE_NOTIFY, ORIGIN_SECONDARY, DESTINATION_SINGLE; ROLLING_FORWARD, DIRECT_ATTACH; TENANT_CONFIG while the tenant config is unknown, neon:W10).',
      resolve: (s) => shardPhase(s)?.phase ?? null,
    }),
    phaseDescription: t.string({
      nullable: true,
      description: 'What that phase waits for, e.g. "waiting for WAL catch-up on node 2".',
      resolve: (s) => shardPhase(s)?.description ?? null,
    }),
    startedAt: t.field({ type: 'DateTime', nullable: true, resolve: (s) => s.startedAt }),
    finishedAt: t.field({ type: 'DateTime', nullable: true, resolve: (s) => s.finishedAt }),
    recheck: t.field({
      type: StepRecheckType,
      nullable: true,
      description:
        'For an ABANDONED step: where its workload is now, read from the backend at this query (its `error` keeps the last known state). Null for other steps.',
      resolve: (s, _, ctx) => recheck(s, ctx),
    }),
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
    warnings: t.stringList({
      description: 'What its start warned of (a maintenance: its plan’s warnings, e.g. VMs an explicit deadline may cut, vm:M7).',
      resolve: (o, _, ctx) => (o.kind === 'MAINTENANCE' ? ctx.maintenance.warningsOf(o.id) : []),
    }),
    createdAt: t.field({ type: 'DateTime', resolve: (o) => o.createdAt }),
    startedAt: t.field({ type: 'DateTime', resolve: (o) => o.startedAt }),
    finishedAt: t.field({ type: 'DateTime', nullable: true, resolve: (o) => o.finishedAt }),
    eta: t.field({
      type: 'DateTime',
      nullable: true,
      description:
        'Estimated completion, from the rate at which steps finished up to now: never in the past; null with `etaUnknownReason` while there is none.',
      resolve: (o, _, ctx) => etaNow(o, ctx.clock.now()).at,
    }),
    etaSeconds: t.float({
      nullable: true,
      resolve: (o, _, ctx) => {
        const now = ctx.clock.now();
        const { at } = etaNow(o, now);
        return at === null ? null : (at - now) / 1000;
      },
    }),
    etaOverdueSeconds: t.float({
      nullable: true,
      description:
        'How far a running operation is past the estimate it gave at its last progress (a step started or ended); null while it is not, or while it is not RUNNING. Shown as `over by …` instead of a time in the past.',
      resolve: (o, _, ctx) => {
        if (o.state !== 'RUNNING' || o.etaAt === null) return null;
        const over = ctx.clock.now() - o.etaAt;
        return over > 0 ? over / 1000 : null;
      },
    }),
    etaUnknownReason: t.string({
      nullable: true,
      description: 'Why a running operation shows no ETA: NOTHING_FINISHED (no step finished yet) or STALLED (what is left is stalled: see waitingOn.stalled).',
      resolve: (o, _, ctx) => etaNow(o, ctx.clock.now()).unknownReason,
    }),
    stalled: t.boolean({
      description: 'Some step runs past twice its expected duration (waitingOn.stalled names them).',
      resolve: (o) => (o.waitingOn?.stalled?.length ?? 0) > 0,
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
