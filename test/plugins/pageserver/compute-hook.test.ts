import { afterEach, describe, expect, it } from 'vitest';
import { ComputeHook, type NotifyOutcome, type ShardUpdate } from '../../../plugins/pageserver/compute-hook.ts';
import { ComputeHookSim } from '../../../simulators/compute-hook/index.ts';
import { roundRobinShards, shardIdOf, type SimShardSpec } from '../../../simulators/pageserver/index.ts';
import { closeAfterEach, startSimCluster } from '../../support/pageserver-cluster.ts';
import { flushMicrotasks, VirtualClock } from '../../support/virtual-clock.ts';

/** neon:C12–C13 against the simulated compute control plane, on a virtual clock. */

const silent = { info: () => {}, warn: () => {} };
const TENANT = 'a'.repeat(32);
let sim: ComputeHookSim | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

async function hookWith(options: { token?: string; trailingSlash?: boolean } = {}) {
  const clock = new VirtualClock();
  sim = await new ComputeHookSim({ clock, token: options.token }).start();
  const hook = new ComputeHook({ clock, url: `${sim.url}${options.trailingSlash ? '/' : ''}`, token: options.token, log: silent });
  /** Runs one notify while moving the clock in small steps. */
  const run = async (update: ShardUpdate): Promise<NotifyOutcome> => {
    let result: NotifyOutcome | undefined;
    const p = hook.notify(update).then((r) => (result = r));
    while (result === undefined) {
      await new Promise((r) => setTimeout(r, 2));
      await flushMicrotasks();
      if (result === undefined && hook.pending <= sim!.waiting) await clock.advance(100);
    }
    await p;
    return result;
  };
  return { clock, hook, sim: sim!, run };
}

const update = (shardNumber: number, shardCount: number, nodeId: string, zone: string | null = 'az-a'): ShardUpdate => ({
  tenantId: TENANT,
  shardNumber,
  shardCount,
  stripeSize: 32768,
  nodeId,
  preferredZone: zone,
});

describe('neon:C12 — the notify-attach request', () => {
  it("PUT <url without trailing slash>/notify-attach with Neon's body and the bearer token", async () => {
    const { sim, run } = await hookWith({ token: 'cplane-jwt', trailingSlash: true });
    expect(await run(update(0, 0, '2'))).toEqual({ kind: 'ok' });
    expect(sim.notifications).toEqual([
      expect.objectContaining({
        authorization: 'Bearer cplane-jwt',
        status: 200,
        body: { tenant_id: TENANT, preferred_az: 'az-a', stripe_size: null, shards: [{ node_id: 2, shard_number: 0 }] },
      }),
    ]);
  });

  it('a sharded tenant is notified once every shard has a node, shards sorted by number, with the stripe size; an applied body is not sent again', async () => {
    const { sim, run } = await hookWith();
    expect(await run(update(1, 2, '3'))).toEqual({ kind: 'notReady' });
    expect(sim.notifications).toEqual([]);
    expect(await run(update(0, 2, '1', null))).toEqual({ kind: 'ok' });
    expect(sim.notifications.map((n) => n.body)).toEqual([
      {
        tenant_id: TENANT,
        preferred_az: null,
        stripe_size: 32768,
        shards: [
          { node_id: 1, shard_number: 0 },
          { node_id: 3, shard_number: 1 },
        ],
      },
    ]);
    expect(await run(update(0, 2, '1', null))).toEqual({ kind: 'ok' });
    expect(sim.notifications).toHaveLength(1);
    expect(await run(update(0, 2, '2', null))).toEqual({ kind: 'ok' });
    expect(sim.notifications).toHaveLength(2);
  });
});

describe('neon:C12 — one notification of a tenant at a time', () => {
  it('a notification made while an older one of the tenant is unanswered goes after it, with the latest view: the computes end on the newest', async () => {
    const { clock, hook, sim } = await hookWith();
    hook.remember(update(1, 2, '3'));
    // The first is answered after 5 s; the second at once.
    sim.script([{ status: 200, delayMs: 5_000 }, { status: 200 }]);
    const outcomes: NotifyOutcome[] = [];
    const first = hook.notify(update(0, 2, '1')).then((o) => outcomes.push(o));
    while (sim.waiting === 0) await new Promise((r) => setTimeout(r, 2));
    const second = hook.notify(update(1, 2, '2')).then((o) => outcomes.push(o));
    while (outcomes.length < 2) {
      await new Promise((r) => setTimeout(r, 2));
      await flushMicrotasks();
      if (outcomes.length < 2 && hook.pending <= sim.waiting) await clock.advance(100);
    }
    await Promise.all([first, second]);
    expect(outcomes).toEqual([{ kind: 'ok' }, { kind: 'ok' }]);
    expect(sim.bodiesFor(TENANT).map((b) => b.shards.map((s) => s.node_id))).toEqual([
      [1, 3],
      [1, 2],
    ]);
    expect(sim.applied.get(TENANT)?.shards).toEqual([
      { node_id: 1, shard_number: 0 },
      { node_id: 2, shard_number: 1 },
    ]);
  });
});

describe("neon:C13 — Neon's answers and retries", () => {
  it('423 is busy: not retried in the call, and the same body is sent again next time', async () => {
    const { sim, run } = await hookWith();
    sim.script([{ status: 423 }]);
    expect(await run(update(0, 0, '2'))).toEqual({ kind: 'busy' });
    expect(sim.notifications).toHaveLength(1);
    expect(await run(update(0, 0, '2'))).toEqual({ kind: 'ok' });
    expect(sim.notifications).toHaveLength(2);
  });

  it('400, 401 and 403 are fatal; another status is unexpected; neither is retried', async () => {
    for (const status of [400, 401, 403]) {
      const { sim, run } = await hookWith();
      sim.script([{ status }]);
      expect(await run(update(0, 0, '2'))).toEqual({ kind: 'fatal', status });
      expect(sim.notifications).toHaveLength(1);
      await sim.close();
    }
    const { sim: s, run } = await hookWith();
    s.script([{ status: 418 }]);
    expect(await run(update(0, 0, '2'))).toEqual({ kind: 'unexpected', status: 418 });
    expect(s.notifications).toHaveLength(1);
  });

  it("429 waits 5 s, then retries; 502, 503, 504 retry with Neon's backoff (0, 1.1, 1.21 s …)", async () => {
    const { sim, run, clock } = await hookWith();
    const started = clock.now();
    sim.script([{ status: 429 }, { status: 502 }, { status: 503 }, { status: 504 }]);
    expect(await run(update(0, 0, '2'))).toEqual({ kind: 'ok' });
    const at = sim.notifications.map((n) => n.at - started);
    // 429 at 0, then 5 s + no backoff after the first failure; 1.1 s; 1.21 s; 1.331 s.
    expect(at[0]).toBe(0);
    expect(at[1]).toBeGreaterThanOrEqual(5000);
    expect(at[1]).toBeLessThan(5100);
    expect(at[2]! - at[1]!).toBeGreaterThanOrEqual(1100);
    expect(at[3]! - at[2]!).toBeGreaterThanOrEqual(1210);
    expect(at[4]! - at[3]!).toBeGreaterThanOrEqual(1331);
    expect(sim.notifications.map((n) => n.status)).toEqual([429, 502, 503, 504, 200]);
  });

  it('at most 10 retries; each request times out after 10 s', async () => {
    const { sim, run } = await hookWith();
    sim.answerWith(() => ({ status: 503 }));
    expect(await run(update(0, 0, '2'))).toMatchObject({ kind: 'failed' });
    expect(sim.notifications).toHaveLength(11);
    const { sim: slow, run: runSlow, clock } = await hookWith();
    const started = clock.now();
    slow.script([{ status: 200, delayMs: 15_000 }]);
    expect(await runSlow(update(0, 0, '2'))).toEqual({ kind: 'ok' });
    // The first request was given up after 10 s and tried again at once.
    expect(slow.notifications.map((n) => [n.status, n.at - started])).toEqual([
      [0, 10_000],
      [200, 10_000],
    ]);
  });

  it('at most 32 calls are in flight at once', async () => {
    const { sim, hook, clock } = await hookWith();
    sim.answerWith(() => ({ status: 200, delayMs: 1000 }));
    const all = Array.from({ length: 40 }, (_, i) => hook.notify({ ...update(0, 0, '2'), tenantId: i.toString(16).padStart(32, '0') }));
    let most = 0;
    let settled = 0;
    for (const p of all) void p.then(() => settled++);
    while (settled < all.length) {
      await new Promise((r) => setTimeout(r, 2));
      await flushMicrotasks();
      most = Math.max(most, sim.waiting);
      if (hook.pending <= sim.waiting) await clock.advance(100);
    }
    expect(most).toBe(32);
    expect(sim.notifications).toHaveLength(40);
  });
});

describe('neon:C14 — a failed notification outside a cut-over keeps the attach and is retried', () => {
  it('a failover with the hook refusing: attached, flag set (describe and the shard), every background pass sends again; one success clears it', async () => {
    const spec: SimShardSpec = { tenant: 9, attached: 1, secondaries: [2] };
    const c = closeAfterEachOnce(await startSimCluster({ nodes: [{ id: 1 }, { id: 2 }, { id: 3 }], shards: [spec] }));
    const backend = await c.startController();
    const id = shardIdOf(spec);
    c.hook.answerWith(() => ({ status: 503 }));
    c.sim(1).stopAnswering();
    await backend.failover.setNodeAvailability('1', 'OFFLINE');
    await c.drive(backend.failover.failOverShard(id, { fromNodeId: '1', toNodeId: '2' }));
    expect(c.view()[id]!['2']).toBe('AttachedSingle@2');
    expect(await backend.getShard(id)).toMatchObject({ attachedNodeId: '2', secondaryNodeIds: ['1'], pendingComputeNotification: true });
    expect(await backend.placement.describeShard(id)).toMatchObject({ pendingComputeNotification: true, generation: 2, generationNodeId: '2' });
    const first = c.hook.notifications.length;
    await c.advance(20_000, 500);
    expect(c.hook.notifications.length).toBeGreaterThan(first);
    c.hook.answerWith(() => ({ status: 200 }));
    await c.until(async () => (await backend.getShard(id))?.pendingComputeNotification === false, { what: 'flag cleared', maxMs: 25_000 });
    expect(c.view()[id]!['2']).toBe('AttachedSingle@2');
    c.sim(1).resume();
  });
});

describe('neon:C12 across a gateway restart', () => {
  it('the first notification of a sharded tenant after a restart names every shard (not "not ready", which would count as sent)', async () => {
    const shards = roundRobinShards([1, 2, 3], 1, 2);
    const c = closeAfterEachOnce(await startSimCluster({ nodes: [{ id: 1 }, { id: 2 }, { id: 3 }], shards }));
    const first = await c.startController();
    await first.close();
    // The restarted gateway's plugin: nothing notified yet in this process.
    const backend = await c.startController();
    const [moved, other] = shards.map(shardIdOf);
    const shard = (await backend.getShard(moved!))!;
    const to = shard.secondaryNodeIds[0]!;
    await c.drive(backend.cutOverShard(moved!, { fromNodeId: shard.attachedNodeId, toNodeId: to }));
    const otherNode = Number((await backend.getShard(other!))!.attachedNodeId);
    const tenant = moved!.slice(0, 32);
    expect(c.hook.applied.get(tenant)?.shards).toEqual([
      { shard_number: 0, node_id: Number(to) },
      { shard_number: 1, node_id: otherNode },
    ]);
  });
});

const clusters = closeAfterEach(afterEach);
const closeAfterEachOnce = <T extends Parameters<typeof clusters.use>[0]>(c: T) => clusters.use(c) as T;
