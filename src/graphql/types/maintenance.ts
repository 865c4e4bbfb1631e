import { ConflictError, InvalidInputError, NotFoundError, OperationLimitReachedError, PreconditionFailedError, UnavailableError } from '../../domain/errors.ts';
import { describeReason, nonMigratableReasons } from '../../domain/vm/migratability.ts';
import { MAINTENANCE_PHASES, type VmPlanEntry } from '../../domain/vm/types.ts';
import { POD_BLOCK_CAUSES, type PodDrainOptions, type PodPlanEntry } from '../../domain/pods/drain.ts';
import type { CancelledMigration } from '../../cluster/node-maintenance.ts';
import { audited } from '../../operations/core/audited.ts';
import { podDrainRefusal } from '../../operations/maintenance/pod-drain-plan.ts';
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

const VmActionEnum = builder.enumType('VmMaintenanceAction', {
  values: {
    MIGRATE: { value: 'MIGRATE' },
    STOP: { value: 'STOP' },
    EVICT: { value: 'EVICT', description: 'k8s:E5: eviction strategy None: its launcher pod is evicted; its run strategy decides a restart.' },
    EXTERNAL: { value: 'EXTERNAL', description: 'k8s:E5: eviction strategy External: left to an outside controller; ERROR at the deadline if it stays.' },
    NONE: { value: 'NONE' },
  } as const,
});
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
    evictionStrategy: t.string({
      nullable: true,
      description: 'k8s:E1: KubeVirt’s effective eviction strategy (VMI, else KubeVirt CR); null when nothing sets it (then Migrate live-migrates, k8s:E5).',
      resolve: (e) => e.evictionStrategy,
    }),
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

const PodVerdictEnum = builder.enumType('PodDrainAction', {
  values: {
    EVICT: { value: 'EVICT', description: 'Evicted through the Eviction API (PDBs honoured, k8s:K5).' },
    SKIP: { value: 'SKIP', description: 'Left on the node (DaemonSet, mirror pod, long deleting, k8s:K2).' },
    ERROR: { value: 'ERROR', description: 'Blocks the drain until its option allows it (k8s:K3).' },
  } as const,
});

const PodPlanType = builder.objectRef<PodPlanEntry>('PodDrainPlanEntry').implement({
  description: 'What the pod drain would do to one pod of the node (k8s:K1–K3).',
  fields: (t) => ({
    id: t.id({ description: 'namespace/name', resolve: (p) => `${p.namespace}/${p.name}` }),
    namespace: t.exposeString('namespace'),
    name: t.exposeString('name'),
    action: t.field({ type: PodVerdictEnum, resolve: (p) => p.verdict.action }),
    reason: t.string({
      nullable: true,
      description: 'SKIP: DELETING, DAEMONSET, MIRROR, HARVESTER_SHUTDOWN_VM; ERROR: DAEMONSET, DAEMONSET_MISSING, EMPTY_DIR, UNREPLICATED.',
      resolve: (p) => (p.verdict.action === 'SKIP' ? p.verdict.why : p.verdict.action === 'ERROR' ? p.verdict.cause : null),
    }),
    override: t.string({
      nullable: true,
      description: 'ERROR: the podDrain option that allows it.',
      resolve: (p) => (p.verdict.action === 'ERROR' ? POD_BLOCK_CAUSES[p.verdict.cause].override : null),
    }),
    warning: t.string({ nullable: true, resolve: (p) => (p.verdict.action === 'ERROR' ? null : p.verdict.warning) }),
  }),
});

const PodDrainOptionsType = builder.objectRef<PodDrainOptions>('PodDrainOptions').implement({
  description: 'k8s:K4: the pod drain’s options in force.',
  fields: (t) => ({
    ignoreDaemonSets: t.exposeBoolean('ignoreDaemonSets'),
    deleteEmptyDirData: t.exposeBoolean('deleteEmptyDirData'),
    force: t.exposeBoolean('force', { description: 'Evict pods that no controller manages.' }),
    gracePeriodSeconds: t.exposeInt('gracePeriodSeconds'),
    skipWaitForDeleteTimeoutSeconds: t.exposeInt('skipWaitForDeleteTimeoutSeconds'),
    podSelector: t.exposeString('podSelector'),
  }),
});

const PodDrainInput = builder.inputType('PodDrainInput', {
  description: 'k8s:K4: overrides of the pod drain’s options (config operations.podDrain) for this request.',
  fields: (t) => ({
    ignoreDaemonSets: t.boolean({ required: false }),
    deleteEmptyDirData: t.boolean({ required: false }),
    force: t.boolean({ required: false, description: 'Evict pods that no controller manages (kubectl --force).' }),
    gracePeriodSeconds: t.int({ required: false, description: '−1: each pod’s own; 0: at once; > 0: overrides the pod’s own (k8s:K7).' }),
    skipWaitForDeleteTimeoutSeconds: t.int({ required: false }),
    podSelector: t.string({ required: false }),
  }),
});

type PodDrainArg = { [K in keyof PodDrainOptions]?: PodDrainOptions[K] | null } | null | undefined;
/** The input as overrides (absent and null fields keep the configured value); bad values are typed errors. */
function podDrainOverrides(input: PodDrainArg): Partial<PodDrainOptions> | undefined {
  if (!input) return undefined;
  if (input.gracePeriodSeconds != null && input.gracePeriodSeconds < -1)
    throw new InvalidInputError(
      'podDrain.gracePeriodSeconds',
      String(input.gracePeriodSeconds),
      'gracePeriodSeconds must be −1 (the pod’s own), 0 or positive',
    );
  if (input.skipWaitForDeleteTimeoutSeconds != null && input.skipWaitForDeleteTimeoutSeconds < 0)
    throw new InvalidInputError('podDrain.skipWaitForDeleteTimeoutSeconds', String(input.skipWaitForDeleteTimeoutSeconds), 'must be 0 or positive');
  return Object.fromEntries(Object.entries(input).filter(([, v]) => v != null)) as Partial<PodDrainOptions>;
}

const DelegateType = builder.objectRef<{ controller: string; reason: string }>('MaintenanceDelegate').implement({
  description: 'k8s:H9: Harvester’s controllers do the work; Lockkeeper requests and follows.',
  fields: (t) => ({ controller: t.exposeString('controller'), reason: t.exposeString('reason') }),
});

export const PlanType = builder.objectRef<MaintenancePlanView>('MaintenancePlan').implement({
  description: 'What enableMaintenanceMode would do now; nothing is changed by asking.',
  fields: (t) => ({
    nodeId: t.exposeID('nodeId'),
    force: t.exposeBoolean('force'),
    accepted: t.boolean({
      description: 'Enable would be accepted.',
      resolve: (p) => p.refusals.length === 0 && p.shardRefusal === null && !p.pods?.blockers.length,
    }),
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
        ...(p.pods?.blockers.length
          ? [
              {
                code: 'POD_DRAIN_BLOCKED' as const,
                message: podDrainRefusal(p.nodeId, p.pods).message,
                blockers: podDrainRefusal(p.nodeId, p.pods).blockers,
              },
            ]
          : []),
      ],
    }),
    shards: t.field({
      type: [ShardPlanType],
      description: 'On a node that also holds tenant shards: their drain, under the same operation.',
      resolve: (p) => p.shards,
    }),
    vms: t.field({ type: [PlanEntryType], resolve: (p) => p.vms }),
    pods: t.field({
      type: [PodPlanType],
      description:
        'k8s:K1–K3: the node’s other pods (virt-launcher pods are handled per VM) and what the drain does to each; empty when the backend runs no pods.',
      resolve: (p) => p.pods?.pods ?? [],
    }),
    podDrainOptions: t.field({ type: PodDrainOptionsType, nullable: true, resolve: (p) => p.podDrainOptions }),
    delegatedTo: t.field({
      type: DelegateType,
      nullable: true,
      description: 'k8s:H9: set on Harvester clusters, where Harvester’s controllers do the work; null when Lockkeeper acts itself.',
      resolve: (p) => p.delegate,
    }),
    warnings: t.exposeStringList('warnings'),
    deadlineSeconds: t.int({ description: 'The deadline enable would set (vm:M5, vm:M7).', resolve: (p) => Math.ceil(p.deadlineMs / 1000) }),
  }),
});

builder.queryField('maintenancePlan', (t) =>
  t.field({
    type: PlanType,
    args: {
      nodeId: t.arg.id({ required: true }),
      force: t.arg.boolean({ required: false, defaultValue: false }),
      podDrain: t.arg({ type: PodDrainInput, required: false }),
      deadlineSeconds: t.arg.int({ required: false, description: 'The deadline enable would be given; absent: the default (vm:M5, vm:M7).' }),
    },
    resolve: (_, args, ctx) =>
      typedBackendCall(() =>
        ctx.maintenance.plan(
          String(args.nodeId),
          args.force ?? false,
          podDrainOverrides(args.podDrain),
          args.deadlineSeconds != null ? args.deadlineSeconds * 1000 : undefined,
        ),
      ),
  }),
);

const FailureType = builder.objectRef<{ vmId: string; message: string }>('VmRestartFailure').implement({
  fields: (t) => ({ vmId: t.exposeID('vmId'), message: t.exposeString('message') }),
});

const CancelledMigrationType = builder.objectRef<CancelledMigration>('CancelledMigration').implement({
  description: 'k8s:C9: a migration of Lockkeeper’s that disable cancelled, and where its VM is now (k8s:C3: read, not assumed).',
  fields: (t) => ({
    vmId: t.exposeID('vmId'),
    migration: t.exposeString('migration', { description: 'The VirtualMachineInstanceMigration deleted.' }),
    nodeId: t.exposeID('nodeId', { nullable: true, description: 'Where the VM runs after the cancel; null when it does not run.' }),
  }),
});

const DisableResultType = builder.objectRef<DisableResult>('DisableMaintenanceResult').implement({
  fields: (t) => ({
    cancelledMigrations: t.field({ type: [CancelledMigrationType], resolve: (r) => r.cancelledMigrations }),
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
      deadlineSeconds: t.arg.int({
        required: false,
        description:
          'Default: operations.maintenanceDeadlineMs (30 min), grown to what KubeVirt lets the largest VM’s migration take plus its wait for a slot (vm:M7). A given deadline is kept; the plan and the operation’s warnings name the VMs it may cut.',
      }),
      podDrain: t.arg({ type: PodDrainInput, required: false, description: 'k8s:K4: this request’s pod drain options.' }),
    },
    errors: { types: [NotFoundError, UnavailableError, ConflictError, OperationLimitReachedError, PreconditionFailedError, InvalidInputError] },
    resolve: (_, args, ctx) =>
      audit(ctx, 'enableMaintenanceMode', args, String(args.nodeId), args.reason, (m) => {
        if (args.deadlineSeconds != null && args.deadlineSeconds <= 0)
          throw new InvalidInputError('deadlineSeconds', String(args.deadlineSeconds), 'deadlineSeconds must be positive');
        return typedBackendCall(() =>
          ctx.maintenance.enable(
            String(args.nodeId),
            {
              force: args.force ?? false,
              ...(args.deadlineSeconds != null && { deadlineMs: args.deadlineSeconds * 1000 }),
              podDrain: podDrainOverrides(args.podDrain),
            },
            m,
          ),
        );
      }),
  }),
  disableMaintenanceMode: t.field({
    type: DisableResultType,
    description: 'Uncordons the node, ends its maintenance and restarts the VMs tracked to restart (vm:D1–D3).',
    args: {
      nodeId: t.arg.id({ required: true }),
      reason: t.arg.string({ required: false }),
      force: t.arg.boolean({
        required: false,
        defaultValue: false,
        description:
          'Record the VM actions and shard cut-overs in flight as ABANDONED with their last known state (each step’s `recheck` reads where its workload is now) instead of leaving them MOVING under the ended operation.',
      }),
    },
    errors: { types: [NotFoundError, PreconditionFailedError, UnavailableError], directResult: true },
    resolve: (_, args, ctx) =>
      audit(ctx, 'disableMaintenanceMode', args, String(args.nodeId), args.reason, (m) =>
        typedBackendCall(() => ctx.maintenance.disable(String(args.nodeId), m, { force: args.force === true })),
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
