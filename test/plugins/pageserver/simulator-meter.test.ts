import { afterEach, describe, expect, it } from 'vitest';
import { shardIdOf, startPageserverFleet, type PageserverFleet, type SimShardSpec } from '../../../simulators/pageserver/index.ts';
import { VirtualClock } from '../../support/virtual-clock.ts';

/**
 * Issue 29 point 2: the failover benchmark measures the concurrency a controller applies at
 * the simulators, not from its configuration: `PUT …/location_config` requests are counted
 * from arrival to answer across the fleet, with their high-water mark and each 2xx answer.
 */

let fleet: PageserverFleet | undefined;
afterEach(async () => {
  await fleet?.close();
  fleet = undefined;
});

const shards: SimShardSpec[] = [0, 1, 2].map((n) => ({ tenant: 1, shardNumber: n, shardCount: 4, attached: 1, secondaries: [2] }));

function attach(f: PageserverFleet, node: number, s: SimShardSpec) {
  return fetch(`${f.sim(node).url}/v1/tenant/${shardIdOf(s)}/location_config`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      mode: 'AttachedSingle',
      generation: 2,
      secondary_conf: null,
      shard_number: s.shardNumber,
      shard_count: s.shardCount,
      shard_stripe_size: 0,
      tenant_conf: {},
    }),
  }).then((r) => r.status);
}

/** Until the simulators hold `n` requests on the clock (their fixed latency). */
async function untilWaiting(f: PageserverFleet, n: number): Promise<void> {
  while (f.waiting() !== n) await new Promise((r) => setImmediate(r));
}

describe('LocationConfigMeter', () => {
  it('counts location_config requests in flight across the fleet, keeps the high-water mark, and reports each 2xx answer', async () => {
    const clock = new VirtualClock(0);
    fleet = await startPageserverFleet({ nodes: [{ id: 1 }, { id: 2 }], shards, clock, locationConfigLatencyMs: 100 });
    const answered: string[] = [];
    fleet.meter.onAnswered = (shard, node, mode, at) => answered.push(`${shard}@${node} ${mode} t=${at}`);
    const both = Promise.all([attach(fleet, 2, shards[0]!), attach(fleet, 2, shards[1]!)]);
    await untilWaiting(fleet, 2);
    expect(fleet.meter.inFlight).toBe(2);
    await clock.advance(100);
    expect(await both).toEqual([200, 200]);
    expect(fleet.meter.highWater).toBe(2);
    expect(answered.sort()).toEqual([`${shardIdOf(shards[0]!)}@2 AttachedSingle t=100`, `${shardIdOf(shards[1]!)}@2 AttachedSingle t=100`]);

    fleet.meter.reset();
    const one = attach(fleet, 2, shards[2]!);
    await untilWaiting(fleet, 1);
    await clock.advance(100);
    expect(await one).toBe(200);
    expect(fleet.meter.highWater).toBe(1);
    while (fleet.meter.inFlight) await new Promise((r) => setImmediate(r));
    expect(fleet.meter.inFlight).toBe(0);
  });
});
