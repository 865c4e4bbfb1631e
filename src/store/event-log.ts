import type { Event, PrismaClient } from './index.ts';
import type { HotPathSql } from './hot-path-sql.ts';
import type { PendingWrite } from './pending-write.ts';
import { sqliteHotPath } from './sqlite-hot-path.ts';

export interface EventFilter {
  /** Only events after this sequence number (the cursor). */
  after?: number;
  nodeId?: string;
  operationId?: string;
  types?: string[];
}

/** One entry of the event log, as written. */
export interface LoggedEvent {
  type: string;
  nodeId: string | null;
  operationId: string | null;
  payload: unknown;
  at: number;
}

/** The append-only event log, read oldest first; `seq` is the replay cursor. */
export class EventLog {
  constructor(
    private readonly prisma: PrismaClient,
    private readonly sql: HotPathSql = sqliteHotPath,
  ) {}

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

  append(event: LoggedEvent): PendingWrite {
    return this.prisma.event.create({
      data: { at: new Date(event.at), type: event.type, nodeId: event.nodeId, operationId: event.operationId, payload: JSON.stringify(event.payload) },
    });
  }

  /** Many entries in few statements (the journal's batches). */
  appendMany(events: LoggedEvent[]): PendingWrite[] {
    const writes: PendingWrite[] = [];
    const chunk = this.sql.maxRowsPerStatement;
    for (let i = 0; i < events.length; i += chunk) {
      const rows = events.slice(i, i + chunk).map((e) => ({
        at: new Date(e.at).toISOString(),
        type: e.type,
        nodeId: e.nodeId,
        operationId: e.operationId,
        payload: JSON.stringify(e.payload ?? {}),
      }));
      writes.push(this.prisma.$executeRaw(this.sql.insertEvents(rows)));
    }
    return writes;
  }
}
