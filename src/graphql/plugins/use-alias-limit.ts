import { maxAliasesPlugin } from '@escape.tech/graphql-armor-max-aliases';
import type { LimitSettings } from '../../config/schema.ts';
import { rejectAsValidationError } from './armor-rejection.ts';

/** Refuses an operation with more than `maxAliases` aliased fields (fragments counted where spread, `__typename` exempt): ALIAS_LIMIT. */
export function useAliasLimit({ maxAliases }: Pick<LimitSettings, 'maxAliases'>) {
  return maxAliasesPlugin({ n: maxAliases, exposeLimits: true, ...rejectAsValidationError('ALIAS_LIMIT') });
}
