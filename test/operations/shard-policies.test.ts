import { afterEach, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../support/graphql-app.ts';
import { driveUntil, mutate, settle } from './drive.ts';

/**
 * neon:W8 — what each shard policy allows, column by column, where the simulated cluster
 * can show it: drain (storage:D2), fill (the Decision: Pause/Stop skipped), failover (H5f).
 * Delete is in test/e2e/neon-parity.test.ts (scenario 11), Stop's "no pageserver calls" in
 * test/e2e/neon-shard-controls.test.ts.
 */

let t: TestApp | undefined;
afterEach(async () => {
  await t?.stop();
  t = undefined;
});

const shard = (tenantId: string, attachedNodeId: string, policy: 'ACTIVE' | 'ESSENTIAL' | 'PAUSE' | 'STOP', secondary: string) => ({
  tenantId,
  attachedNodeId,
  policy,
  secondaries: [{ nodeId: secondary }],
});

describe('neon:W8 — shard policies', () => {
  it('fill: Active and Essential shards are promoted, Pause and Stop skipped with SHARD_POLICY_*', async () => {
    t = await createTestApp({
      topology: {
        nodes: [{ id: '1' }, { id: '2' }],
        shards: [
          shard('a-pause', '2', 'PAUSE', '1'),
          shard('b-stop', '2', 'STOP', '1'),
          shard('c-essential', '2', 'ESSENTIAL', '1'),
          shard('d', '2', 'ACTIVE', '1'),
          shard('e', '2', 'ACTIVE', '1'),
          shard('f', '2', 'ACTIVE', '1'),
        ],
      },
    });
    const op = await mutate(t, 'startNodeFill', '1');
    await settle(t, '1');
    const steps = await t.app.operations.getSteps(op.id);
    expect(steps.map((s) => [s.workloadId, s.state, s.state === 'SKIPPED' ? s.reason : null])).toEqual([
      ['a-pause', 'SKIPPED', 'SHARD_POLICY_PAUSE'],
      ['b-stop', 'SKIPPED', 'SHARD_POLICY_STOP'],
      ['c-essential', 'MOVED', null],
    ]);
  });

  it('drain and failover: Active and Essential move, Pause and Stop stay', async () => {
    const topology = {
      nodes: [{ id: '1' }, { id: '2' }],
      shards: [shard('a', '1', 'ACTIVE', '2'), shard('e', '1', 'ESSENTIAL', '2'), shard('p', '1', 'PAUSE', '2'), shard('s', '1', 'STOP', '2')],
    };
    t = await createTestApp({ topology });
    const drain = await mutate(t, 'startNodeDrain', '1');
    await settle(t, '1');
    expect((await t.app.operations.getSteps(drain.id)).map((s) => [s.workloadId, s.state])).toEqual([
      ['a', 'MOVED'],
      ['e', 'MOVED'],
      ['p', 'SKIPPED'],
      ['s', 'SKIPPED'],
    ]);
    await t.stop();
    t = await createTestApp({ topology });
    await t.cluster.simulation.setNodeOnline('1', false);
    await driveUntil(t, async () => (await t!.app.operations.listOperations({ nodeId: '1', kind: 'FAILOVER' }))[0]?.state === 'SUCCEEDED');
    const [failover] = await t.app.operations.listOperations({ nodeId: '1', kind: 'FAILOVER' });
    expect((await t.app.operations.getSteps(failover!.id)).map((s) => [s.workloadId, s.state])).toEqual([
      ['a', 'MOVED'],
      ['e', 'MOVED'],
      ['p', 'SKIPPED'],
      ['s', 'SKIPPED'],
    ]);
  });
});
