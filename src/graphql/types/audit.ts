/** The audit log: who did what, when, why, and how it ended (viewer, like operations' startedBy). */
import { GraphQLError } from 'graphql';
import type { AuditCursor, AuditRow } from '../../store/audit-log.ts';
import { builder, PAGE } from '../builder.ts';

const AuditEntryType = builder.objectRef<AuditRow>('AuditEntry').implement({
  description: 'One state-changing call (GraphQL mutation or REST PUT/DELETE), refused ones included.',
  fields: (t) => ({
    id: t.exposeID('id'),
    at: t.field({ type: 'DateTime', resolve: (r) => r.at }),
    actor: t.exposeString('actor', { description: 'The token’s name (`anonymous` when authentication is off).' }),
    action: t.exposeString('action', { description: 'The mutation (e.g. `startNodeDrain`) or REST call (`PUT /control/v1/node/:node_id/drain`).' }),
    arguments: t.exposeString('arguments', { description: 'The arguments, as JSON.' }),
    reason: t.exposeString('reason', { nullable: true }),
    outcome: t.exposeString('outcome', { description: 'OK, the typed error’s code (e.g. CONFLICT), or ERROR.' }),
    nodeId: t.exposeID('nodeId', { nullable: true }),
  }),
});

const encodeCursor = (row: AuditRow) => Buffer.from(`${row.at.toISOString()}|${row.id}`, 'utf8').toString('base64url');

function decodeCursor(cursor: string): AuditCursor {
  const [at, id] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  const date = new Date(at ?? '');
  if (!id || Number.isNaN(date.getTime())) throw badInput(`invalid cursor ${JSON.stringify(cursor.slice(0, 60))}`);
  return { at: date, id };
}

const badInput = (message: string) => new GraphQLError(message, { extensions: { code: 'BAD_USER_INPUT', http: { status: 400 } } });

builder.queryField('auditLog', (t) =>
  t.connection(
    {
      type: AuditEntryType,
      description: `Audit rows, newest first, forward pages (first ≤ ${PAGE.maxSize}, after). Filters: node, actor (token name), action, time range [from, to).`,
      args: {
        nodeId: t.arg.id({ required: false }),
        actor: t.arg.string({ required: false }),
        action: t.arg.string({ required: false }),
        from: t.arg({ type: 'DateTime', required: false, description: 'Inclusive.' }),
        to: t.arg({ type: 'DateTime', required: false, description: 'Exclusive.' }),
      },
      resolve: async (_, args, ctx) => {
        if (args.last != null || args.before != null) throw badInput('auditLog pages forward only: use first and after');
        if (args.first != null && args.first < 0) throw badInput('first must not be negative');
        const first = Math.min(args.first ?? PAGE.defaultSize, PAGE.maxSize);
        const cursor = args.after ? decodeCursor(args.after) : null;
        const page = await ctx.audit.page(
          {
            ...(args.nodeId != null && { nodeId: String(args.nodeId) }),
            ...(args.actor != null && { actor: args.actor }),
            ...(args.action != null && { action: args.action }),
            ...(args.from != null && { from: args.from }),
            ...(args.to != null && { to: args.to }),
          },
          first,
          cursor,
        );
        const edges = page.rows.map((row) => ({ cursor: encodeCursor(row), node: row }));
        return {
          edges,
          totalCount: page.totalCount,
          pageInfo: {
            hasNextPage: page.hasNextPage,
            hasPreviousPage: cursor !== null,
            startCursor: edges[0]?.cursor ?? null,
            endCursor: edges.at(-1)?.cursor ?? null,
          },
        };
      },
    },
    { name: 'AuditEntryConnection' },
    { name: 'AuditEntryEdge' },
  ),
);
