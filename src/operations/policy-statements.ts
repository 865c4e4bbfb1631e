import { nextPolicy, type PolicyEvent, type SchedulingPolicy } from '../domain/storage/policy.ts';
import type { Prisma, PrismaClient } from '../store/index.ts';

/**
 * The writes of one policy transition, to be committed in the same transaction as the
 * operation change that causes it (no half-written state: never a DRAINING node without
 * its drain, nor a drain whose node is still ACTIVE).
 */
export function policyTransitionWrites(
  prisma: PrismaClient,
  input: { nodeId: string; from: SchedulingPolicy; event: PolicyEvent; operationId: string | null; at: number; details?: object },
): { to: SchedulingPolicy; writes: Prisma.PrismaPromise<unknown>[] } {
  const to = nextPolicy(input.from, input.event);
  return {
    to,
    writes: [
      prisma.nodeState.upsert({
        where: { id: input.nodeId },
        create: { id: input.nodeId, schedulingPolicy: to },
        update: { schedulingPolicy: to },
      }),
      prisma.event.create({
        data: {
          at: new Date(input.at),
          type: 'NODE_POLICY_CHANGED',
          nodeId: input.nodeId,
          operationId: input.operationId,
          payload: JSON.stringify({ from: input.from, to, cause: input.event.type, ...input.details }),
        },
      }),
    ],
  };
}
