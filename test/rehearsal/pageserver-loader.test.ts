import { afterEach, describe, expect, it } from 'vitest';
import type { BackendSnapshot } from '../../src/cluster/rehearsal.ts';
import { formatShardId, tenantIdOf } from '../../simulators/pageserver/index.ts';
import { constantSampler, rehearsePageservers, type RehearsedPageservers } from '../support/rehearsal-pageservers.ts';

/**
 * Issue 33, rehearsal/loaders/pageserver.ts: each live migration's catch-up lasts the
 * duration drawn for SHARD_CUT_OVER of that shard on its origin node, so a drain through the
 * real engine takes the drawn durations in virtual time; `restartNode` takes a pageserver
 * down and brings it back with its re-attach upcall; bad snapshots fail clearly.
 */

let rehearsed: RehearsedPageservers | undefined;
afterEach(async () => {
  await rehearsed?.close();
  rehearsed = undefined;
});

const id = (tenant: number) => formatShardId(tenantIdOf(tenant), 0, 0);

interface ShardLayout {
  tenant: number;
  attached: string;
  secondaries: string[];
  generation: number;
}

/** A snapshot as the plugin writes one, for three pageservers (1 and 2 in az-a, 3 in az-b). */
function snapshotOf(shards: ShardLayout[], offline: string[] = []): BackendSnapshot {
  return {
    plugin: 'pageserver',
    takenAt: Date.UTC(2026, 0, 1),
    data: {
      version: 1,
      nodes: [
        { id: '1', name: 'pageserver-1', zone: 'az-a' },
        { id: '2', name: 'pageserver-2', zone: 'az-a' },
        { id: '3', name: 'pageserver-3', zone: 'az-b' },
      ].map((n) => ({ ...n, availability: offline.includes(n.id) ? 'OFFLINE' : 'ACTIVE', cordoned: false })),
      shards: shards.map((s) => ({
        id: id(s.tenant),
        tenantId: tenantIdOf(s.tenant),
        shardNumber: 0,
        shardCount: 0,
        stripeSize: 0,
        attachedNodeId: s.attached,
        generation: s.generation,
        generationNodeId: s.attached,
        secondaryNodeIds: s.secondaries,
        secondaryCount: s.secondaries.length,
        policy: 'ACTIVE',
        preferredZone: s.attached === '3' ? 'az-b' : 'az-a',
        pendingComputeNotification: false,
        tenantConfig: s.secondaries.length ? { heatmap_period: '1m' } : {},
        observed: { [s.attached]: `AttachedSingle@${s.generation}`, ...Object.fromEntries(s.secondaries.map((n) => [n, 'Secondary'])) },
        timelines: { ['b'.repeat(32)]: '0/16B5A50' },
        secondaries: Object.fromEntries(s.secondaries.map((n) => [n, { bytesTotal: 4 << 20, bytesDownloaded: 4 << 20, heatmap: true }])),
      })),
      computeHook: { configured: true, tokenRequired: false, requestTimeoutMs: 10_000, retries: 10, concurrency: 32 },
      unread: [],
    },
  };
}

const LIVE_OPTIONS = {
  pageservers: [
    { id: 1, url: 'http://ps-1.example:9898', availabilityZone: 'az-a' },
    { id: 2, url: 'http://ps-2.example:9898', availabilityZone: 'az-a' },
    { id: 3, url: 'http://ps-3.example:9898', availabilityZone: 'az-b', kubernetesNode: 'host-c' },
  ],
};

async function gql(r: RehearsedPageservers, query: string): Promise<any> {
  const res = await r.app!.yoga.fetch('http://lockkeeper.test/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query }),
  });
  const body = (await res.json()) as { data?: any; errors?: unknown };
  if (body.errors) throw new Error(JSON.stringify(body.errors));
  return body.data;
}

describe('issue 33: the pageserver rehearsal loader', { timeout: 120_000 }, () => {
  it('a drain of 6 shards at 2 cut-overs at a time takes 3 × the drawn 4 s, each cut-over 4 s, drawn per shard on the drained node', async () => {
    // Node 1 holds tenants 1–6, their secondaries alternate between nodes 2 and 3.
    const layout = [1, 2, 3, 4, 5, 6].map((t) => ({ tenant: t, attached: '1', secondaries: [t % 2 ? '2' : '3'], generation: 3 }));
    const sampler = constantSampler(4000);
    rehearsed = await rehearsePageservers(snapshotOf(layout), LIVE_OPTIONS, sampler);
    const r = rehearsed;
    const app = await r.withApp({ maxConcurrentMoves: 2 });
    const started = (await gql(r, `mutation { r: startNodeDrain(nodeId: "1") { __typename ... on Operation { id } ... on Error { message } } }`)).r;
    expect(started.__typename).toBe('Operation');
    await r.until(async () => (await app.operations.getOperation(started.id))!.state !== 'RUNNING', { what: 'the drain to end', stepMs: 50 });
    const op = (await app.operations.getOperation(started.id))!;
    expect(op.state).toBe('SUCCEEDED');
    const steps = (await app.operations.getSteps(started.id)).filter((s) => s.action === 'CUT_OVER');
    expect(steps.map((s) => s.state)).toEqual(['MOVED', 'MOVED', 'MOVED', 'MOVED', 'MOVED', 'MOVED']);
    for (const s of steps) {
      const ms = s.finishedAt! - s.startedAt!;
      expect(ms, s.workloadId).toBeGreaterThanOrEqual(4000);
      expect(ms, s.workloadId).toBeLessThan(4200);
    }
    const total = op.finishedAt! - op.startedAt;
    expect(total).toBeGreaterThanOrEqual(12_000);
    expect(total).toBeLessThan(12_600);
    expect(sampler.draws.sort()).toEqual([1, 2, 3, 4, 5, 6].map((t) => ['SHARD_CUT_OVER', id(t), '1']));
    expect(r.loaded.fleet.sim(1).attached()).toEqual([]);
  });

  it('restartNode: the pageserver stops answering at once and after downMs re-attaches (generations + 1); a Kubernetes host name finds its pageserver', async () => {
    const layout = [
      { tenant: 1, attached: '2', secondaries: ['3'], generation: 5 },
      { tenant: 2, attached: '2', secondaries: [], generation: 7 },
      { tenant: 3, attached: '3', secondaries: ['1'], generation: 2 },
    ];
    // Heartbeats every second (a live timing the loader keeps): several reach node 2 while it is down.
    rehearsed = await rehearsePageservers(snapshotOf(layout), { ...LIVE_OPTIONS, heartbeatIntervalMs: 1000 }, constantSampler(0));
    const r = rehearsed;
    await r.until(async () => (await r.controller.getNode('2'))?.availability === 'ACTIVE', { what: 'node 2 ACTIVE' });
    const mark = r.loaded.fleet.log.entries.length;
    const from = r.clock.now();
    await r.loaded.restartNode('2', 5000);
    // Down: its heartbeats go unanswered, and nothing re-attaches before downMs.
    await r.until(() => r.clock.now() - from >= 4900, { what: '4.9 s' });
    const toNode2 = r.loaded.fleet.log.entries.slice(mark).filter((e) => e.source === 'node 2');
    expect(toNode2.length).toBeGreaterThan(0);
    expect(toNode2.filter((e) => e.status !== undefined)).toEqual([]);
    expect([r.controller.generationOf(id(1)), r.controller.generationOf(id(2))]).toEqual([5, 7]);
    await r.until(() => r.controller.generationOf(id(1)) === 6, { what: 'the re-attach', maxMs: 2000 });
    expect(r.clock.now() - from).toBeGreaterThanOrEqual(5000);
    expect(r.controller.generationOf(id(2))).toBe(8);
    expect(r.loaded.fleet.sim(2).location(id(1))).toMatchObject({ mode: 'AttachedSingle', generation: 6 });
    await r.until(async () => (await r.controller.getNode('2'))?.availability === 'ACTIVE', { what: 'node 2 ACTIVE again' });

    // Node 3 runs on the Kubernetes node host-c (issue 26): the gateway names it so.
    await r.loaded.restartNode('host-c', 1000);
    await r.until(() => r.controller.generationOf(id(3)) === 3, { what: 'node 3 re-attached', maxMs: 5000 });
    // A node of another plugin is not this loader's: nothing happens.
    await r.loaded.restartNode('k8s-only-node', 1000);
    expect(r.controller.generationOf(id(1))).toBe(6);
  });

  it('a node OFFLINE in the snapshot does not answer: the plugin over the fleet finds it OFFLINE, the others ACTIVE', async () => {
    const layout = [
      { tenant: 1, attached: '3', secondaries: ['1'], generation: 2 },
      { tenant: 2, attached: '1', secondaries: ['3'], generation: 2 },
    ];
    rehearsed = await rehearsePageservers(snapshotOf(layout, ['3']), LIVE_OPTIONS, constantSampler(0));
    const r = rehearsed;
    await r.until(async () => (await r.controller.getNode('1'))?.availability === 'ACTIVE', { what: 'node 1 ACTIVE' });
    for (let i = 0; i < 10; i++) {
      await r.idle();
      await r.clock.advance(1000);
    }
    expect((await r.controller.listNodes()).map((n) => [n.id, n.availability])).toEqual([
      ['1', 'ACTIVE'],
      ['2', 'ACTIVE'],
      ['3', 'OFFLINE'],
    ]);
    expect(r.controller.discoveryReport.unreachable).toEqual(['3']);
    // Its shards are still in the intent where they were.
    expect((await r.controller.getShard(id(1)))?.attachedNodeId).toBe('3');
  });

  it('refuses a snapshot of another version or one that places a shard on a node it does not list', async () => {
    const good = snapshotOf([{ tenant: 1, attached: '1', secondaries: [], generation: 1 }]);
    const { loadPageservers } = await import('../../rehearsal/loaders/pageserver.ts');
    const context = { clock: { now: () => 0, sleep: async () => {}, setTimer: () => () => {} }, durations: constantSampler(0), seed: 1 };
    await expect(loadPageservers({ ...good, data: { ...(good.data as object), version: 2 } }, LIVE_OPTIONS, context)).rejects.toThrow(
      /the pageserver snapshot is unreadable \(version: /,
    );
    const data = good.data as { shards: { attachedNodeId: string }[] };
    const misplaced = { ...good, data: { ...data, shards: [{ ...data.shards[0]!, attachedNodeId: '9' }] } };
    await expect(loadPageservers(misplaced, LIVE_OPTIONS, context)).rejects.toThrow(`places shard ${id(1)} on node 9, which it does not list`);
    await expect(loadPageservers({ ...good, plugin: 'kubevirt' }, LIVE_OPTIONS, context)).rejects.toThrow('a snapshot of plugin "kubevirt"');
  });
});
