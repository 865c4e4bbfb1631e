import type { WorkloadChange } from '../../events/bus.ts';
import { builder } from '../builder.ts';
import { ShardType } from './shard.ts';
import { VmType } from './vm.ts';

const WorkloadKindEnum = builder.enumType('WorkloadKind', { values: ['VM', 'SHARD'] as const });

const WorkloadChangeType = builder.objectRef<WorkloadChange>('WorkloadChange').implement({
  description: 'A VM or tenant shard changed; `removed` when it disappeared from the cluster.',
  fields: (t) => ({
    kind: t.field({ type: WorkloadKindEnum, resolve: (c) => c.kind }),
    id: t.exposeID('id'),
    removed: t.exposeBoolean('removed'),
    vm: t.field({ type: VmType, nullable: true, resolve: (c) => (c.kind === 'VM' ? c.vm : null) }),
    shard: t.field({ type: ShardType, nullable: true, resolve: (c) => (c.kind === 'SHARD' ? c.shard : null) }),
  }),
});

/** Whether a change concerns a node: the VM runs there, or the shard is attached or has a secondary there. */
function touchesNode(change: WorkloadChange, nodeId: string): boolean {
  if (change.kind === 'VM') return change.vm?.nodeId === nodeId || change.vm?.tracking?.nodeName === nodeId;
  return change.shard?.attachedNodeId === nodeId || Boolean(change.shard?.secondaryNodeIds.includes(nodeId));
}

builder.subscriptionFields((t) => ({
  workloadChanged: t.field({
    type: WorkloadChangeType,
    args: {
      kind: t.arg({ type: WorkloadKindEnum, required: false }),
      nodeId: t.arg.id({ required: false, description: 'Only changes of workloads on this node (after the change).' }),
    },
    subscribe: (_, args, ctx) =>
      ctx.bus.subscribeWhere(
        'workloadChanged',
        (c) => (args.kind == null || c.kind === args.kind) && (args.nodeId == null || touchesNode(c, String(args.nodeId))),
      ),
    resolve: (c) => c,
  }),
}));
