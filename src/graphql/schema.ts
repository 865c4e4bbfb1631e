import { GraphQLObjectType, GraphQLSchema } from 'graphql';
import { builder } from './builder.ts';
import './types/errors.ts';
import './types/common.ts';
import './types/cluster-node.ts';
import './types/vm.ts';
import './types/shard.ts';
import './types/workload-change.ts';
import './types/operation.ts';
import './types/storage-mutations.ts';
import './types/neon-controls.ts';
import './types/maintenance.ts';
import './types/node-down.ts';
import './types/remaining.ts';
import './types/rollout.ts';
import './types/rehearsal.ts';
import './types/event-log.ts';
import './types/tokens.ts';
import './types/audit.ts';
import './types/leadership.ts';
import { SIMULATION_TYPE_PREFIX } from './types/simulation.ts';

export interface SchemaOptions {
  /** Include the `simulation` controls (only when the backend is simulated). */
  simulation: boolean;
}

let fullSchema: GraphQLSchema | undefined;

function withoutField(type: GraphQLObjectType, field: string): GraphQLObjectType | undefined {
  const config = type.toConfig();
  const { [field]: _dropped, ...fields } = config.fields;
  return Object.keys(fields).length ? new GraphQLObjectType({ ...config, fields }) : undefined;
}

/**
 * The schema for a backend. Pothos builds one schema; without a simulator the
 * `simulation` fields and every `Simulation…` type are taken out, so real backends
 * never show them (the field is absent, not merely refused).
 */
export function buildSchema(options: SchemaOptions): GraphQLSchema {
  // Pothos sorts it already (lexicographically, unless told `sortSchema: false`): a second sort cost start-up ~0.1 s.
  fullSchema ??= builder.toSchema();
  if (options.simulation) return fullSchema;
  const config = fullSchema.toConfig();
  const query = withoutField(config.query!, 'simulation');
  const mutation = config.mutation ? withoutField(config.mutation, 'simulation') : undefined;
  const roots = new Map<string, GraphQLObjectType | undefined>([
    [config.query!.name, query],
    [config.mutation?.name ?? 'Mutation', mutation],
  ]);
  return new GraphQLSchema({
    ...config,
    query,
    mutation,
    types: config.types.flatMap((type) => {
      if (type.name.startsWith(SIMULATION_TYPE_PREFIX)) return [];
      if (roots.has(type.name)) {
        const replaced = roots.get(type.name);
        return replaced ? [replaced] : [];
      }
      return [type];
    }),
  });
}
