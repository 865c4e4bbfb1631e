import { nextPolicy, type PolicyEvent, type SchedulingPolicy } from '../domain/storage/policy.ts';
import type { EventLog } from './event-log.ts';
import type { PrismaClient } from './index.ts';
import type { PendingWrite } from './pending-write.ts';

/** A policy transition built but not committed: commit `writes`, then call `applied`. */
export interface PolicyTransition {
  from: SchedulingPolicy;
  to: SchedulingPolicy;
  writes: PendingWrite[];
  applied(): void;
}

/**
 * Storage scheduling policy per node. The database is the truth; the map is a cache
 * written only after the database committed (storage:S1: persisted before it takes effect).
 * Nodes without a row are ACTIVE.
 */
export class PolicyStore {
  private cache = new Map<string, SchedulingPolicy>();
  private changes = 0;

  constructor(
    private readonly prisma: PrismaClient,
    private readonly events: EventLog,
    /** Commits writes in one transaction (Repositories.commit: fenced on PostgreSQL). */
    private readonly commit: (writes: PendingWrite[]) => Promise<void> = async (writes) => {
      await prisma.$transaction(writes);
    },
  ) {}

  async load(): Promise<void> {
    const rows = await this.prisma.nodeState.findMany({ select: { id: true, schedulingPolicy: true } });
    this.cache = new Map(rows.map((r) => [r.id, r.schedulingPolicy as SchedulingPolicy]));
    this.changes++;
  }

  /** Grows at every change of a cached policy: views derived from the policies (a drain's plan nodes) are rebuilt only then. */
  get version(): number {
    return this.changes;
  }

  /** Reloads one node's policy: another replica changed it (ha:R2). */
  async refresh(nodeId: string): Promise<void> {
    const row = await this.prisma.nodeState.findUnique({ where: { id: nodeId }, select: { schedulingPolicy: true } });
    if (row) this.cache.set(nodeId, row.schedulingPolicy as SchedulingPolicy);
    else this.cache.delete(nodeId);
    this.changes++;
  }

  get(nodeId: string): SchedulingPolicy {
    return this.cache.get(nodeId) ?? 'ACTIVE';
  }

  /**
   * The writes of one transition (through the transition table: PolicyTransitionError for
   * a pair it does not list), to be committed in the same transaction as the operation
   * change that causes it: never a DRAINING node without its drain, nor a drain whose
   * node is still ACTIVE.
   */
  prepare(nodeId: string, event: PolicyEvent, operationId: string | null, at: number, details?: object): PolicyTransition {
    const from = this.get(nodeId);
    const to = nextPolicy(from, event);
    return {
      from,
      to,
      writes: [
        this.prisma.nodeState.upsert({
          where: { id: nodeId },
          create: { id: nodeId, schedulingPolicy: to },
          update: { schedulingPolicy: to },
        }),
        this.events.append({ at, type: 'NODE_POLICY_CHANGED', nodeId, operationId, payload: { from, to, cause: event.type, ...details } }),
      ],
      applied: () => {
        this.cache.set(nodeId, to);
        this.changes++;
      },
    };
  }

  /** Commits `event` together with `alsoWrite`, then updates the cache. */
  async transition(
    nodeId: string,
    event: PolicyEvent,
    operationId: string | null,
    at: number,
    alsoWrite: PendingWrite[] = [],
    /** Recorded with the event, e.g. who asked and why. */
    details?: object,
  ): Promise<{ from: SchedulingPolicy; to: SchedulingPolicy }> {
    const transition = this.prepare(nodeId, event, operationId, at, details);
    await this.commit([...alsoWrite, ...transition.writes]);
    transition.applied();
    return { from: transition.from, to: transition.to };
  }
}
