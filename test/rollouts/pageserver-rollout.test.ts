import { afterEach, describe, expect, it } from 'vitest';
import { roundRobinShards } from '../../simulators/pageserver/index.ts';
import { expectConsistent, pageserverWorlds, total } from '../support/pageserver-e2e.ts';
import type { RolloutRun } from '../../src/operations/rollouts/run.ts';

const { setUp } = pageserverWorlds(afterEach);

describe('rollout:scenario-2 DRAIN_FILL over four pageserver simulators in two AZs', { timeout: 240_000 }, () => {
  it('ends SUCCEEDED, every shard attached once, each node within the fill’s per-tenant cap (storage:F3) of its fair share', async () => {
    const TENANTS = 20;
    const SHARDS_PER_TENANT = 2;
    const w = await setUp({
      nodes: [1, 2, 3, 4].map((id) => ({ id, zone: id <= 2 ? 'az-a' : 'az-b' })),
      shards: roundRobinShards([1, 2, 3, 4], TENANTS, SHARDS_PER_TENANT),
    });
    const before = total(w.cluster.attachedSingleCounts());
    const started = (
      await w.gql(`mutation { r: startRollout(input: { nodes: ["1", "2", "3", "4"], action: DRAIN_FILL, order: ZONE_BY_ZONE, reason: "pageserver release" }) {
        __typename ... on Operation { id } ... on Error { message } } }`)
    ).r;
    expect(started.__typename).toBe('Operation');
    const run = w.app.operations.live.get(started.id) as RolloutRun;
    // The operator's deploy tooling: restart each pageserver the rollout hands over (its re-attach upcall says it is back).
    const restarted = new Set<string>();
    const restarts: Promise<void>[] = [];
    await w.cluster.until(
      async () => {
        for (const [nodeId, d] of run.details) {
          if (d.phase !== 'WAITING_FOR_RESTART' || restarted.has(nodeId)) continue;
          restarted.add(nodeId);
          expect(w.cluster.sim(nodeId).attached()).toEqual([]);
          restarts.push(w.cluster.sim(nodeId).restart({ downMs: 1000 }));
        }
        const op = await w.app.operations.getOperation(started.id);
        return op!.state !== 'RUNNING';
      },
      { what: 'the rollout to end' },
    );
    await Promise.all(restarts);
    const done = await w.app.operations.getOperation(started.id);
    expect(done).toMatchObject({ state: 'SUCCEEDED', counts: { moved: 4, failed: 0 } });
    expect([...restarted].sort()).toEqual(['1', '2', '3', '4']);
    await expectConsistent(w);
    const counts = w.cluster.attachedSingleCounts();
    expect(total(counts)).toBe(before);
    // storage:F3: a fill takes at most max(1, floor(2 / 4)) = 1 shard per tenant, so each node ends within one of its fair share.
    const fair = before / 4;
    const cap = Math.max(1, Math.floor(SHARDS_PER_TENANT / 4));
    for (const c of Object.values(counts)) expect(Math.abs(c - fair)).toBeLessThanOrEqual(cap);
  });
});
