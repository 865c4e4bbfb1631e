import SchemaBuilder from '@pothos/core';
import ErrorsPlugin from '@pothos/plugin-errors';
import RelayPlugin from '@pothos/plugin-relay';
import type { GraphQLContext } from './context.ts';

/** Holds no types: each module under `types/` registers its own (Pothos complex-app layout). */
export const builder = new SchemaBuilder<{
  Context: GraphQLContext;
  DefaultFieldNullability: false;
  Connection: { totalCount: number };
  Scalars: {
    DateTime: { Input: Date; Output: Date | string | number };
  };
}>({
  plugins: [ErrorsPlugin, RelayPlugin],
  defaultFieldNullability: false,
  relay: {
    clientMutationId: 'omit',
    cursorType: 'String',
    // Our cluster nodes are called nodes; Relay's global `node(id)` lookup would clash.
    nodeQueryOptions: false,
    nodesQueryOptions: false,
  },
  errors: { directResult: true },
});

builder.queryType({});
builder.mutationType({});
builder.subscriptionType({});

builder.globalConnectionField('totalCount', (t) =>
  t.int({ description: 'Rows that match, over all pages.', resolve: (conn) => conn.totalCount }),
);

builder.scalarType('DateTime', {
  description: 'An instant, as an ISO-8601 string in UTC.',
  serialize: (value) => new Date(value).toISOString(),
  parseValue: (value) => {
    const date = new Date(String(value));
    if (Number.isNaN(date.getTime())) throw new TypeError(`not a DateTime: ${String(value)}`);
    return date;
  },
});

/** Page sizes: a default small enough for people, a cap that bounds any one request. */
export const PAGE = { defaultSize: 50, maxSize: 1000 } as const;
