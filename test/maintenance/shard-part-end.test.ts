import { afterEach, describe, expect, it } from 'vitest';
import type { TestApp } from '../support/graphql-app.ts';
import { cluster, enable, maintenanceApp, untilPhase } from './harness.ts';

/**
 * vm:M6, storage:D7 (crash campaign, fake seed 2 round 55): the embedded shard drain of a
 * maintenance commits the node's policy DRAINING -> PAUSE_FOR_RESTART only once its steps are
 * written. Committed before them, a kill in between left the shards' steps open under a policy
 * that is no longer DRAINING, and the resumed drain failed the maintenance (NODE_STATE_CHANGED).
 */

let t: TestApp | undefined;
afterEach(async () => {
  await t?.stop();
  t = undefined;
});

const shard = (tenantId: string, secondary: string) => ({ tenantId, shardNumber: 0, shardCount: 1, attachedNodeId: '1', secondaries: [{ nodeId: secondary }] });

describe('a maintenance of a hyperconverged node: the shard part ends after its steps are written', () => {
  it('when drainFinished commits, every shard step of the operation is already MOVED in the database', async () => {
    t = await maintenanceApp(cluster([{ namespace: 'default', name: 'web', nodeId: '1' }], { shards: [shard('a', '2'), shard('b', '3')] }), {
      latenciesMs: { migrate: 500, stop: 200, start: 300, cordon: 10, cutOver: 100 },
    });
    const prisma = t.db.prisma as any;
    const create = prisma.event.create.bind(prisma.event);
    const transaction = prisma.$transaction.bind(prisma);
    const policyEnd = new Set<unknown>();
    prisma.event.create = (args: { data: { type: string; payload: string } }) => {
      const write = create(args);
      if (args.data.type === 'NODE_POLICY_CHANGED' && JSON.parse(args.data.payload).cause === 'drainFinished') policyEnd.add(write);
      return write;
    };
    const seen: string[][] = [];
    prisma.$transaction = async (writes: unknown) => {
      if (Array.isArray(writes) && writes.some((w) => policyEnd.has(w))) {
        const steps = await t!.db.prisma.operationStep.findMany({ where: { workloadKind: 'shard' }, orderBy: { workloadId: 'asc' } });
        seen.push(steps.map((s) => `${s.workloadId}:${s.state}`));
      }
      return transaction(writes);
    };
    await enable(t, '1');
    await untilPhase(t, '1', 'COMPLETED');
    expect(seen).toEqual([['a-0001:MOVED', 'b-0001:MOVED']]);
  });
});
