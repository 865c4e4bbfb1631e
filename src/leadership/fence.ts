import type { Fence } from '../store/repositories.ts';
import type { Leadership } from './leadership.ts';
import { isFenceError } from './lease-store.ts';

/**
 * The fence of this replica's leader writes (ha:L3, ha:L7), for the operations' commits and
 * the plugin store alike: each transaction starts with the lease check of this epoch (a
 * stand-by may not write at all: `statements()` throws), and a transaction the database
 * refused demotes the replica at once.
 */
export function leaderFence(leadership: Pick<Leadership, 'fence' | 'lost'>): Fence {
  return {
    statements: () => leadership.fence(),
    failed: (e) => {
      if (!isFenceError(e)) return false;
      leadership.lost('a write was refused by the fence: another replica leads at a newer epoch');
      return true;
    },
  };
}
