import { afterEach, describe, expect, it } from 'vitest';
import { shardIdOf, type SimShardSpec } from '../../simulators/pageserver/index.ts';
import { waitFor } from '../support/pageserver-cluster.ts';
import { expectConsistent, pageserverWorlds, policy, restartAndWaitActive, settled, start, stepsOf, THREE_NODES } from '../support/pageserver-e2e.ts';

/**
 * Issue 6, "Bad input and faults", through GraphQL: a pageserver answering 5xx during a
 * drain, the operation's steps saying what happened, the simulators' own view. The safety
 * checker (every request) also fails a test if a shard is ever left without an attached location.
 */

const { setUp } = pageserverWorlds(afterEach);
const LOCATION = /\/location_config$/;
const TOKEN = 'e2e-upcall-token';

const VIA_2: SimShardSpec = { tenant: 1, attached: 1, secondaries: [2] };
const VIA_3: SimShardSpec = { tenant: 2, attached: 1, secondaries: [3] };

describe('pageserver faults during a drain (GraphQL)', () => {
  it('a pageserver answering 5xx a few times: the drain succeeds and the moved step notes the retries', async () => {
    const w = await setUp({ nodes: THREE_NODES(['az-a']), shards: [VIA_2, VIA_3] }, { plugin: { upcall: { host: '127.0.0.1', port: 0, token: TOKEN } } });
    w.cluster.sim(2).inject({ method: 'PUT', path: LOCATION, kind: { status: 503 }, times: 2 });
    const op = await start(w, 'startNodeDrain', '1');
    expect((await settled(w, '1')).state).toBe('SUCCEEDED');
    const steps = await stepsOf(w, op.id);
    expect(steps).toEqual([
      {
        workloadId: shardIdOf(VIA_2),
        state: 'MOVED',
        reason: null,
        error: 'retried: PUT location_config AttachedMulti on node 2 took 3 attempts (answered 503, answered 503)',
        fromNodeId: '1',
        toNodeId: '2',
      },
      { workloadId: shardIdOf(VIA_3), state: 'MOVED', reason: null, error: null, fromNodeId: '1', toNodeId: '3' },
    ]);
    expect(w.cluster.view()).toEqual({
      [shardIdOf(VIA_2)]: { '1': 'Secondary@-', '2': 'AttachedSingle@2' },
      [shardIdOf(VIA_3)]: { '1': 'Secondary@-', '3': 'AttachedSingle@2' },
    });
    // The restart's re-attach upcall carries the token (upcall.token is set): accepted.
    expect(await policy(w, '1')).toBe('PAUSE_FOR_RESTART');
    await restartAndWaitActive(w, '1');
    await expectConsistent(w);
  });

  it('a pageserver that keeps failing: the step FAILED, rolled back to the origin, which holds AttachedSingle at a higher generation', async () => {
    const w = await setUp({ nodes: THREE_NODES(['az-a']), shards: [VIA_2, VIA_3] });
    w.cluster.sim(2).inject({ method: 'PUT', path: LOCATION, kind: { status: 500 } });
    const op = await start(w, 'startNodeDrain', '1');
    const done = await settled(w, '1');
    const steps = await stepsOf(w, op.id);
    const failed = steps.find((s) => s.workloadId === shardIdOf(VIA_2))!;
    expect(failed).toMatchObject({ state: 'FAILED', reason: 'TRANSIENT', fromNodeId: '1', toNodeId: '2' });
    expect(failed.error).toMatch(
      /^cut-over of shard \S+ from node 1 to node 2 failed: pageserver 2: PUT \/v1\/tenant\/\S+\/location_config answered 500: injected fault 500 \(3 attempts\); rolled back to node 1: re-attached AttachedSingle with generation 3$/,
    );
    expect(steps.find((s) => s.workloadId === shardIdOf(VIA_3))).toMatchObject({ state: 'MOVED', error: null });
    expect(done.counts).toMatchObject({ moved: 1, failed: 1 });
    // The simulators: the origin holds it AttachedSingle with a generation above the one issued for the attempt (2).
    expect(w.cluster.view()[shardIdOf(VIA_2)]).toEqual({ '1': 'AttachedSingle@3', '2': 'Secondary@-' });
    expect(w.cluster.safety.highestIssued(shardIdOf(VIA_2))).toBe(3);
    expect(await w.backend.getShard(shardIdOf(VIA_2))).toMatchObject({ attachedNodeId: '1', secondaryNodeIds: ['2'] });
    await expectConsistent(w);
    // Once node 2 answers again, draining node 1 moves the shard.
    w.cluster.sim(2).clearFaults();
    await w.gql('mutation { configureNode(nodeId: "1", policy: ACTIVE) { __typename } }');
    await waitFor(async () => (await policy(w, '1')) === 'ACTIVE', { what: 'node 1 ACTIVE' });
    expect((await start(w, 'startNodeDrain', '1')).__typename).toBe('Operation');
    expect((await settled(w, '1')).counts.moved).toBe(1);
    expect(w.cluster.view()[shardIdOf(VIA_2)]).toEqual({ '1': 'Secondary@-', '2': 'AttachedSingle@4' });
  });
});
