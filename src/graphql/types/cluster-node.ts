import type { ClusterNode, NodeSide } from '../../cluster/types.ts';
import { NotFoundError, UnavailableError } from '../../domain/errors.ts';
import { typedBackendCall } from '../map-backend-error.ts';
import { builder } from '../builder.ts';
import { primeNodes } from '../loaders.ts';
import { enumValuesOf, LabelType, pageOf, toLabels } from './common.ts';
import { compareNatural } from '../../domain/compare.ts';

export const NodeAvailabilityEnum = builder.enumType('NodeAvailability', {
  values: enumValuesOf(['ACTIVE', 'WARMING_UP', 'OFFLINE'] as const),
});

export const ClusterNodeType = builder.objectRef<ClusterNode>('ClusterNode');

const NodeSideType = builder.objectRef<NodeSide>('NodeSide').implement({
  description: 'One backend’s view of a node several backends know (a hyperconverged host: a Kubernetes node that is also a pageserver).',
  fields: (t) => ({
    backend: t.exposeString('backend', { description: 'The backend: `kubevirt`, `pageserver`.' }),
    availability: t.field({ type: NodeAvailabilityEnum, resolve: (s) => s.availability }),
  }),
});

ClusterNodeType.implement({
  description: 'A cluster node: a hypervisor, a storage node (pageserver), or both.',
  fields: (t) => ({
    id: t.exposeID('id'),
    name: t.exposeString('name'),
    zone: t.exposeString('zone', { nullable: true }),
    roles: t.exposeStringList('roles'),
    availability: t.field({
      type: NodeAvailabilityEnum,
      description: 'On a hyperconverged host, the least available of its sides (see `sides`).',
      resolve: (n) => n.availability,
    }),
    sides: t.field({
      type: [NodeSideType],
      description:
        'Issue 26: on a host several backends know, each side’s availability (a pageserver lost fails its shards over, neon:H5; a Kubernetes node NotReady follows k8s:U); empty on a node one backend knows.',
      resolve: (n) => n.sides ?? [],
    }),
    cordoned: t.exposeBoolean('cordoned'),
    controlPlane: t.boolean({
      description: 'Carries the control-plane or etcd role (counts toward control-plane quorum).',
      resolve: (n) => n.roles.includes('control-plane') || n.roles.includes('etcd'),
    }),
    labels: t.field({ type: [LabelType], resolve: (n) => toLabels(n.labels) }),
  }),
});

/** Sorted like operators read them: by name, numbers in names in numeric order. */
const byName = <T extends { name: string }>(a: T, b: T) => compareNatural(a.name, b.name);

builder.queryFields((t) => ({
  nodes: t.connection(
    {
      type: ClusterNodeType,
      args: {
        zone: t.arg.string({ required: false }),
        role: t.arg.string({ required: false }),
      },
      resolve: async (_, args, ctx) => {
        const all = primeNodes(ctx.loaders, await ctx.backend.listNodes());
        const rows = all.filter((n) => (args.zone == null || n.zone === args.zone) && (args.role == null || n.roles.includes(args.role))).sort(byName);
        return pageOf(args, rows);
      },
    },
    { name: 'ClusterNodeConnection' },
    { name: 'ClusterNodeEdge' },
  ),
  node: t.field({
    type: ClusterNodeType,
    args: { id: t.arg.id({ required: true }) },
    errors: { types: [NotFoundError, UnavailableError] },
    resolve: async (_, { id }, ctx) => {
      const node = await typedBackendCall(() => ctx.loaders.node.load(String(id)));
      if (!node) throw new NotFoundError('node', String(id));
      return node;
    },
  }),
}));

builder.subscriptionFields((t) => ({
  nodeChanged: t.field({
    type: ClusterNodeType,
    description: 'Every change of a node as the backend reports it (availability, cordon, labels).',
    args: { nodeId: t.arg.id({ required: false }) },
    subscribe: (_, args, ctx) => ctx.bus.subscribeWhere('nodeChanged', (node) => args.nodeId == null || node.id === String(args.nodeId)),
    resolve: (node) => node,
  }),
}));
