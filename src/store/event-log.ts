import type { Event, PrismaClient } from './index.ts';
import type { EventRow } from './hot-path-sql.ts';
import type { PendingWrite } from './pending-write.ts';
import { isoTime } from './iso-time.ts';

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

/** An entry's row for the hot path (the journal's batches). */
export function eventRow(e: LoggedEvent): EventRow {
  return [isoTime(e.at), e.type, e.nodeId, e.operationId, JSON.stringify(e.payload ?? {})];
}

/** The append-only event log, read oldest first; `seq` is the replay cursor. */
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

  /** Whether the node re-attached at or after `at`: each re-attach logs a NODE_POLICY_CHANGED with that cause, even ACTIVE to ACTIVE. */
  async reattachedSince(nodeId: string, at: number): Promise<boolean> {
    const found = await this.prisma.event.findFirst({
      where: { nodeId, type: 'NODE_POLICY_CHANGED', at: { gte: new Date(at) }, payload: { contains: '"cause":"reattached"' } },
      select: { seq: true },
    });
    return found !== null;
  }

  /** Each node's last logged service state (NODE_STATE_CHANGED's payload), by node. */
  async lastNodeStates(): Promise<Map<string, { availability: string; cordoned: boolean }>> {
    const rows = await this.prisma.event.findMany({ where: { type: 'NODE_STATE_CHANGED' }, orderBy: { seq: 'asc' }, select: { nodeId: true, payload: true } });
    const out = new Map<string, { availability: string; cordoned: boolean }>();
    for (const r of rows) if (r.nodeId) out.set(r.nodeId, JSON.parse(r.payload) as { availability: string; cordoned: boolean });
    return out;
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
}
