/**
 * The persistence layer's public surface. Import from here, not from `./generated/`
 * directly.
 */
export { openDatabase, type Database } from './database.ts';
export { Prisma, PrismaClient } from './generated/client.ts';
export type { ApiToken, Event, Operation, OperationStep } from './generated/client.ts';
