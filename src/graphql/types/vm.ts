import {
  RUN_STRATEGIES,
  VM_STATUSES,
  type ClusterVm,
  type NodeSelectorTerm,
  type VmMaintenanceTracking,
  type VmVolume,
  type VolumeReplica,
} from '../../cluster/types.ts';
import { NotFoundError, UnavailableError } from '../../domain/errors.ts';
import { typedBackendCall } from '../map-backend-error.ts';
import { effectiveStrategy, MAINTENANCE_STRATEGIES } from '../../domain/vm/strategy.ts';
import { builder } from '../builder.ts';
import { ClusterNodeType } from './cluster-node.ts';
import { enumValuesOf, LabelType, pageFrom, pageOf, toLabels } from './common.ts';
import { compareNatural } from '../../domain/compare.ts';

const RunStrategyEnum = builder.enumType('RunStrategy', { values: enumValuesOf(RUN_STRATEGIES) });
const VmStatusEnum = builder.enumType('VmStatus', { values: enumValuesOf(VM_STATUSES) });
export const MaintenanceStrategyEnum = builder.enumType('MaintenanceStrategy', {
  description: 'What maintenance does to a VM (label harvesterhci.io/maintain-mode-strategy).',
  values: enumValuesOf(MAINTENANCE_STRATEGIES),
});

const ReplicaType = builder.objectRef<VolumeReplica>('VolumeReplica').implement({
  fields: (t) => ({
    node: t.field({ type: ClusterNodeType, nullable: true, resolve: (r, _, ctx) => ctx.loaders.node.load(r.nodeId) }),
    nodeId: t.exposeID('nodeId'),
    healthy: t.exposeBoolean('healthy'),
  }),
});

const VolumeType = builder.objectRef<VmVolume>('VmVolume').implement({
  fields: (t) => ({
    name: t.exposeString('name'),
    replicas: t.field({ type: [ReplicaType], resolve: (v) => v.replicas }),
    healthyReplicas: t.int({ resolve: (v) => v.replicas.filter((r) => r.healthy).length }),
  }),
});

const RequirementType = builder.objectRef<NodeSelectorTerm['matchExpressions'][number]>('NodeSelectorRequirement').implement({
  fields: (t) => ({
    key: t.exposeString('key'),
    operator: t.exposeString('operator'),
    values: t.exposeStringList('values'),
  }),
});

const TermType = builder.objectRef<NodeSelectorTerm>('NodeSelectorTerm').implement({
  fields: (t) => ({ matchExpressions: t.field({ type: [RequirementType], resolve: (term) => term.matchExpressions }) }),
});

const TrackingType = builder.objectRef<VmMaintenanceTracking>('VmMaintenanceTracking').implement({
  description: 'Recorded before a maintenance stop so the VM is restarted as its strategy said.',
  fields: (t) => ({
    nodeName: t.exposeString('nodeName'),
    strategy: t.exposeString('strategy', { description: 'The strategy in force when the VM was stopped.' }),
    savedRunStrategy: t.field({ type: RunStrategyEnum, nullable: true, resolve: (tr) => tr.savedRunStrategy }),
  }),
});

export const VmType = builder.objectRef<ClusterVm>('VirtualMachine');

VmType.implement({
  fields: (t) => ({
    id: t.exposeID('id', { description: '`namespace/name`.' }),
    namespace: t.exposeString('namespace'),
    name: t.exposeString('name'),
    node: t.field({
      type: ClusterNodeType,
      nullable: true,
      description: 'Where the VM runs; null while it is stopped.',
      resolve: (vm, _, ctx) => (vm.nodeId ? ctx.loaders.node.load(vm.nodeId) : null),
    }),
    runStrategy: t.field({ type: RunStrategyEnum, resolve: (vm) => vm.runStrategy }),
    status: t.field({ type: VmStatusEnum, resolve: (vm) => vm.status }),
    maintenanceStrategy: t.field({
      type: MaintenanceStrategyEnum,
      description: 'The effective strategy: MIGRATE when the label is unset or invalid.',
      resolve: (vm) => effectiveStrategy(vm.maintenanceStrategyLabel).strategy,
    }),
    maintenanceStrategyLabel: t.exposeString('maintenanceStrategyLabel', {
      nullable: true,
      description: 'The raw label value, as set on the VM (may be invalid).',
    }),
    maintenanceStrategyLabelValid: t.boolean({
      resolve: (vm) => effectiveStrategy(vm.maintenanceStrategyLabel).labelValid,
    }),
    labels: t.field({ type: [LabelType], resolve: (vm) => toLabels(vm.labels) }),
    volumes: t.field({ type: [VolumeType], resolve: (vm) => vm.volumes }),
    liveMigratable: t.exposeBoolean('liveMigratable', { description: "The backend's own verdict (KubeVirt: LiveMigratable)." }),
    liveMigratableReason: t.exposeString('liveMigratableReason', { nullable: true }),
    nodeSelector: t.field({ type: [LabelType], resolve: (vm) => toLabels(vm.nodeSelector) }),
    requiredNodeAffinity: t.field({ type: [TermType], resolve: (vm) => vm.requiredNodeAffinity }),
    tracking: t.field({ type: TrackingType, nullable: true, resolve: (vm) => vm.tracking }),
  }),
});

builder.queryFields((t) => ({
  vms: t.connection(
    {
      type: VmType,
      description: 'VMs sorted by namespace/name.',
      args: {
        nodeId: t.arg.id({ required: false }),
        namespace: t.arg.string({ required: false }),
        zone: t.arg.string({ required: false, description: 'Only VMs running on a node in this zone.' }),
        strategy: t.arg({ type: MaintenanceStrategyEnum, required: false }),
      },
      resolve: async (_, args, ctx) => {
        // A backend without VMs (the pageserver plugin) has none to list: an empty page, not an error.
        if (!ctx.backend.capabilities.vms) return pageOf(args, []);
        const filter = {
          ...(args.nodeId != null && { nodeId: String(args.nodeId) }),
          ...(args.namespace != null && { namespace: args.namespace }),
        };
        const { backend } = ctx;
        if (backend.pageVms && args.strategy == null && args.zone == null) return pageFrom(args, (page) => backend.pageVms!(filter, page));
        let rows = await backend.listVms(filter);
        if (args.strategy != null) rows = rows.filter((vm) => effectiveStrategy(vm.maintenanceStrategyLabel).strategy === args.strategy);
        if (args.zone != null) {
          const nodes = await ctx.loaders.node.loadMany([...new Set(rows.flatMap((vm) => (vm.nodeId ? [vm.nodeId] : [])))]);
          const inZone = new Set(nodes.flatMap((n) => (n && !(n instanceof Error) && n.zone === args.zone ? [n.id] : [])));
          rows = rows.filter((vm) => vm.nodeId !== null && inZone.has(vm.nodeId));
        }
        rows.sort((a, b) => compareNatural(a.id, b.id));
        return pageOf(args, rows);
      },
    },
    { name: 'VirtualMachineConnection' },
    { name: 'VirtualMachineEdge' },
  ),
  vm: t.field({
    type: VmType,
    args: { id: t.arg.id({ required: true, description: '`namespace/name`.' }) },
    errors: { types: [NotFoundError, UnavailableError] },
    resolve: async (_, { id }, ctx) => {
      const vm = await typedBackendCall(() => ctx.loaders.vm.load(String(id)));
      if (!vm) throw new NotFoundError('vm', String(id));
      return vm;
    },
  }),
}));
