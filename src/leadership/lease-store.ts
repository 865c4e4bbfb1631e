/**
 * The leader lease row on PostgreSQL (ha:L1): taken, renewed and released by conditional
 * writes, each one statement, against the database's clock (UTC, as Prisma stores
 * timestamps). The epoch goes up by one at every change of holder.
 */
import { Prisma, type PrismaClient } from '../store/index.ts';

const LEASE_ID = 'leader';
const NOW = Prisma.raw(`(now() AT TIME ZONE 'UTC')`);

export interface LeaseRow {
  holder: string | null;
  address: string | null;
  epoch: number;
  expiresAt: Date | null;
  /** Whether the lease is held now, by the database's clock. */
  live: boolean;
}

export class LeaseStore {
  constructor(private readonly prisma: PrismaClient) {}

  /** How long until the lease expires, by the database's clock (0 when it has; null when no lease row exists). */
  async remainingMs(): Promise<number | null> {
    const rows = await this.prisma.$queryRaw<{ ms: number | null }[]>`
      SELECT (greatest(0, EXTRACT(EPOCH FROM ("expiresAt" - ${NOW})) * 1000))::double precision AS "ms" FROM "LeaderLease" WHERE "id" = ${LEASE_ID}`;
    return rows[0]?.ms ?? null;
  }

  /** Takes the lease when it is free or expired; returns the new epoch, or null when another holder has it. */
  async acquire(holder: string, address: string, ttlMs: number): Promise<{ epoch: number; expiresAt: Date } | null> {
    const ttl = Prisma.sql`make_interval(secs => ${ttlMs / 1000}::double precision)`;
    const rows = await this.prisma.$queryRaw<{ epoch: number; expiresAt: Date }[]>`
      INSERT INTO "LeaderLease" ("id", "holder", "address", "epoch", "expiresAt", "acquiredAt", "renewedAt")
      VALUES (${LEASE_ID}, ${holder}, ${address}, 1, ${NOW} + ${ttl}, ${NOW}, ${NOW})
      ON CONFLICT ("id") DO UPDATE SET "holder" = excluded."holder", "address" = excluded."address",
        "epoch" = "LeaderLease"."epoch" + 1, "expiresAt" = excluded."expiresAt",
        "acquiredAt" = excluded."acquiredAt", "renewedAt" = excluded."renewedAt"
      WHERE "LeaderLease"."holder" IS NULL OR "LeaderLease"."expiresAt" IS NULL OR "LeaderLease"."expiresAt" <= ${NOW}
      RETURNING "epoch", "expiresAt"`;
    return rows[0] ?? null;
  }

  /** Extends the lease while this holder still has it at this epoch and it has not expired; false when it was lost. */
  async renew(holder: string, epoch: number, ttlMs: number, address: string): Promise<Date | null> {
    const rows = await this.prisma.$queryRaw<{ expiresAt: Date }[]>`
      UPDATE "LeaderLease" SET "expiresAt" = ${NOW} + make_interval(secs => ${ttlMs / 1000}::double precision), "renewedAt" = ${NOW}, "address" = ${address}
      WHERE "id" = ${LEASE_ID} AND "holder" = ${holder} AND "epoch" = ${epoch} AND "expiresAt" > ${NOW}
      RETURNING "expiresAt"`;
    return rows[0]?.expiresAt ?? null;
  }

  /** Gives the lease up (ha:L5): a stand-by takes it at its next try, with the next epoch. */
  async release(holder: string, epoch: number): Promise<boolean> {
    const count = await this.prisma.$executeRaw`
      UPDATE "LeaderLease" SET "holder" = NULL, "expiresAt" = ${NOW}
      WHERE "id" = ${LEASE_ID} AND "holder" = ${holder} AND "epoch" = ${epoch}`;
    return count > 0;
  }

  async current(): Promise<LeaseRow> {
    const rows = await this.prisma.$queryRaw<LeaseRow[]>`
      SELECT "holder", "address", "epoch", "expiresAt", ("holder" IS NOT NULL AND "expiresAt" > ${NOW}) AS "live"
      FROM "LeaderLease" WHERE "id" = ${LEASE_ID}`;
    return rows[0] ?? { holder: null, address: null, epoch: 0, expiresAt: null, live: false };
  }

  /** The statement that fences a transaction (ha:L7): first in it, it fails the whole transaction unless this epoch still leads. */
  fence(holder: string, epoch: number) {
    return this.prisma.$executeRaw`SELECT lockkeeper_fence(${holder}::text, ${epoch}::integer)`;
  }
}

/** Whether an error is the fence refusing a transaction (SQLSTATE LK001). */
export function isFenceError(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e && depth < 6; depth++) {
    const text = e instanceof Error ? e.message : typeof e === 'object' ? JSON.stringify(e) : String(e);
    if (/LK001|is not the leader at epoch/.test(text)) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}
