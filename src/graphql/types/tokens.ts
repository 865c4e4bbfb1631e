/** API tokens (admin): create (the token is shown once), revoke, list. See src/auth. */
import { SCOPES, type Scope } from '../../auth/scopes.ts';
import { UnknownTokenError } from '../../auth/tokens.ts';
import { ConflictError, InvalidInputError } from '../../domain/errors.ts';
import { audited } from '../../operations/core/audited.ts';
import type { TokenRecord } from '../../auth/token-store.ts';
import { builder } from '../builder.ts';
import type { GraphQLContext } from '../context.ts';
import { ErrorInterface } from './errors.ts';

const TokenScopeEnum = builder.enumType('TokenScope', {
  description:
    'viewer: queries and subscriptions; operator: + maintenance, drain, fill, cancel, strategies; admin: + configureNode, tokens, the controls of a simulated cluster.',
  values: Object.fromEntries(SCOPES.map((s) => [s.toUpperCase(), { value: s }])) as Record<Uppercase<Scope>, { value: Scope }>,
});

const ApiTokenType = builder.objectRef<TokenRecord>('ApiToken').implement({
  description: 'An API token. The token itself is shown only once, by createToken; only its SHA-256 is stored.',
  fields: (t) => ({
    id: t.exposeID('id'),
    name: t.exposeString('name', { description: 'Recorded as the actor of everything done with the token.' }),
    scope: t.field({ type: TokenScopeEnum, resolve: (r) => r.scope }),
    createdBy: t.exposeString('createdBy'),
    createdAt: t.field({ type: 'DateTime', resolve: (r) => r.createdAt }),
    lastUsedAt: t.field({ type: 'DateTime', nullable: true, description: 'Updated at most once a minute.', resolve: (r) => r.lastUsedAt }),
    expiresAt: t.field({ type: 'DateTime', nullable: true, resolve: (r) => r.expiresAt }),
    expired: t.boolean({ resolve: (r, _, ctx) => r.expiresAt !== null && r.expiresAt.getTime() <= ctx.auth.now() }),
    revoked: t.exposeBoolean('revoked'),
    revokedAt: t.field({ type: 'DateTime', nullable: true, resolve: (r) => r.revokedAt }),
    revokedBy: t.exposeString('revokedBy', { nullable: true }),
  }),
});

builder.objectType(UnknownTokenError, {
  name: 'TokenNotFoundError',
  interfaces: [ErrorInterface],
  fields: (t) => ({ token: t.exposeString('token', { description: 'The name or id asked for.' }) }),
});

const CreatedTokenType = builder.objectRef<{ token: string; record: TokenRecord }>('CreatedToken').implement({
  fields: (t) => ({
    token: t.exposeString('token', { description: 'The secret: send it as `Authorization: Bearer <token>`. Shown this once, never again.' }),
    apiToken: t.field({ type: ApiTokenType, resolve: (r) => r.record }),
  }),
});

const auditedCall = <T>(ctx: GraphQLContext, action: string, args: object, reason: string | null | undefined, run: () => Promise<T>) =>
  audited({ audit: ctx.audit, clock: ctx.clock }, { action, arguments: args, nodeId: null, meta: { actor: ctx.actor, reason: reason ?? null } }, run);

builder.mutationFields((t) => ({
  createToken: t.field({
    type: CreatedTokenType,
    description:
      'Creates a token; the result carries it once. While no token exists the server runs without authentication (loopback only): the first token turns authentication on.',
    authScopes: { admin: true },
    args: {
      name: t.arg.string({ required: true, description: 'Unique, forever (a revoked token keeps its name): 1-64 of letters, digits and . _ : @ -' }),
      scope: t.arg({ type: TokenScopeEnum, required: true }),
      expiresIn: t.arg.string({ required: false, description: 'e.g. 30d, 12h, 90m, 2w; no expiry when omitted.' }),
      reason: t.arg.string({ required: false }),
    },
    errors: { types: [InvalidInputError, ConflictError] },
    resolve: (_, args, ctx) =>
      auditedCall(ctx, 'createToken', { name: args.name, scope: args.scope, expiresIn: args.expiresIn ?? null }, args.reason, () =>
        ctx.auth.createToken({ name: args.name, scope: args.scope, expiresIn: args.expiresIn ?? null, createdBy: ctx.actor }),
      ),
  }),
  revokeToken: t.field({
    type: ApiTokenType,
    description: 'Revokes a token by name or id: refused from then on, its open subscriptions end. Revoking twice is harmless.',
    authScopes: { admin: true },
    args: { token: t.arg.string({ required: true, description: 'The token’s name or id (never the secret).' }), reason: t.arg.string({ required: false }) },
    errors: { types: [UnknownTokenError] },
    resolve: (_, args, ctx) => auditedCall(ctx, 'revokeToken', { token: args.token }, args.reason, () => ctx.auth.revokeToken(args.token, ctx.actor)),
  }),
}));

builder.queryField('tokens', (t) =>
  t.field({
    type: [ApiTokenType],
    description: 'Every token, newest first, revoked and expired ones included (admin).',
    authScopes: { admin: true },
    resolve: (_, __, ctx) => ctx.auth.store.list(),
  }),
);

const CallerType = builder.objectRef<{ name: string; scope: Scope }>('Caller').implement({
  description: 'Who is calling: the dashboard offers only the actions this scope may do (issue 31, point 3).',
  fields: (t) => ({
    name: t.exposeString('name', { description: 'The token’s name (the actor of audit rows); `anonymous` with authentication off.' }),
    scope: t.field({ type: TokenScopeEnum, resolve: (c) => c.scope }),
  }),
});

builder.queryField('caller', (t) =>
  t.field({
    type: CallerType,
    description: 'The token this request was made with (any scope).',
    authScopes: { viewer: true },
    resolve: (_, __, ctx) => ({ name: ctx.identity.name, scope: ctx.identity.scope ?? 'viewer' }),
  }),
);
