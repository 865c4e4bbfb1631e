import type { LeadershipStatus } from './leadership.ts';

/** The replica's part of /healthz (ha:L6): its role, the epoch it leads at and until when its lease is good. */
export function leadershipHealth(status: LeadershipStatus): Record<string, unknown> {
  return {
    role: status.role,
    epoch: status.epoch,
    leaseExpiresAt: status.leaseValidUntil === null ? null : new Date(status.leaseValidUntil).toISOString(),
    database: status.database,
    // The older name of `database`, kept for clients that read it.
    databaseStatus: status.database,
  };
}
