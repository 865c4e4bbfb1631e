import { renderGraphiQL } from '@graphql-yoga/render-graphiql';
import { createYoga, type YogaServerInstance } from 'graphql-yoga';
import type { Logger } from '../logger.ts';
import { createContext, type AppServices, type GraphQLContext } from './context.ts';
import { useBadRequestStatus } from './bad-request-status.ts';
import { buildSchema } from './schema.ts';

export const GRAPHQL_PATH = '/graphql';

export type LockkeeperYoga = YogaServerInstance<Record<string, unknown>, GraphQLContext>;

/**
 * The GraphQL handler shared by HTTP and WebSocket. GraphiQL is rendered from the
 * installed package (assets inlined), so it works on air-gapped clusters.
 */
export function createGraphQLHandler(services: AppServices, log: Logger): LockkeeperYoga {
  return createYoga<Record<string, unknown>, GraphQLContext>({
    schema: buildSchema({ simulation: Boolean(services.backend.simulation) }),
    graphqlEndpoint: GRAPHQL_PATH,
    context: () => createContext(services),
    renderGraphiQL,
    graphiql: { title: 'Lockkeeper', subscriptionsProtocol: 'WS' },
    landingPage: false,
    maskedErrors: true,
    plugins: [useBadRequestStatus()],
    logging: {
      debug: (...args) => log.debug({ args }, 'graphql'),
      info: (...args) => log.info({ args }, 'graphql'),
      warn: (...args) => log.warn({ args }, 'graphql'),
      error: (...args) => log.error({ args }, 'graphql'),
    },
  });
}
