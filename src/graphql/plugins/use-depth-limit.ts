import { maxDepthPlugin } from '@escape.tech/graphql-armor-max-depth';
import type { LimitSettings } from '../../config/schema.ts';
import { rejectAsValidationError } from './armor-rejection.ts';

/** Refuses an operation nested deeper than `maxDepth` (fragments flattened, introspection exempt): DEPTH_LIMIT. */
export function useDepthLimit({ maxDepth }: Pick<LimitSettings, 'maxDepth'>) {
  return maxDepthPlugin({ n: maxDepth, flattenFragments: true, exposeLimits: true, ...rejectAsValidationError('DEPTH_LIMIT') });
}
