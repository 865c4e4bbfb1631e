import { afterEach, describe, expect, it } from 'vitest';
import { shardIdOf, type SimShardSpec } from '../../simulators/pageserver/index.ts';
import { pageserverWorlds } from '../support/pageserver-e2e.ts';

/**
 * Issue 29 point 2: a failover on the pageserver plugin keeps `maxConcurrentFailovers`
 * cut-overs in flight at the pageservers, wave after wave, with nothing in the pipeline
 * (the gateway's FAILOVER run, the plugin's intent and generation writes, its reconciler
 * units, the compute hook's notifications) serializing them. Every `PUT …/location_config`
 * waits `L` on the virtual clock at the simulators, which count them (`LocationConfigMeter`);
 * between clock steps the world is let settle, so whatever the pipeline can send is sent: a
 * serialized section (a lock held across a pageserver call or a notification, one shard's
 * transaction waiting for another's answer) would leave fewer than C in flight and take more
 * than ⌈N / C⌉ × L of virtual time.
 */

const { setUp } = pageserverWorlds(afterEach);

const C = 8;
const N = 24;
const L = 1_000;
const STEP = 100;

describe('issue 29 point 2 — the pageserver failover pipeline', { timeout: 120_000 }, () => {
  it(`keeps C = ${C} location_configs in flight at the simulators in every wave and ends in ⌈N / C⌉ × L of virtual time`, async () => {
    const shards: SimShardSpec[] = Array.from({ length: N }, (_, i) => ({
      tenant: 1 + Math.floor(i / 8),
      shardNumber: i % 8,
      shardCount: 8,
      attached: 1,
      secondaries: [2 + (i % 3)],
    }));
    const w = await setUp({ nodes: [1, 2, 3, 4].map((id) => ({ id })), shards, locationConfigLatencyMs: L }, { settings: { maxConcurrentFailovers: C } });
    const { cluster } = w;
    const ids = new Set(shards.map(shardIdOf));
    let lastAnswerAt = 0;
    cluster.meter.onAnswered = (shardId, node, mode, at) => {
      if (mode === 'AttachedSingle' && node !== 1 && ids.delete(shardId)) lastAnswerAt = at;
    };
    cluster.meter.reset();
    cluster.sim(1).stopAnswering();
    const lostAt = cluster.clock.now();
    await cluster.drive(w.backend.failover.setNodeAvailability('1', 'OFFLINE'));

    // The simulators' count after the world settled, at every step of the clock until every shard is attached elsewhere.
    const inFlight: number[] = [];
    for (let t = 0; ids.size > 0; t += STEP) {
      if (t > 10 * L) throw new Error(`${ids.size} shard(s) not attached elsewhere after ${t} ms of virtual time`);
      await cluster.idle();
      inFlight.push(cluster.meter.inFlight);
      await cluster.clock.advance(STEP);
    }
    await cluster.idle();

    // Every wave full: C at once from the first request until the last wave's answers.
    const busy = inFlight.filter((n) => n > 0);
    expect(busy).toEqual(Array.from({ length: Math.ceil(N / C) * (L / STEP) }, () => C));
    expect(cluster.meter.highWater).toBe(C);
    expect(lastAnswerAt - lostAt).toBe(Math.ceil(N / C) * L);

    await cluster.until(async () => (await w.app.operations.listOperations({ nodeId: '1', kind: 'FAILOVER' }))[0]?.state === 'SUCCEEDED', {
      what: 'the FAILOVER to succeed',
    });
    const [op] = await w.app.operations.listOperations({ nodeId: '1', kind: 'FAILOVER' });
    expect(op!.counts.moved).toBe(N);
    // Node 1 never answered again: it keeps its stale attachment; exactly one other node holds each shard.
    const view = cluster.view();
    for (const s of shards) {
      const elsewhere = Object.entries(view[shardIdOf(s)]!).filter(([node, l]) => node !== '1' && l.startsWith('AttachedSingle@'));
      expect(elsewhere).toHaveLength(1);
    }
  });
});
