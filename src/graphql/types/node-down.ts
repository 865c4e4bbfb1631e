import { NotFoundError, PreconditionFailedError, UnavailableError } from '../../domain/errors.ts';
import { audited } from '../../operations/core/audited.ts';
import { builder } from '../builder.ts';
import { typedBackendCall } from '../map-backend-error.ts';
import { ClusterNodeType } from './cluster-node.ts';

builder.mutationField('confirmNodeDown', (t) =>
  t.field({
    type: ClusterNodeType,
    description:
      'k8s:U7: confirms that a node whose kubelet stopped reporting (Ready Unknown) is really down, not partitioned, so node-down handling may taint it out-of-service once vmMigrationTimeout has passed; its VMs then restart elsewhere. Only where the backend offers node-down handling (kubevirt plugin option nodeDown.enable).',
    args: { nodeId: t.arg.id({ required: true }), reason: t.arg.string({ required: false }) },
    errors: { types: [NotFoundError, PreconditionFailedError, UnavailableError] },
    resolve: (_, args, ctx) => {
      const nodeId = String(args.nodeId);
      const meta = { actor: ctx.actor, reason: args.reason ?? null };
      return audited({ audit: ctx.audit, clock: ctx.clock }, { action: 'confirmNodeDown', arguments: args, nodeId, meta }, async () => {
        const node = await typedBackendCall(() => ctx.backend.getNode(nodeId));
        if (!node) throw new NotFoundError('node', nodeId);
        const confirm = ctx.backend.confirmNodeDown?.bind(ctx.backend);
        if (!confirm) throw new PreconditionFailedError('NOT_SUPPORTED', `the ${ctx.backend.name} backend has no node-down handling`);
        await typedBackendCall(() => confirm(nodeId));
        return (await typedBackendCall(() => ctx.backend.getNode(nodeId))) ?? node;
      });
    },
  }),
);
