import { ConflictError, InvalidInputError, NotFoundError, PreconditionFailedError, UnavailableError } from '../../domain/errors.ts';
import { describeReason, nonMigratableReasons } from '../../domain/vm/migratability.ts';
import { MAINTENANCE_PHASES, type VmPlanEntry } from '../../domain/vm/types.ts';
import { audited } from '../../operations/core/audited.ts';
import type { DisableResult, MaintenancePlanView } from '../../operations/maintenance/engine.ts';
import type { MaintenanceState } from '../../store/maintenance-state-store.ts';
import type { RequestMeta } from '../../domain/operations.ts';
import { builder } from '../builder.ts';
import { typedBackendCall } from '../map-backend-error.ts';
import type { GraphQLContext } from '../context.ts';
import { ClusterNodeType } from './cluster-node.ts';
import { BlockerType } from './errors.ts';
import { OperationType } from './operation.ts';
import { MaintenanceStrategyEnum, VmType } from './vm.ts';

const MaintenancePhaseEnum = builder.enumType('MaintenancePhase', { values: MAINTENANCE_PHASES });

const MaintenanceType = builder.objectRef<MaintenanceState & { nodeId: string }>('NodeMaintenance').implement({
  description: 'A node’s VM maintenance: phase, deadline, and the operation driving it.',
  fields: (t) => ({
    phase: t.field({ type: MaintenancePhaseEnum, resolve: (m) => m.phase }),
    deadline: t.field({ type: 'DateTime', nullable: true, description: 'When DRAINING/EVACUATING turn into ERROR (vm:M5).', resolve: (m) => m.deadline }),
    force: t.exposeBoolean('force'),
    reason: t.exposeString('reason', { nullable: true }),
    operation: t.field({ type: OperationType, nullable: true, resolve: (m, _, ctx) => ctx.maintenance.activeOperation(m.nodeId) }),
  }),
});

builder.objectFields(ClusterNodeType, (t) => ({
  maintenancePhase: t.field({
    type: MaintenancePhaseEnum,
    nullable: true,
    description: 'Null when the node is not in maintenance.',
    resolve: (n, _, ctx) => ctx.maintenance.stateOf(n.id)?.phase ?? null,
  }),
  maintenance: t.field({
    type: MaintenanceType,
    nullable: true,
    resolve: (n, _, ctx) => {
      const state = ctx.maintenance.stateOf(n.id);
      return state ? { ...state, nodeId: n.id } : null;
    },
  }),
}));

builder.objectFields(VmType, (t) => ({
  nonMigratableReasons: t.stringList({
    description: 'Why the VM cannot be live-migrated off its node now (vm:N1–N3); empty when it can, or when it is not running.',
    resolve: async (vm, _, ctx) =>
      vm.nodeId ? nonMigratableReasons(vm, vm.nodeId, ctx.maintenance.maintNodes(await ctx.loaders.allNodes())).map(describeReason) : [],
  }),
  migratable: t.boolean({
    description: 'Running and live-migratable off its node (no vm:N1–N3 reason).',
    resolve: async (vm, _, ctx) =>
      vm.nodeId !== null && nonMigratableReasons(vm, vm.nodeId, ctx.maintenance.maintNodes(await ctx.loaders.allNodes())).length === 0,
  }),
}));

const VmActionEnum = builder.enumType('VmMaintenanceAction', { values: ['MIGRATE', 'STOP', 'NONE'] as const });
const VmRestartEnum = builder.enumType('VmMaintenanceRestart', {
  values: { NEVER: { value: 'NEVER' }, AFTER_ENABLE: { value: 'AFTER_ENABLE' }, AFTER_DISABLE: { value: 'AFTER_DISABLE' } } as const,
});

const PlanEntryType = builder.objectRef<VmPlanEntry>('VmMaintenancePlanEntry').implement({
  description: 'What enable would do to one VM.',
  fields: (t) => ({
    vmId: t.exposeID('vmId'),
    vm: t.field({ type: VmType, nullable: true, resolve: (e, _, ctx) => ctx.loaders.vm.load(e.vmId) }),
    strategy: t.field({ type: MaintenanceStrategyEnum, resolve: (e) => e.strategy }),
    labelled: t.exposeBoolean('labelled'),
    labelValid: t.exposeBoolean('labelValid'),
    action: t.field({ type: VmActionEnum, resolve: (e) => e.action.kind }),
    targetNodeId: t.id({ nullable: true, description: 'Where a MIGRATE goes.', resolve: (e) => (e.action.kind === 'MIGRATE' ? e.action.targetNodeId : null) }),
    restart: t.field({
      type: VmRestartEnum,
      nullable: true,
      description: 'For STOP: when the VM runs again.',
      resolve: (e) => (e.action.kind === 'STOP' ? e.action.restart : null),
    }),
    restartNodeId: t.id({
      nullable: true,
      description: 'For STOP with a restart: where it is expected to run again.',
      resolve: (e) => (e.action.kind === 'STOP' ? e.action.restartNodeId : null),
    }),
    tracked: t.boolean({ description: 'Restart tracking is recorded before the stop (vm:T1).', resolve: (e) => e.action.kind === 'STOP' && e.action.track }),
    forced: t.boolean({ resolve: (e) => e.action.kind === 'STOP' && e.action.forced }),
    noActionReason: t.string({ nullable: true, resolve: (e) => (e.action.kind === 'NONE' ? e.action.why : null) }),
    blocksEnable: t.exposeBoolean('blocksEnable', { description: 'This VM alone makes enable fail without force (vm:N4).' }),
    nonMigratableReasons: t.stringList({ resolve: (e) => e.nonMigratable.map(describeReason) }),
  }),
});

type RefusalView = { code: string; message: string; blockers: { id: string; reasons: string[] }[] };
const RefusalType = builder.objectRef<RefusalView>('MaintenanceRefusal').implement({
  fields: (t) => ({
    code: t.exposeString('code'),
    message: t.exposeString('message'),
    blockers: t.field({ type: [BlockerType], resolve: (r) => r.blockers }),
  }),
});

export const ShardPlanType = builder.objectRef<MaintenancePlanView['shards'][number]>('ShardMaintenancePlanEntry').implement({
  description: 'What enable would do to one tenant shard attached to the node (storage drain rules storage:D1–D3).',
  fields: (t) => ({
    shardId: t.exposeID('workloadId'),
    action: t.string({ description: 'CUT_OVER or SKIP.', resolve: (s) => (s.state === 'SKIPPED' ? 'SKIP' : 'CUT_OVER') }),
    toNodeId: t.exposeID('toNodeId', { nullable: true, description: 'The secondary it would be cut over to.' }),
    skipReason: t.string({ nullable: true, resolve: (s) => (s.state === 'SKIPPED' ? s.reason : null) }),
  }),
});

export const PlanType = builder.objectRef<MaintenancePlanView>('MaintenancePlan').implement({
  description: 'What enableMaintenanceMode would do now; nothing is changed by asking.',
  fields: (t) => ({
    nodeId: t.exposeID('nodeId'),
    force: t.exposeBoolean('force'),
    accepted: t.boolean({ description: 'Enable would be accepted.', resolve: (p) => p.refusals.length === 0 && p.shardRefusal === null }),
    refusals: t.field({
      type: [RefusalType],
      resolve: (p) => [
        ...p.refusals.map((r) => ({
          ...r,
          blockers:
            r.code === 'NON_MIGRATABLE_VMS'
              ? p.vms.filter((v) => v.blocksEnable).map((v) => ({ id: v.vmId, reasons: v.nonMigratable.map(describeReason) }))
              : [],
        })),
        ...(p.shardRefusal ? [{ code: 'SHARD_DRAIN_REFUSED' as const, message: p.shardRefusal.message, blockers: [] }] : []),
      ],
    }),
    shards: t.field({
      type: [ShardPlanType],
      description: 'On a node that also holds tenant shards: their drain, under the same operation.',
      resolve: (p) => p.shards,
    }),
    vms: t.field({ type: [PlanEntryType], resolve: (p) => p.vms }),
    warnings: t.exposeStringList('warnings'),
  }),
});

builder.queryField('maintenancePlan', (t) =>
  t.field({
    type: PlanType,
    args: { nodeId: t.arg.id({ required: true }), force: t.arg.boolean({ required: false, defaultValue: false }) },
    resolve: (_, args, ctx) => typedBackendCall(() => ctx.maintenance.plan(String(args.nodeId), args.force ?? false)),
  }),
);

const FailureType = builder.objectRef<{ vmId: string; message: string }>('VmRestartFailure').implement({
  fields: (t) => ({ vmId: t.exposeID('vmId'), message: t.exposeString('message') }),
});

const DisableResultType = builder.objectRef<DisableResult>('DisableMaintenanceResult').implement({
  fields: (t) => ({
    node: t.field({ type: ClusterNodeType, resolve: (r) => r.node }),
    fillOperation: t.field({
      type: OperationType,
      nullable: true,
      description: 'The fill that brings a hyperconverged node’s shards back.',
      resolve: async (r, _, ctx) => (r.fillOperationId ? ctx.operations.getOperation(r.fillOperationId) : null),
    }),
    restartedVmIds: t.exposeIDList('restarted'),
    trackingClearedVmIds: t.exposeIDList('trackingCleared'),
    failures: t.field({ type: [FailureType], description: 'VMs that could not be restarted (the others were, vm:D2).', resolve: (r) => r.failures }),
    warnings: t.exposeStringList('warnings'),
  }),
});

const meta = (ctx: GraphQLContext, reason: string | null | undefined): RequestMeta => ({ actor: ctx.actor, reason: reason ?? null });
const audit = <T>(
  ctx: GraphQLContext,
  action: string,
  args: object,
  nodeId: string | null,
  reason: string | null | undefined,
  run: (m: RequestMeta) => Promise<T>,
) => {
  const m = meta(ctx, reason);
  return audited({ audit: ctx.audit, clock: ctx.clock }, { action, arguments: args, nodeId, meta: m }, () => run(m));
};

builder.mutationFields((t) => ({
  enableMaintenanceMode: t.field({
    type: OperationType,
    description: 'Validates, then drains the node of its VMs by their strategies (vm:M1–M4).',
    args: {
      nodeId: t.arg.id({ required: true }),
      force: t.arg.boolean({ required: false, defaultValue: false, description: 'Stop labelled and non-migratable VMs instead of refusing (vm:F1–F3).' }),
      reason: t.arg.string({ required: false }),
      deadlineSeconds: t.arg.int({ required: false, description: 'Default 30 min (config operations.maintenanceDeadlineMs).' }),
    },
    errors: { types: [NotFoundError, UnavailableError, ConflictError, PreconditionFailedError, InvalidInputError] },
    resolve: (_, args, ctx) =>
      audit(ctx, 'enableMaintenanceMode', args, String(args.nodeId), args.reason, (m) => {
        if (args.deadlineSeconds != null && args.deadlineSeconds <= 0)
          throw new InvalidInputError('deadlineSeconds', String(args.deadlineSeconds), 'deadlineSeconds must be positive');
        return typedBackendCall(() =>
          ctx.maintenance.enable(
            String(args.nodeId),
            { force: args.force ?? false, ...(args.deadlineSeconds != null && { deadlineMs: args.deadlineSeconds * 1000 }) },
            m,
          ),
        );
      }),
  }),
  disableMaintenanceMode: t.field({
    type: DisableResultType,
    description: 'Uncordons the node, ends its maintenance and restarts the VMs tracked to restart (vm:D1–D3).',
    args: { nodeId: t.arg.id({ required: true }), reason: t.arg.string({ required: false }) },
    errors: { types: [NotFoundError, PreconditionFailedError, UnavailableError], directResult: true },
    resolve: (_, args, ctx) =>
      audit(ctx, 'disableMaintenanceMode', args, String(args.nodeId), args.reason, (m) =>
        typedBackendCall(() => ctx.maintenance.disable(String(args.nodeId), m)),
      ),
  }),
  clearMaintenanceError: t.field({
    type: ClusterNodeType,
    description: 'ERROR → not in maintenance: uncordoned, tracking kept (vm:M5).',
    args: { nodeId: t.arg.id({ required: true }), reason: t.arg.string({ required: false }) },
    errors: { types: [NotFoundError, PreconditionFailedError, UnavailableError] },
    resolve: (_, args, ctx) =>
      audit(ctx, 'clearMaintenanceError', args, String(args.nodeId), args.reason, (m) =>
        typedBackendCall(() => ctx.maintenance.clearError(String(args.nodeId), m)),
      ),
  }),
}));

export const LabelInput = builder.inputType('LabelInput', { fields: (t) => ({ key: t.string({ required: true }), value: t.string({ required: true }) }) });
const SelectorInput = builder.inputType('VmSelectorInput', {
  fields: (t) => ({
    namespace: t.string({ required: false }),
    labels: t.field({ type: [LabelInput], required: false, description: 'Every pair must match (like kubectl -l a=b,c=d).' }),
  }),
});

const SetStrategyResult = builder.objectRef<{ vms: import('../../cluster/types.ts').ClusterVm[] }>('SetVmMaintenanceStrategyResult').implement({
  fields: (t) => ({ vms: t.field({ type: [VmType], description: 'Every VM that now carries the value.', resolve: (r) => r.vms }) }),
});

builder.mutationField('setVmMaintenanceStrategy', (t) =>
  t.field({
    type: SetStrategyResult,
    description:
      'Sets the label harvesterhci.io/maintain-mode-strategy on one VM or on every VM a selector matches (vm:V3). `strategy` is the exact label value — Migrate, ShutdownAndRestartAfterEnable, ShutdownAndRestartAfterDisable or Shutdown — or null to remove it (= Migrate).',
    args: {
      vmId: t.arg.id({ required: false }),
      selector: t.arg({ type: SelectorInput, required: false }),
      strategy: t.arg.string({ required: false }),
      reason: t.arg.string({ required: false }),
    },
    errors: { types: [NotFoundError, InvalidInputError], directResult: true },
    resolve: (_, args, ctx) =>
      audit(ctx, 'setVmMaintenanceStrategy', args, null, args.reason, async () => {
        const selector = args.selector
          ? {
              ...(args.selector.namespace != null && { namespace: args.selector.namespace }),
              ...(args.selector.labels && { labels: Object.fromEntries(args.selector.labels.map((l) => [l.key, l.value])) }),
            }
          : undefined;
        const vms = await ctx.maintenance.setStrategy(
          { ...(args.vmId != null && { vmId: String(args.vmId) }), ...(selector && { selector }) },
          args.strategy ?? null,
        );
        return { vms };
      }),
  }),
);
