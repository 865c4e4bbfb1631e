import type { PolicyEvent, SchedulingPolicy } from '../domain/storage/policy.ts';
import type { Prisma, PrismaClient } from '../store/index.ts';
import { policyTransitionWrites } from './policy-statements.ts';

/**
 * Storage scheduling policy per node. The database is the truth; the map is a cache
 * written only after the database committed (S1: persisted before it takes effect).
 * Nodes without a row are ACTIVE.
 */
export class PolicyStore {
  private cache = new Map<string, SchedulingPolicy>();

  constructor(private readonly prisma: PrismaClient) {}

  async load(): Promise<void> {
    const rows = await this.prisma.nodeState.findMany({ select: { id: true, schedulingPolicy: true } });
    this.cache = new Map(rows.map((r) => [r.id, r.schedulingPolicy as SchedulingPolicy]));
  }

  get(nodeId: string): SchedulingPolicy {
    return this.cache.get(nodeId) ?? 'ACTIVE';
  }

  /** Records a transition whose writes the caller committed (see policyTransitionWrites). */
  applied(nodeId: string, policy: SchedulingPolicy): void {
    this.cache.set(nodeId, policy);
  }

  /**
   * Commits `event` (through the transition table: PolicyTransitionError for a pair it
   * does not list) together with `alsoWrite`, then updates the cache.
   */
  async transition(
    nodeId: string,
    event: PolicyEvent,
    operationId: string | null,
    at: number,
    alsoWrite: Prisma.PrismaPromise<unknown>[] = [],
    /** Recorded with the event, e.g. who asked and why. */
    details?: object,
  ): Promise<{ from: SchedulingPolicy; to: SchedulingPolicy }> {
    const from = this.get(nodeId);
    const { to, writes } = policyTransitionWrites(this.prisma, { nodeId, from, event, operationId, at, ...(details && { details }) });
    await this.prisma.$transaction([...alsoWrite, ...writes]);
    this.cache.set(nodeId, to);
    return { from, to };
  }
}
