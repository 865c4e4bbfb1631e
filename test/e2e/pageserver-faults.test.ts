import { afterEach, describe, expect, it } from 'vitest';
import { shardIdOf, type SimShardSpec } from '../../simulators/pageserver/index.ts';
import { expectConsistent, pageserverWorlds, policy, restartAndWaitActive, settled, start, stepsOf, THREE_NODES } from '../support/pageserver-e2e.ts';

/**
 * Faults during a drain, through GraphQL: what a step records (issue 11 point 1). A
 * failure before the destination's generation (neon:C1–C3) fails the step and leaves the
 * shard on the origin; one after it rolls forward (neon:C10): the step stays MOVING,
 * "rolling forward", until the destination holds the shard. The safety checker (every
 * request) fails a test if a shard is ever left without an attached location.
 */

const { setUp } = pageserverWorlds(afterEach);
const LOCATION = /\/location_config$/;
const TOKEN = 'e2e-upcall-token';

const VIA_2: SimShardSpec = { tenant: 1, attached: 1, secondaries: [2] };
const VIA_3: SimShardSpec = { tenant: 2, attached: 1, secondaries: [3] };
const STEP_FIELDS = 'workloadId state reason error fromNodeId toNodeId phase phaseDescription';

async function stepOf(w: Awaited<ReturnType<typeof setUp>>, opId: string, shardId: string) {
  const data = await w.gql(
    `{ operation(id: "${opId}") { ... on Operation { steps(first: 10) { edges { node { ${STEP_FIELDS} } } } waitingOn { description } } } }`,
  );
  return { step: data.operation.steps.edges.map((e: { node: any }) => e.node).find((s: any) => s.workloadId === shardId), waitingOn: data.operation.waitingOn };
}

describe('pageserver faults during a drain (GraphQL)', () => {
  it("503 twice (Neon's retry wrapper retries it): the drain succeeds and the moved step notes the retries", async () => {
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

  it('neon:C10: the destination refusing after its generation was issued: no rollback; the step stays MOVING ("rolling forward") until a direct attach succeeds', async () => {
    const w = await setUp({ nodes: THREE_NODES(['az-a']), shards: [VIA_2, VIA_3] });
    w.cluster.sim(2).inject({ method: 'PUT', path: LOCATION, kind: { status: 500 } });
    const op = await start(w, 'startNodeDrain', '1');
    await w.cluster.until(async () => (await stepOf(w, op.id, shardIdOf(VIA_2))).step.phase === 'ROLLING_FORWARD', { what: 'rolling forward' });
    const { step, waitingOn } = await stepOf(w, op.id, shardIdOf(VIA_2));
    expect(step).toMatchObject({ state: 'MOVING', toNodeId: '2' });
    expect(step.phaseDescription).toMatch(
      /^rolling forward to node 2 after: reconcile of shard \S+ failed in DESTINATION_MULTI: pageserver 2: PUT .* answered 500/,
    );
    expect(waitingOn.description).toContain(`shard ${shardIdOf(VIA_2)}: rolling forward to node 2`);
    // Never back to the origin: it stays AttachedStale (it serves), the intent stays on node 2.
    expect(w.cluster.view()[shardIdOf(VIA_2)]!['1']).toBe('AttachedStale@1');
    expect(await w.backend.getShard(shardIdOf(VIA_2))).toMatchObject({ attachedNodeId: '2', secondaryNodeIds: ['1'] });
    // Background passes (every 20 s) keep trying; once node 2 takes it, the step is MOVED.
    await w.cluster.advance(45_000, 500);
    expect((await stepOf(w, op.id, shardIdOf(VIA_2))).step.state).toBe('MOVING');
    w.cluster.sim(2).clearFaults();
    const done = await settled(w, '1');
    expect(done).toMatchObject({ state: 'SUCCEEDED', counts: { moved: 2, failed: 0 } });
    const final = (await stepOf(w, op.id, shardIdOf(VIA_2))).step;
    expect(final.state).toBe('MOVED');
    expect(final.error).toMatch(/^rolled forward: /);
    const gen = w.cluster.safety.highestIssued(shardIdOf(VIA_2));
    expect(w.cluster.view()[shardIdOf(VIA_2)]).toEqual({ '1': 'Secondary@-', '2': `AttachedSingle@${gen}` });
    await expectConsistent(w);
  });

  it('a failure before the generation (the origin refuses AttachedStale, neon:C1): the step FAILED and the shard stays on the origin', async () => {
    const w = await setUp({ nodes: THREE_NODES(['az-a']), shards: [VIA_2] });
    w.cluster.sim(1).inject({ method: 'PUT', path: LOCATION, kind: { status: 409 }, times: 1 });
    const op = await start(w, 'startNodeDrain', '1');
    const done = await settled(w, '1');
    expect(done.counts).toMatchObject({ moved: 0, failed: 1 });
    const { step } = await stepOf(w, op.id, shardIdOf(VIA_2));
    expect(step).toMatchObject({ state: 'FAILED', reason: 'CONFLICT', phase: 'ORIGIN_STALE' });
    expect(step.error).toMatch(/failed in ORIGIN_STALE: pageserver 1: PUT \S+ answered 409/);
    expect(await w.backend.getShard(shardIdOf(VIA_2))).toMatchObject({ attachedNodeId: '1', secondaryNodeIds: ['2'] });
    // Nothing was issued to node 2; node 1 still holds the shard attached.
    expect(w.cluster.view()[shardIdOf(VIA_2)]).toEqual({ '1': 'AttachedSingle@1', '2': 'Secondary@-' });
    await expectConsistent(w);
  });

  it('issue 11 point 1: a cut-over waiting in neon:C6 shows "waiting for WAL catch-up on node 2" on its step and in waitingOn; a cancel then stops the wait, the issued move completes by a direct attach and counts MOVED, and CANCELLING ends', async () => {
    const w = await setUp({ nodes: THREE_NODES(['az-a']), shards: [VIA_2] });
    w.cluster.sim(2).holdCatchUp(shardIdOf(VIA_2), 600_000);
    const op = await start(w, 'startNodeDrain', '1');
    await w.cluster.until(async () => (await stepOf(w, op.id, shardIdOf(VIA_2))).step?.phase === 'WAL_CATCH_UP', { what: 'waiting for catch-up' });
    const { step, waitingOn } = await stepOf(w, op.id, shardIdOf(VIA_2));
    expect(step).toMatchObject({ state: 'MOVING', phaseDescription: 'waiting for WAL catch-up on node 2' });
    expect(waitingOn.description).toContain(`shard ${shardIdOf(VIA_2)}: waiting for WAL catch-up on node 2`);
    expect((await start(w, 'cancelNodeDrain', '1')).state).toBe('CANCELLING');
    const done = await settled(w, '1', 10_000);
    expect(done).toMatchObject({ state: 'CANCELLED', counts: { moved: 1, failed: 0 } });
    const final = (await stepOf(w, op.id, shardIdOf(VIA_2))).step;
    expect(final.state).toBe('MOVED');
    expect(final.error).toMatch(/^rolled forward: reconcile of shard \S+ cancelled in WAL_CATCH_UP/);
    await expectConsistent(w);
  });
});
