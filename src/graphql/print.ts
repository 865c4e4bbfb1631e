import { fileURLToPath } from 'node:url';
import { printSchema } from 'graphql';
import { buildSchema } from './schema.ts';

export const SCHEMA_FILE = fileURLToPath(new URL('../../schema.graphql', import.meta.url));

/**
 * The checked-in SDL: the schema as served with the default (simulated) backend, so it
 * includes the `simulation` controls; real backends serve it without them.
 */
export function printSchemaFile(): string {
  return `${printSchema(buildSchema({ simulation: true }))}\n`;
}
