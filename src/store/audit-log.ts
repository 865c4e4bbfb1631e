import { randomBytes } from 'node:crypto';
import type { PrismaClient } from './index.ts';

let lastMs = 0;
let seq = 0;

/**
 * Row ids that sort in insertion order (wall-clock ms, a counter, random bits), so that
 * rows with the same `at` (a virtual clock, one millisecond) still page in a stable,
 * newest-first order: the audit log orders by (at, id).
 */
function auditId(): string {
  const now = Date.now();
  seq = now === lastMs ? seq + 1 : 0;
  lastMs = now;
  return `${now.toString(16).padStart(12, '0')}-${seq.toString(16).padStart(6, '0')}-${randomBytes(6).toString('hex')}`;
}

export interface AuditRecord {
  actor: string;
  /** The mutation or REST call, e.g. `startNodeDrain` or `PUT /control/v1/node/:id/drain`. */
  action: string;
  arguments: unknown;
  reason: string | null;
  /** `OK`, or the typed error's code (e.g. `CONFLICT`), or `ERROR` for an unexpected fault. */
  outcome: string;
  nodeId: string | null;
  at: Date;
}

/** Who did what, when, why, and how it ended: one row per state-changing call. */
export class AuditLog {
  constructor(private readonly prisma: PrismaClient) {}

  async record(entry: AuditRecord): Promise<void> {
    await this.prisma.auditEntry.create({
      data: {
        id: auditId(),
        at: entry.at,
        actor: entry.actor,
        action: entry.action,
        arguments: JSON.stringify(entry.arguments ?? {}),
        reason: entry.reason,
        outcome: entry.outcome,
        nodeId: entry.nodeId,
      },
    });
  }

  /** One page, newest first, after `cursor`; plus the count of all rows matching the filter. */
  async page(filter: AuditFilter, first: number, cursor: AuditCursor | null): Promise<{ rows: AuditRow[]; hasNextPage: boolean; totalCount: number }> {
    const where = {
      ...(filter.nodeId !== undefined && { nodeId: filter.nodeId }),
      ...(filter.actor !== undefined && { actor: filter.actor }),
      ...(filter.action !== undefined && { action: filter.action }),
      ...((filter.from || filter.to) && { at: { ...(filter.from && { gte: filter.from }), ...(filter.to && { lt: filter.to }) } }),
    };
    const after = cursor ? { OR: [{ at: { lt: cursor.at } }, { at: cursor.at, id: { lt: cursor.id } }] } : {};
    const [rows, totalCount] = await Promise.all([
      this.prisma.auditEntry.findMany({ where: { AND: [where, after] }, orderBy: [{ at: 'desc' }, { id: 'desc' }], take: first + 1 }),
      this.prisma.auditEntry.count({ where }),
    ]);
    return { rows: rows.slice(0, first), hasNextPage: rows.length > first, totalCount };
  }
}

export interface AuditFilter {
  nodeId?: string;
  actor?: string;
  action?: string;
  /** Inclusive. */
  from?: Date;
  /** Exclusive. */
  to?: Date;
}

export interface AuditRow {
  id: string;
  at: Date;
  actor: string;
  action: string;
  /** JSON, as recorded. */
  arguments: string;
  reason: string | null;
  outcome: string;
  nodeId: string | null;
}

/** Keyset position in the newest-first order (at desc, id desc). */
export interface AuditCursor {
  at: Date;
  id: string;
}
