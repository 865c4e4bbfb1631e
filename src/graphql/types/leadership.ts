/** Which replica leads (ha:L5, ha:L6): the `leadership` query and the admin mutation `stepDown`. */
import { PreconditionFailedError } from '../../domain/errors.ts';
import type { LeadershipStatus } from '../../leadership/leadership.ts';
import { audited } from '../../operations/core/audited.ts';
import { builder } from '../builder.ts';
import type { GraphQLContext } from '../context.ts';

interface LeadershipView extends LeadershipStatus {
  leader: { address: string; epoch: number; expiresAt: Date } | null;
}

const ReplicaRoleEnum = builder.enumType('ReplicaRole', {
  description: 'LEADER runs operations and acts on the backend; STANDBY serves reads and takes over when the leader’s lease expires.',
  values: { LEADER: { value: 'leader' }, STANDBY: { value: 'standby' } } as const,
});

const LeaderType = builder.objectRef<NonNullable<LeadershipView['leader']>>('Leader').implement({
  fields: (t) => ({
    address: t.exposeString('address', { description: 'Where the leader serves.' }),
    epoch: t.exposeInt('epoch'),
    leaseExpiresAt: t.field({ type: 'DateTime', resolve: (l) => l.expiresAt, description: 'By the database’s clock.' }),
  }),
});

const LeadershipType = builder.objectRef<LeadershipView>('Leadership').implement({
  description: 'This replica’s role and the current leader (one replica alone on SQLite is always the leader).',
  fields: (t) => ({
    role: t.field({ type: ReplicaRoleEnum, resolve: (s) => s.role }),
    replica: t.exposeString('holder', { description: 'This replica’s id in the lease.' }),
    epoch: t.exposeInt('epoch', { nullable: true, description: 'The epoch this replica leads at; null on a stand-by.' }),
    leaseExpiresAt: t.field({
      type: 'DateTime',
      nullable: true,
      resolve: (s) => (s.leaseValidUntil === null ? null : new Date(s.leaseValidUntil)),
      description: 'Until when this replica counts on its lease (before the database’s expiry by a safety margin).',
    }),
    takeovers: t.exposeInt('takeovers', { description: 'Times this replica became leader.' }),
    leader: t.field({ type: LeaderType, nullable: true, resolve: (s) => s.leader }),
  }),
});

async function view(ctx: GraphQLContext, status = ctx.leadership.status()): Promise<LeadershipView> {
  return { ...status, leader: await ctx.leadership.leader() };
}

builder.queryField('leadership', (t) => t.field({ type: LeadershipType, resolve: (_, __, ctx) => view(ctx) }));

builder.mutationField('stepDown', (t) =>
  t.field({
    type: LeadershipType,
    description:
      'The leader halts its runs, releases its lease and stands by; a stand-by takes over within one renew interval and resumes them (ha:L5). Refused on a stand-by.',
    authScopes: { admin: true },
    args: { reason: t.arg.string({ required: false }) },
    errors: { types: [PreconditionFailedError] },
    resolve: (_, args, ctx) =>
      audited(
        { audit: ctx.audit, clock: ctx.clock },
        { action: 'stepDown', arguments: {}, nodeId: null, meta: { actor: ctx.actor, reason: args.reason ?? null } },
        async () => {
          const before = ctx.leadership.status();
          if (before.role !== 'leader' || before.epoch === null) {
            const leader = await ctx.leadership.leader();
            throw new PreconditionFailedError(
              'NOT_LEADER',
              before.epoch === null && before.role === 'leader'
                ? 'this gateway runs alone on SQLite: there is no stand-by to hand over to'
                : `this replica is a stand-by; the leader is ${leader ? `${leader.address} (epoch ${leader.epoch})` : 'being elected'}`,
            );
          }
          await ctx.leadership.stepDown(`stepDown by ${ctx.actor}${args.reason ? `: ${args.reason}` : ''}`);
          return view(ctx);
        },
      ),
  }),
);
