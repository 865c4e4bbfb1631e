import SchemaBuilder from '@pothos/core';
import { valueFromASTUntyped } from 'graphql';
import ErrorsPlugin from '@pothos/plugin-errors';
import RelayPlugin from '@pothos/plugin-relay';
import ScopeAuthPlugin from '@pothos/plugin-scope-auth';
import LockkeeperAuthPlugin from '../auth/pothos-plugin.ts';
import DatabaseOutagePlugin from './database-outage-plugin.ts';
import { UnavailableError } from '../domain/errors.ts';
import { scopeAllows } from '../auth/scopes.ts';
import { unauthorizedError } from '../auth/graphql-errors.ts';
import type { GraphQLContext } from './context.ts';

/** Holds no types: each module under `types/` registers its own (Pothos complex-app layout). */
export const builder = new SchemaBuilder<{
  Context: GraphQLContext;
  DefaultFieldNullability: false;
  Connection: { totalCount: number };
  AuthScopes: { viewer: boolean; operator: boolean; admin: boolean };
  Scalars: {
    DateTime: { Input: Date; Output: Date | string | number };
    JSON: { Input: unknown; Output: unknown };
  };
}>({
  // Order matters: our plugin gives every root field its scope before scope-auth reads it;
  // scope-auth runs outside the errors plugin, so a refusal is a GraphQL error, not a typed result;
  // the database-outage plugin runs inside it, so that an outage is a typed result.
  plugins: [LockkeeperAuthPlugin, ScopeAuthPlugin, ErrorsPlugin, DatabaseOutagePlugin, RelayPlugin],
  defaultFieldNullability: false,
  scopeAuth: {
    // Subscriptions are checked once, when they start (a revoked token ends them: see src/auth).
    authorizeOnSubscribe: true,
    authScopes: (ctx) => ({
      viewer: scopeAllows(ctx.identity.scope, 'viewer'),
      operator: scopeAllows(ctx.identity.scope, 'operator'),
      admin: scopeAllows(ctx.identity.scope, 'admin'),
    }),
    unauthorizedError: (_parent, ctx, info, result) => unauthorizedError(ctx.identity, info, result),
  },
  relay: {
    clientMutationId: 'omit',
    cursorType: 'String',
    // Our cluster nodes are called nodes; Relay's global `node(id)` lookup would clash.
    nodeQueryOptions: false,
    nodesQueryOptions: false,
  },
  // Every typed result can say the database (or a node) is unavailable (issue 27).
  errors: { directResult: true, defaultTypes: [UnavailableError] },
});

builder.queryType({});
builder.mutationType({});
builder.subscriptionType({});

builder.globalConnectionField('totalCount', (t) => t.int({ description: 'Rows that match, over all pages.', resolve: (conn) => conn.totalCount }));

builder.scalarType('DateTime', {
  description: 'An instant, as an ISO-8601 string in UTC.',
  serialize: (value) => new Date(value).toISOString(),
  parseValue: (value) => {
    const date = new Date(String(value));
    if (Number.isNaN(date.getTime())) throw new TypeError(`not a DateTime: ${String(value)}`);
    return date;
  },
});

builder.scalarType('JSON', {
  description: 'Any JSON value (an object, array, string, number, boolean or null), sent as itself, not as a JSON-encoded string.',
  serialize: (value) => value,
  parseValue: (value) => value,
  parseLiteral: (ast) => valueFromASTUntyped(ast),
});

/** Page sizes: a default small enough for people, a cap that bounds any one request. */
export const PAGE = { defaultSize: 50, maxSize: 1000 } as const;
