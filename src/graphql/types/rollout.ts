import { ConflictError, InvalidInputError, NotFoundError, PreconditionFailedError } from '../../domain/errors.ts';
import type { OperationSnapshot, RequestMeta } from '../../domain/operations.ts';
import { ROLLOUT_ACTIONS, ROLLOUT_NODE_PHASES, ROLLOUT_ORDERS, ROLLOUT_RESTARTS, type RolloutSettings } from '../../domain/rollouts.ts';
import { audited } from '../../operations/core/audited.ts';
import { RehearsalStaleError } from '../../rehearsal/service.ts';
import type { RolloutInput, RolloutPlanView, RolloutView } from '../../operations/rollouts/engine.ts';
import { builder } from '../builder.ts';
import type { GraphQLContext } from '../context.ts';
import { typedBackendCall } from '../map-backend-error.ts';
import { ClusterNodeType } from './cluster-node.ts';
import { BlockerType } from './errors.ts';
import { LabelInput, PlanType, ShardPlanType } from './maintenance.ts';
import { OperationType, StepStateEnum } from './operation.ts';

const ActionEnum = builder.enumType('RolloutAction', {
  description: 'MAINTENANCE: enable maintenance, restart, disable. DRAIN_FILL: drain to PAUSE_FOR_RESTART, restart, fill.',
  values: ROLLOUT_ACTIONS,
});
const RestartEnum = builder.enumType('RolloutRestart', {
  description:
    'WAIT_FOR_REATTACH: the node is restarted outside Lockkeeper; wait until it re-attaches or boots again and is ACTIVE. NONE: no restart (a maintenance window). CONFIRM: wait for continueRollout.',
  values: ROLLOUT_RESTARTS,
});
const OrderEnum = builder.enumType('RolloutOrder', {
  description: 'GIVEN (as listed; a selector is taken BY_ID), BY_ID, or ZONE_BY_ZONE (one zone finished before the next).',
  values: ROLLOUT_ORDERS,
});
const NodePhaseEnum = builder.enumType('RolloutNodePhase', { values: ROLLOUT_NODE_PHASES });

const SelectorInput = builder.inputType('RolloutSelectorInput', {
  description: 'Nodes in one of the zones, with one of the roles, carrying every label (each part optional).',
  fields: (t) => ({
    zones: t.stringList({ required: false }),
    roles: t.stringList({ required: false }),
    labels: t.field({ type: [LabelInput], required: false }),
  }),
});

export const StartInput = builder.inputType('StartRolloutInput', {
  description: 'rollout:O1. Exactly one of nodes or selector.',
  fields: (t) => ({
    nodes: t.idList({ required: false }),
    selector: t.field({ type: SelectorInput, required: false }),
    action: t.field({ type: ActionEnum, required: true }),
    restart: t.field({ type: RestartEnum, required: false, defaultValue: 'WAIT_FOR_REATTACH' }),
    maxUnavailable: t.int({ required: false, defaultValue: 1, description: 'Nodes out of service at once, whatever took them out.' }),
    order: t.field({ type: OrderEnum, required: false, defaultValue: 'GIVEN' }),
    pauseOnFailure: t.boolean({ required: false, defaultValue: true }),
    settleSeconds: t.int({ required: false, defaultValue: 0, description: 'Wait after a node is back before the next wave.' }),
    allowUnsafeRestart: t.boolean({
      required: false,
      defaultValue: false,
      description:
        'Every node of the rollout may restart even when workloads would lose service; recorded per node, each use an event and an audit entry (rollout:O12).',
    }),
    allowUnsafeRestartNodes: t.idList({
      required: false,
      description: 'These nodes only may restart even when workloads would lose service (rollout:O12).',
    }),
    force: t.boolean({ required: false, defaultValue: false, description: 'Per node: enableMaintenanceMode(force).' }),
    deadlineSeconds: t.int({ required: false, description: 'Per node: the maintenance deadline.' }),
    reason: t.string({ required: false }),
  }),
});

type StartArgs = typeof StartInput.$inferInput;
export const toInput = (i: StartArgs): RolloutInput => ({
  nodes: i.nodes?.map(String) ?? null,
  selector: i.selector
    ? {
        ...(i.selector.zones && { zones: i.selector.zones }),
        ...(i.selector.roles && { roles: i.selector.roles }),
        ...(i.selector.labels && { labels: Object.fromEntries(i.selector.labels.map((l) => [l.key, l.value])) }),
      }
    : null,
  action: i.action,
  restart: i.restart ?? null,
  maxUnavailable: i.maxUnavailable ?? null,
  order: i.order ?? null,
  pauseOnFailure: i.pauseOnFailure ?? null,
  settleSeconds: i.settleSeconds ?? null,
  allowUnsafeRestart: i.allowUnsafeRestart ?? null,
  allowUnsafeRestartNodes: i.allowUnsafeRestartNodes?.map(String) ?? null,
  force: i.force ?? null,
  deadlineSeconds: i.deadlineSeconds ?? null,
});

const RolloutSettingsType = builder.objectRef<RolloutSettings>('RolloutSettings').implement({
  fields: (t) => ({
    action: t.field({ type: ActionEnum, resolve: (s) => s.action }),
    restart: t.field({ type: RestartEnum, resolve: (s) => s.restart }),
    maxUnavailable: t.exposeInt('maxUnavailable'),
    order: t.field({ type: OrderEnum, resolve: (s) => s.order }),
    pauseOnFailure: t.exposeBoolean('pauseOnFailure'),
    settleSeconds: t.exposeInt('settleSeconds'),
    allowUnsafeRestart: t.exposeBoolean('allowUnsafeRestart'),
    force: t.exposeBoolean('force'),
    deadlineSeconds: t.exposeInt('deadlineSeconds', { nullable: true }),
  }),
});

const WaveType = builder.objectRef<{ number: number; nodeIds: string[] }>('RolloutWave').implement({
  description: 'Nodes taken out together (at most maxUnavailable); the next wave starts when all are back.',
  fields: (t) => ({ number: t.exposeInt('number', { description: '1-based.' }), nodeIds: t.exposeIDList('nodeIds') }),
});
const wavesOf = (waves: string[][]) => waves.map((nodeIds, i) => ({ number: i + 1, nodeIds }));

type NodeView = RolloutView['nodes'][number];
const RolloutNodeType = builder.objectRef<NodeView>('RolloutNode').implement({
  description: 'One node’s part of a rollout (rollout:O4, rollout:O10).',
  fields: (t) => ({
    nodeId: t.exposeID('nodeId'),
    node: t.field({ type: ClusterNodeType, nullable: true, resolve: (n, _, ctx) => ctx.loaders.node.load(n.nodeId) }),
    wave: t.int({ description: '1-based.', resolve: (n) => n.detail.wave + 1 }),
    phase: t.field({ type: NodePhaseEnum, resolve: (n) => n.detail.phase }),
    state: t.field({ type: StepStateEnum, resolve: (n) => n.step.state }),
    since: t.field({ type: 'DateTime', description: 'When the phase began.', resolve: (n) => n.detail.since }),
    startedAt: t.field({ type: 'DateTime', nullable: true, resolve: (n) => n.step.startedAt }),
    finishedAt: t.field({ type: 'DateTime', nullable: true, resolve: (n) => n.step.finishedAt }),
    operations: t.field({
      type: [OperationType],
      description: 'The node operations the rollout started for this node, in order.',
      resolve: async (n, _, ctx) =>
        (await Promise.all(n.detail.operations.map((o) => ctx.operations.getOperation(o.id)))).filter((o): o is OperationSnapshot => o !== null),
    }),
    failure: t.string({ nullable: true, resolve: (n) => n.detail.failure }),
    blockers: t.field({
      type: [BlockerType],
      description: 'Workloads that would lose service if the node restarted (rollout:O6).',
      resolve: (n) => n.detail.blockers,
    }),
    allowUnsafeRestart: t.boolean({
      description: 'This node may restart even when workloads would lose service: given for it, or for all nodes at the start (rollout:O12).',
      resolve: (n) => n.detail.unsafeRestartAllowed !== null,
    }),
  }),
});

const RolloutType = builder.objectRef<RolloutView>('Rollout').implement({
  fields: (t) => ({
    settings: t.field({ type: RolloutSettingsType, resolve: (r) => r.settings }),
    waves: t.field({ type: [WaveType], resolve: (r) => wavesOf(r.waves) }),
    currentWave: t.int({ nullable: true, description: '1-based; null once every node is done.', resolve: (r) => r.currentWave }),
    nodesDone: t.int({ resolve: (r) => r.nodes.filter((n) => n.step.state === 'MOVED').length }),
    nodesTotal: t.int({ resolve: (r) => r.nodes.length }),
    nodes: t.field({ type: [RolloutNodeType], resolve: (r) => r.nodes }),
  }),
});

builder.objectField(OperationType, 'rollout', (t) =>
  t.field({ type: RolloutType, nullable: true, description: 'For a ROLLOUT: its settings, waves and nodes.', resolve: (o, _, ctx) => ctx.rollouts.view(o) }),
);

const PlanNodeType = builder.objectRef<RolloutPlanView['nodes'][number]>('RolloutPlanNode').implement({
  fields: (t) => ({
    nodeId: t.exposeID('nodeId'),
    wave: t.exposeInt('wave'),
    allowUnsafeRestart: t.exposeBoolean('allowUnsafeRestart', {
      description: 'The start would record an unsafe-restart override for this node (rollout:O12).',
    }),
    maintenance: t.field({
      type: PlanType,
      nullable: true,
      description: 'MAINTENANCE: what enableMaintenanceMode would do now.',
      resolve: (n) => n.maintenance,
    }),
    drain: t.field({ type: [ShardPlanType], nullable: true, description: 'DRAIN_FILL: what the drain would do now.', resolve: (n) => n.drain?.steps ?? null }),
    drainRefusal: t.string({ nullable: true, resolve: (n) => n.drain?.refusal?.message ?? null }),
  }),
});

const RolloutPlanType = builder.objectRef<RolloutPlanView>('RolloutPlan').implement({
  description: 'What startRollout would do now; nothing is changed by asking (rollout:O3).',
  fields: (t) => ({
    settings: t.field({ type: RolloutSettingsType, resolve: (p) => p.settings }),
    order: t.exposeIDList('order'),
    waves: t.field({ type: [WaveType], resolve: (p) => wavesOf(p.waves) }),
    nodes: t.field({ type: [PlanNodeType], resolve: (p) => p.nodes }),
  }),
});

/** rollout:O2: the refusals of a start, in the spec's order. */
const START_ERRORS = [NotFoundError, ConflictError, InvalidInputError];
const CONTROL_ERRORS = [NotFoundError, PreconditionFailedError];
const RESUME_ERRORS = [...CONTROL_ERRORS, InvalidInputError];

builder.queryField('rolloutPlan', (t) =>
  t.field({
    type: RolloutPlanType,
    args: { input: t.arg({ type: StartInput, required: true }) },
    errors: { types: START_ERRORS },
    resolve: (_, { input }, ctx) => typedBackendCall(() => ctx.rollouts.plan(toInput(input))),
  }),
);

const meta = (ctx: GraphQLContext, reason: string | null | undefined): RequestMeta => ({ actor: ctx.actor, reason: reason ?? null });
export const audit = <T>(ctx: GraphQLContext, action: string, args: object, reason: string | null | undefined, run: (m: RequestMeta) => Promise<T>) => {
  const m = meta(ctx, reason);
  return audited({ audit: ctx.audit, clock: ctx.clock }, { action, arguments: args, nodeId: null, meta: m }, () => run(m));
};

builder.mutationFields((t) => ({
  startRollout: t.field({
    type: OperationType,
    description: 'Maintains many nodes, wave by wave, never more than maxUnavailable out of service (spec rollouts).',
    args: {
      input: t.arg({ type: StartInput, required: true }),
      rehearsal: t.arg.id({
        required: false,
        description:
          'A SUCCEEDED rehearsal of this input (rehearseRollout): refused with RehearsalStaleError when the cluster changed since in a way that changes the plan; recorded on the rollout (Operation.rehearsal).',
      }),
    },
    errors: { types: [...START_ERRORS, PreconditionFailedError, RehearsalStaleError] },
    resolve: (_, args, ctx) =>
      audit(ctx, 'startRollout', args, args.input.reason, (m) =>
        typedBackendCall(async () => {
          const input = toInput(args.input);
          if (args.rehearsal == null) return ctx.rollouts.start(input, m);
          const record = await ctx.rehearsals.checkStillValid(String(args.rehearsal), input);
          return ctx.rollouts.start(input, m, (id) => [record(id)]);
        }),
      ),
  }),
  pauseRollout: t.field({
    type: OperationType,
    description: 'No new node step starts until resumeRollout; node steps in flight go on.',
    args: { id: t.arg.id({ required: true }), reason: t.arg.string({ required: false }) },
    errors: { types: CONTROL_ERRORS },
    resolve: (_, args, ctx) => audit(ctx, 'pauseRollout', args, args.reason, (m) => ctx.rollouts.pause(String(args.id), m)),
  }),
  resumeRollout: t.field({
    type: OperationType,
    description: 'Goes on after a pause; node steps that failed are tried again.',
    args: {
      id: t.arg.id({ required: true }),
      allowUnsafeRestart: t.arg.boolean({
        required: false,
        description:
          'The node(s) the rollout is paused on may restart even when workloads would lose service; later nodes are not covered (rollout:O12). Refused when the rollout is paused on no node and no node is named.',
      }),
      allowUnsafeRestartNodes: t.arg.idList({
        required: false,
        description: 'These nodes of the rollout may restart even when workloads would lose service (rollout:O12).',
      }),
      reason: t.arg.string({ required: false }),
    },
    errors: { types: RESUME_ERRORS },
    resolve: (_, args, ctx) =>
      audit(ctx, 'resumeRollout', args, args.reason, (m) =>
        ctx.rollouts.resumeRollout(
          String(args.id),
          { allowUnsafeRestart: args.allowUnsafeRestart ?? null, allowUnsafeRestartNodes: args.allowUnsafeRestartNodes?.map(String) ?? null },
          m,
        ),
      ),
  }),
  continueRollout: t.field({
    type: OperationType,
    description: 'restart CONFIRM: the node has been restarted; bring it back.',
    args: { id: t.arg.id({ required: true }), nodeId: t.arg.id({ required: true }), reason: t.arg.string({ required: false }) },
    errors: { types: CONTROL_ERRORS },
    resolve: (_, args, ctx) => audit(ctx, 'continueRollout', args, args.reason, () => ctx.rollouts.continueNode(String(args.id), String(args.nodeId))),
  }),
  cancelRollout: t.field({
    type: OperationType,
    description: 'The node step in flight is brought back into service (a drain cancelled and filled back, a maintenance disabled); no other starts.',
    args: { id: t.arg.id({ required: true }), reason: t.arg.string({ required: false }) },
    errors: { types: CONTROL_ERRORS },
    resolve: (_, args, ctx) => audit(ctx, 'cancelRollout', args, args.reason, (m) => ctx.rollouts.cancel(String(args.id), m)),
  }),
}));
