import type { RehearsedAction } from '../../src/domain/rehearsal/types.ts';
import type { RehearsalLoadContext } from './types.ts';

/**
 * A draw in ms, or undefined where history and the request gave nothing (source DEFAULT for an
 * action without a request default): the simulator then keeps its own delay, as it would
 * outside a rehearsal, rather than a zero that would predict instant moves.
 */
export function simulatorDefaultsWhereUndrawn(context: RehearsalLoadContext) {
  return (action: RehearsedAction, workloadId: string, nodeId: string | null): number | undefined => {
    const drawn = context.durations.draw(action, workloadId, nodeId);
    return drawn.source === 'DEFAULT' && context.defaults?.[action] === undefined ? undefined : drawn.ms;
  };
}
