/**
 * ha:L3 tests of the plugin store's fence: a fresh PostgreSQL database with replicas'
 * leaderships on it, each with its fenced plugin store, and a raw connection that takes the
 * lease over as another replica's take-over does. Leases never lapse by themselves here
 * (ttl 600 s): only the raw take-over deposes a leader, so nothing depends on time.
 */
import pg from 'pg';
import type { PluginStore } from '../../src/cluster/plugin-store.ts';
import { leaderFence } from '../../src/leadership/fence.ts';
import { LeaseStore } from '../../src/leadership/lease-store.ts';
import { PostgresLeadership } from '../../src/leadership/leadership.ts';
import { createLogger } from '../../src/logger.ts';
import type { Database } from '../../src/store/database.ts';
import { PrismaPluginStore } from '../../src/store/plugin-store.ts';
import { openTestDatabase } from './test-database.ts';

export interface FencedStoreWorld {
  db: Database;
  /** A replica's leadership (not started: a stand-by) and its plugin store, fenced by it. */
  replica(): { leadership: PostgresLeadership; store: PluginStore };
  /** Another replica takes the lease (a new epoch); the leader's process does not know yet. */
  takeOver(): Promise<void>;
  /** The lease is free (as after a step-down), for the next replica to take at the next epoch. */
  freeLease(): Promise<void>;
}

export function fencedStoreWorlds(afterEach: (fn: () => Promise<void>) => void): { open(): Promise<FencedStoreWorld> } {
  const leaderships: PostgresLeadership[] = [];
  const clients: pg.Client[] = [];
  const databases: Database[] = [];
  afterEach(async () => {
    for (const l of leaderships.splice(0)) await l.stop();
    for (const c of clients.splice(0)) await c.end();
    for (const d of databases.splice(0)) await d.close();
  });
  return {
    async open() {
      const db = await openTestDatabase({ dialect: 'postgresql' });
      databases.push(db);
      const raw = new pg.Client({ connectionString: db.url });
      await raw.connect();
      clients.push(raw);
      const lease = new LeaseStore(db.prisma);
      return {
        db,
        replica: () => {
          const leadership = new PostgresLeadership({
            lease,
            address: () => 'http://replica.test:4000',
            log: createLogger('silent'),
            leaseTtlMs: 600_000,
            leaseRenewMs: 300_000,
          });
          leaderships.push(leadership);
          return { leadership, store: new PrismaPluginStore(db.prisma, 'pageserver', leaderFence(leadership)) };
        },
        takeOver: async () => void (await raw.query(`UPDATE "LeaderLease" SET "holder" = 'other', "epoch" = "epoch" + 1`)),
        freeLease: async () => void (await raw.query(`UPDATE "LeaderLease" SET "holder" = NULL, "expiresAt" = now() AT TIME ZONE 'UTC'`)),
      };
    },
  };
}
