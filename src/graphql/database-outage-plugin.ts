/**
 * A Pothos plugin, listed after the errors plugin (inside it): a field with a typed result
 * union whose resolver failed for want of the database returns the union's
 * `UnavailableError` naming the database (issue 27), as any other typed refusal, instead of a
 * masked "Unexpected error.". Every such union has `UnavailableError` (the builder's
 * `errors.defaultTypes`). Fields without a union get the same answer as a GraphQL error
 * (yoga.ts, maskUnlessActionable).
 */
import SchemaBuilder, { BasePlugin, type PothosOutputFieldConfig, type SchemaTypes } from '@pothos/core';
import type { GraphQLFieldResolver } from 'graphql';
import type { DatabaseAvailability } from '../store/database-availability.ts';

const pluginName = 'databaseOutage';

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  export namespace PothosSchemaTypes {
    export interface Plugins<Types extends SchemaTypes> {
      databaseOutage: DatabaseOutagePlugin<Types>;
    }
  }
}

class DatabaseOutagePlugin<Types extends SchemaTypes> extends BasePlugin<Types> {
  override wrapResolve(resolver: GraphQLFieldResolver<unknown, Types['Context'], object>, fieldConfig: PothosOutputFieldConfig<Types>) {
    if (!(fieldConfig.pothosOptions as { errors?: unknown }).errors) return resolver;
    const wrapped: GraphQLFieldResolver<unknown, Types['Context'], object> = async (parent, args, context, info) => {
      try {
        return await resolver(parent, args, context, info);
      } catch (e) {
        throw (context as { database?: DatabaseAvailability }).database?.typed(e) ?? e;
      }
    };
    return wrapped;
  }
}

SchemaBuilder.registerPlugin(pluginName, DatabaseOutagePlugin as never);

export default pluginName;
