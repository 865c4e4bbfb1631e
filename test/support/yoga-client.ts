import type { LockkeeperYoga } from '../../src/graphql/yoga.ts';

export type GraphQLReply<T = any> = { data?: T; errors?: { message: string; extensions?: Record<string, unknown> }[] };

/** POSTs through yoga.fetch (no socket) and returns the parsed body. */
export function yogaClient(yoga: LockkeeperYoga) {
  return async <T = any>(query: string, variables?: Record<string, unknown>): Promise<GraphQLReply<T>> => {
    const res = await yoga.fetch('http://lockkeeper.test/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query, variables }),
    });
    return res.json() as Promise<GraphQLReply<T>>;
  };
}
