import type { Prisma } from './generated/client.ts';

/**
 * A write built but not yet sent. Repositories return these so that a caller can commit
 * the writes of one change, across tables, in one transaction (Repositories.commit).
 */
export type PendingWrite = Prisma.PrismaPromise<unknown>;
