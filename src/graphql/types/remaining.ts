import { REMAINING_KINDS, isSafeToRestart, type RemainingWorkload } from '../../domain/remaining.ts';
import { builder } from '../builder.ts';
import { ClusterNodeType } from './cluster-node.ts';
import { OperationType } from './operation.ts';

const RemainingKindEnum = builder.enumType('RemainingWorkloadKind', { values: REMAINING_KINDS });

const RemainingWorkloadType = builder.objectRef<RemainingWorkload>('RemainingWorkload').implement({
  description: 'A workload that would lose service if its node restarted now, and why it is still there.',
  fields: (t) => ({
    kind: t.field({ type: RemainingKindEnum, resolve: (w) => w.kind }),
    id: t.exposeID('id', { description: 'The VM or pod (`namespace/name`) or tenant shard id.' }),
    reason: t.exposeString('reason', {
      description:
        'VM_RUNNING, VM_MIGRATING, VM_STARTING or VM_STOPPING for VMs; for shards the reason the last operation on the node left it (e.g. SECONDARY_LAGGING, SHARD_POLICY_PAUSE), else NO_SECONDARY or NOT_CUT_OVER; ' +
        'for pods the reason the last pod drain left it (PDB_BLOCKED, EVICTION_REFUSED, EVICTION_FAILED, POD_TERMINATING, NOT_EVICTED), else POD_UNREPLICATED, POD_EMPTY_DIR, POD_DAEMONSET or POD_DAEMONSET_MISSING when the pod drain refuses it, POD_TERMINATING, or POD_EVICTABLE.',
    }),
    message: t.exposeString('message'),
  }),
});

builder.objectFields(ClusterNodeType, (t) => ({
  safeToRestart: t.boolean({
    description:
      'Nothing on the node would lose service if it restarted now: no VM running there, no shard attached there, no pod there that the pod drain would evict or refuses to evict (DaemonSet-managed and mirror pods stay by design). ' +
      'An operation that ended COMPLETED or SUCCEEDED may still leave workloads (a skipped shard is an outcome); this field is the one to check before powering off.',
    resolve: async (n, _, ctx) => isSafeToRestart(await ctx.loaders.remaining.load(n.id)),
  }),
  remainingWorkloads: t.field({
    type: [RemainingWorkloadType],
    description: 'What would lose service if the node restarted now, each with its reason; empty when safeToRestart.',
    resolve: (n, _, ctx) => ctx.loaders.remaining.load(n.id),
  }),
}));

builder.objectField(OperationType, 'remaining', (t) =>
  t.field({
    type: [RemainingWorkloadType],
    nullable: true,
    description:
      'What an ended drain or maintenance left on its node that would lose service if the node restarted (also a WORKLOADS_REMAIN event); empty when it left nothing. ' +
      'Null while it runs, for kinds that do not empty a node (fill, rollout), or when the backend could not be read at its end.',
    resolve: (o) => o.remaining,
  }),
);
