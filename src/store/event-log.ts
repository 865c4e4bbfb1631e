import type { Event, PrismaClient } from './index.ts';

export interface EventFilter {
  /** Only events after this sequence number (the cursor). */
  after?: number;
  nodeId?: string;
  operationId?: string;
  types?: string[];
}

/** Reads of the append-only event log, oldest first; `seq` is the replay cursor. */
export class EventLog {
  constructor(private readonly prisma: PrismaClient) {}

  read(filter: EventFilter, limit: number): Promise<Event[]> {
    return this.prisma.event.findMany({
      where: {
        ...(filter.after !== undefined && { seq: { gt: filter.after } }),
        ...(filter.nodeId !== undefined && { nodeId: filter.nodeId }),
        ...(filter.operationId !== undefined && { operationId: filter.operationId }),
        ...(filter.types?.length && { type: { in: filter.types } }),
      },
      orderBy: { seq: 'asc' },
      take: limit,
    });
  }

  async latestSeq(): Promise<number> {
    const last = await this.prisma.event.findFirst({ orderBy: { seq: 'desc' }, select: { seq: true } });
    return last?.seq ?? 0;
  }
}
