/**
 * A small Pothos plugin, listed before scope-auth in the builder:
 *
 * - every Query / Mutation / Subscription field that states no `authScopes` gets the scope
 *   `defaultScopeOf` gives (scopes.ts: the table, else the root type's default), so that
 *   scope-auth enforces a scope on every root field, including fields defined in modules
 *   that know nothing about authorization;
 * - the fields of the types in {@link AUTO_AUDITED_TYPES} (the simulation controls, which
 *   change state but are not audited by their resolvers) are recorded in the audit log like
 *   every other mutation. What cannot be audited is not done: while the database is
 *   unavailable such a field answers its typed `UnavailableError` naming it (issue 27) and
 *   the simulated cluster is left as it was.
 */
import SchemaBuilder, { BasePlugin, type PothosOutputFieldConfig, type SchemaTypes } from '@pothos/core';
import { wrapOrThrow } from '@pothos/plugin-errors';
import type { GraphQLFieldResolver } from 'graphql';
import { LockkeeperError } from '../domain/errors.ts';
import type { AuditLog } from '../store/audit-log.ts';
import type { DatabaseAvailability } from '../store/database-availability.ts';
import type { Clock } from '../cluster/clock.ts';
import { defaultScopeOf } from './scopes.ts';

/** Object types whose every field changes state and is audited here, as `<prefix>.<field>`. */
const AUTO_AUDITED_TYPES: Readonly<Record<string, string>> = { SimulationMutation: 'simulation' };

const pluginName = 'lockkeeperAuth';

// Pothos extends its types by declaration merging into this global namespace.
declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  export namespace PothosSchemaTypes {
    export interface Plugins<Types extends SchemaTypes> {
      lockkeeperAuth: LockkeeperAuthPlugin<Types>;
    }
  }
}

interface AuditingContext {
  actor: string;
  audit: AuditLog;
  clock: Clock;
  database?: DatabaseAvailability;
}

class LockkeeperAuthPlugin<Types extends SchemaTypes> extends BasePlugin<Types> {
  override onOutputFieldConfig(fieldConfig: PothosOutputFieldConfig<Types>): PothosOutputFieldConfig<Types> {
    const options = fieldConfig.pothosOptions as { authScopes?: unknown };
    if (options.authScopes !== undefined) return fieldConfig;
    const scope = defaultScopeOf(fieldConfig.parentType, fieldConfig.name);
    if (!scope) return fieldConfig;
    return { ...fieldConfig, pothosOptions: { ...fieldConfig.pothosOptions, authScopes: { [scope]: true } } } as PothosOutputFieldConfig<Types>;
  }

  override wrapResolve(resolver: GraphQLFieldResolver<unknown, Types['Context'], object>, fieldConfig: PothosOutputFieldConfig<Types>) {
    const prefix = AUTO_AUDITED_TYPES[fieldConfig.parentType];
    if (!prefix) return resolver;
    const action = `${prefix}.${fieldConfig.name}`;
    // The error types of the field's result union (the errors plugin's), if it has one.
    const errorTypes = (fieldConfig.extensions as { pothosErrors?: (new (...args: never[]) => Error)[] } | undefined)?.pothosErrors ?? [];
    const wrapped: GraphQLFieldResolver<unknown, Types['Context'], object> = async (parent, fieldArgs, context, info) => {
      const args = fieldArgs as Record<string, unknown>;
      const ctx = context as unknown as AuditingContext;
      // The field's typed result where it has one (its union holds UnavailableError), else a GraphQL error with the same code.
      if (ctx.database && (await ctx.database.check()) === 'down') return wrapOrThrow(ctx.database.unavailable(), errorTypes, undefined);
      const at = new Date(ctx.clock.now());
      let outcome = 'OK';
      try {
        const result = await resolver(parent, args, context, info);
        // With the errors plugin, a typed refusal is returned as the field's value.
        if (result instanceof LockkeeperError) outcome = result.code;
        return result;
      } catch (e) {
        outcome = e instanceof LockkeeperError ? e.code : 'ERROR';
        throw e;
      } finally {
        const nodeId = typeof args.nodeId === 'string' || typeof args.nodeId === 'number' ? String(args.nodeId) : null;
        await ctx.audit.record({ actor: ctx.actor, action, arguments: args, reason: null, outcome, nodeId, at }).catch((e: unknown) => {
          // The database went away while it acted: say so by name, typed, not "Unexpected error.".
          throw ctx.database?.typed(e) ?? e;
        });
      }
    };
    return wrapped;
  }
}

SchemaBuilder.registerPlugin(pluginName, LockkeeperAuthPlugin as never);

export default pluginName;
