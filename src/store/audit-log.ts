import type { PrismaClient } from './index.ts';

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
}
