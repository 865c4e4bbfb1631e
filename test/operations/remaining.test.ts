/**
 * Done means safe (issue 17, point 1): COMPLETED / SUCCEEDED say every step has an outcome,
 * not that the node may be powered off. Every node says `safeToRestart` and what remains,
 * with a reason each; an ended drain or maintenance records its `remaining` and warns.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { remainingWorkloads, reasonsLeftBy } from '../../src/domain/remaining.ts';
import type { TestApp } from '../support/graphql-app.ts';
import { createTestApp } from '../support/graphql-app.ts';
import { cluster, enable, maintenanceApp, untilPhase } from '../maintenance/harness.ts';
import { mutate, settle } from './drive.ts';

let t: TestApp | undefined;
afterEach(async () => {
  await t?.stop();
  t = undefined;
});

const MiB = 1024 ** 2;

const NODE_SAFETY = `{ node(id: "1") { ... on ClusterNode { safeToRestart remainingWorkloads { kind id reason message } } } }`;

async function nodeSafety(app: TestApp) {
  const res = await app.gql(NODE_SAFETY);
  expect(res.errors).toBeUndefined();
  return res.data.node as { safeToRestart: boolean; remainingWorkloads: { kind: string; id: string; reason: string; message: string }[] };
}

async function remainingOf(app: TestApp, id: string) {
  const res = await app.gql(`{ operation(id: "${id}") { ... on Operation { state remaining { kind id reason message } } } }`);
  expect(res.errors).toBeUndefined();
  return res.data.operation as { state: string; remaining: { kind: string; id: string; reason: string; message: string }[] | null };
}

describe('the rule (domain/remaining.ts)', () => {
  it('lists running VMs and attached shards of the node only, each with a reason', () => {
    const out = remainingWorkloads(
      '1',
      {
        vms: [
          { id: 'a/run', nodeId: '1', status: 'Running' },
          { id: 'a/mig', nodeId: '1', status: 'Migrating' },
          { id: 'a/off', nodeId: '1', status: 'Stopped' },
          { id: 'a/elsewhere', nodeId: '2', status: 'Running' },
        ],
        shards: [
          { id: 's-lag', attachedNodeId: '1', secondaryNodeIds: ['2'] },
          { id: 's-alone', attachedNodeId: '1', secondaryNodeIds: [] },
          { id: 's-plain', attachedNodeId: '1', secondaryNodeIds: ['3'] },
          { id: 's-moved', attachedNodeId: '2', secondaryNodeIds: ['1'] },
        ],
      },
      new Map([
        ['s-lag', 'SECONDARY_LAGGING'],
        ['s-moved', 'SECONDARY_LAGGING'],
      ]),
    );
    expect(out.map((w) => `${w.kind} ${w.id} ${w.reason}`)).toEqual([
      'VM a/run VM_RUNNING',
      'VM a/mig VM_MIGRATING',
      'SHARD s-lag SECONDARY_LAGGING',
      'SHARD s-alone NO_SECONDARY',
      'SHARD s-plain NOT_CUT_OVER',
    ]);
    expect(out[2]!.message).toBe(
      'still attached to node 1 (left: SECONDARY_LAGGING): not cut over to its secondary on node 2, so a restart of the node interrupts it',
    );
    expect(out[3]!.message).toBe('still attached to node 1 with no secondary to take over');
  });

  it('takes the reasons of skipped and failed steps only', () => {
    const steps = [
      { workloadId: 'a', state: 'SKIPPED', reason: 'SHARD_POLICY_PAUSE' },
      { workloadId: 'b', state: 'FAILED', reason: 'TRANSIENT' },
      { workloadId: 'c', state: 'MOVED', reason: 'HOME_AZ' },
    ];
    expect([...reasonsLeftBy(steps)]).toEqual([
      ['a', 'SHARD_POLICY_PAUSE'],
      ['b', 'TRANSIENT'],
    ]);
  });
});

/** Node 1 holds three shards: one moves, one has a lagging secondary, one is paused by its owner. Node 2 takes what moves. */
function storageNodes() {
  return {
    nodes: [
      { id: '1', roles: ['storage'] },
      { id: '2', roles: ['storage'] },
    ],
    vms: [],
    shards: [
      { tenantId: 'ok', attachedNodeId: '1', secondaries: [{ nodeId: '2' }] },
      { tenantId: 'lag', attachedNodeId: '1', secondaries: [{ nodeId: '2', lagBytes: 512 * MiB, downloadBytesPerSecond: 0 }] },
      { tenantId: 'paused', attachedNodeId: '1', secondaries: [{ nodeId: '2' }], policy: 'PAUSE' as const },
    ],
  };
}

describe('a drain that SUCCEEDED is not safe to restart while shards remain', () => {
  it('records what remains with each skip reason, warns with an event, and the node (GraphQL and REST) says it is not safe', async () => {
    t = await createTestApp({ topology: storageNodes(), latenciesMs: { cutOver: 10 } });
    expect((await nodeSafety(t)).safeToRestart).toBe(false);
    const op = await mutate(t, 'startNodeDrain', '1');
    const done = await settle(t, '1');
    expect(done).toMatchObject({ state: 'SUCCEEDED', counts: { moved: 1, skipped: 2 } });
    const ended = await remainingOf(t, op.id);
    expect(ended.remaining!.map((w) => `${w.kind} ${w.id} ${w.reason}`)).toEqual(['SHARD lag SECONDARY_LAGGING', 'SHARD paused SHARD_POLICY_PAUSE']);

    const events = await t.db.prisma.event.findMany({ where: { type: 'WORKLOADS_REMAIN', operationId: op.id } });
    expect(events).toHaveLength(1);
    expect(JSON.parse(events[0]!.payload)).toMatchObject({ outcome: 'SUCCEEDED', safeToRestart: false, remaining: [{ id: 'lag' }, { id: 'paused' }] });

    // The node reads the same, with the reasons its drain recorded, from GraphQL and from the REST facade.
    const node = await nodeSafety(t);
    expect(node.safeToRestart).toBe(false);
    expect(node.remainingWorkloads.map((w) => `${w.id} ${w.reason}`)).toEqual(['lag SECONDARY_LAGGING', 'paused SHARD_POLICY_PAUSE']);
    const bound = await t.app.start(0, '127.0.0.1');
    const url = bound.url.replace(/\/graphql$/, '');
    {
      const rest = await (await fetch(`${url}/control/v1/node/1`)).json();
      expect(rest).toMatchObject({ id: 1, scheduling: 'PauseForRestart', safe_to_restart: false });
      expect(rest.remaining_workloads.map((w: { id: string; reason: string }) => `${w.id} ${w.reason}`)).toEqual([
        'lag SECONDARY_LAGGING',
        'paused SHARD_POLICY_PAUSE',
      ]);
      const list = await (await fetch(`${url}/control/v1/node`)).json();
      expect(list.map((n: { id: number; safe_to_restart: boolean }) => [n.id, n.safe_to_restart])).toEqual([
        [1, false],
        [2, false],
      ]);
    }
  });

  it('a drain that moved everything leaves nothing: empty remaining, no warning, safe to restart', async () => {
    const topology = storageNodes();
    topology.shards = topology.shards.slice(0, 1);
    t = await createTestApp({ topology, latenciesMs: { cutOver: 10 } });
    const op = await mutate(t, 'startNodeDrain', '1');
    await settle(t, '1');
    expect((await remainingOf(t, op.id)).remaining).toEqual([]);
    expect(await t.db.prisma.event.count({ where: { type: 'WORKLOADS_REMAIN' } })).toBe(0);
    expect(await nodeSafety(t)).toEqual({ safeToRestart: true, remainingWorkloads: [] });
  });

  it('a fill records no remaining (it empties nothing)', async () => {
    t = await createTestApp({ topology: storageNodes(), latenciesMs: { cutOver: 10 } });
    const fill = await mutate(t, 'startNodeFill', '2');
    await settle(t, '2');
    expect((await remainingOf(t, fill.id)).remaining).toBeNull();
  });
});

describe('a maintenance COMPLETED with a shard left', () => {
  it('keeps COMPLETED (every VM handled) but the node is not safe to restart, naming the shard and why', async () => {
    t = await maintenanceApp(
      cluster([{ namespace: 'default', name: 'web', nodeId: '1' }], {
        shards: [
          { tenantId: 'a', attachedNodeId: '1', secondaries: [{ nodeId: '2' }] },
          { tenantId: 'b', attachedNodeId: '1', secondaries: [{ nodeId: '3', lagBytes: 512 * MiB, downloadBytesPerSecond: 0 }] },
        ],
      }),
    );
    // While the VM runs, it is what remains.
    expect((await nodeSafety(t)).remainingWorkloads.map((w) => `${w.kind} ${w.id} ${w.reason}`)).toEqual([
      'VM default/web VM_RUNNING',
      'SHARD a NOT_CUT_OVER',
      'SHARD b NOT_CUT_OVER',
    ]);
    const op = await enable(t, '1');
    await untilPhase(t, '1', 'COMPLETED');
    const ended = await remainingOf(t, op.id);
    expect(ended.state).toBe('SUCCEEDED');
    expect(ended.remaining).toEqual([
      {
        kind: 'SHARD',
        id: 'b',
        reason: 'SECONDARY_LAGGING',
        message: 'still attached to node 1 (left: SECONDARY_LAGGING): not cut over to its secondary on node 3, so a restart of the node interrupts it',
      },
    ]);
    expect(await nodeSafety(t)).toMatchObject({ safeToRestart: false, remainingWorkloads: [{ id: 'b', reason: 'SECONDARY_LAGGING' }] });
    expect(await t.db.prisma.event.count({ where: { type: 'WORKLOADS_REMAIN', operationId: op.id } })).toBe(1);
  });
});
