import { costLimitPlugin } from '@escape.tech/graphql-armor-cost-limit';
import type { LimitSettings } from '../../config/schema.ts';
import { rejectAsValidationError } from './armor-rejection.ts';

/** Refuses an operation whose static cost (see `limits.maxCost`) passes `maxCost`: COST_LIMIT. */
export function useCostLimit({ maxCost }: Pick<LimitSettings, 'maxCost'>) {
  return costLimitPlugin({ maxCost, depthCostFactor: 1, flattenFragments: true, exposeLimits: true, ...rejectAsValidationError('COST_LIMIT') });
}
