import { afterEach, describe, expect, it } from 'vitest';
import type { TopologySpec } from '../../plugins/fake/index.ts';
import { createTestApp, type TestApp } from '../support/graphql-app.ts';
import { driveUntil, mutate, settle } from './drive.ts';

/**
 * neon:H5 and neon:H8 as operations of kind FAILOVER, on the simulated cluster (which
 * declares a node OFFLINE at once). Pageserver timing (neon:H1–H3) is in
 * test/plugins/pageserver/heartbeats.test.ts, the end-to-end scenarios in test/e2e/neon-parity.test.ts.
 */

let t: TestApp | undefined;
afterEach(async () => {
  await t?.stop();
  t = undefined;
});

const THREE_ZONES: TopologySpec = {
  nodes: [
    { id: '1', zone: 'a' },
    { id: '2', zone: 'a' },
    { id: '3', zone: 'b' },
    { id: '4', zone: 'b' },
  ],
  shards: [
    // Secondaries in and out of the preferred AZ: the one outside (3) is chosen (neon:H5d).
    { tenantId: 'outside', attachedNodeId: '1', preferredZone: 'a', secondaries: [{ nodeId: '2' }, { nodeId: '3' }] },
    // Two secondaries outside: the lowest id.
    { tenantId: 'lowest', attachedNodeId: '1', preferredZone: 'a', secondaries: [{ nodeId: '4' }, { nodeId: '3' }] },
    // No secondary: a cold attach to a fresh node, the one with the fewest attached shards.
    { tenantId: 'cold', attachedNodeId: '1', preferredZone: 'a', secondaries: [] },
    // neon:H5f (the Decision): Pause and Stop keep their attachment.
    { tenantId: 'paused', attachedNodeId: '1', policy: 'PAUSE', secondaries: [{ nodeId: '2' }] },
    { tenantId: 'stopped', attachedNodeId: '1', policy: 'STOP', secondaries: [{ nodeId: '2' }] },
    { tenantId: 'elsewhere', attachedNodeId: '2', secondaries: [{ nodeId: '1' }] },
    { tenantId: 'elsewhere-2', attachedNodeId: '3', secondaries: [{ nodeId: '1' }] },
  ],
};

async function failoverOf(t: TestApp, nodeId: string) {
  await driveUntil(t, () => t.app.operations.live.all(['FAILOVER']).length === 0 && t.app.failover.activeFailover(nodeId) === null);
  await t.app.failover.idle();
  await driveUntil(t, () => t.app.operations.live.all(['FAILOVER']).length === 0);
  const [op] = await t.app.operations.listOperations({ nodeId, kind: 'FAILOVER' });
  return op;
}

describe('neon:H5 — a lost node fails over', () => {
  it('each attached shard to a schedulable secondary outside its preferred AZ first, then the lowest id, else a fresh node; the lost node stays a secondary; no new secondary', async () => {
    t = await createTestApp({ topology: THREE_ZONES });
    await t.cluster.simulation.setNodeOnline('1', false);
    const op = await failoverOf(t, '1');
    expect(op).toMatchObject({ kind: 'FAILOVER', state: 'SUCCEEDED', actor: 'system', reason: 'node 1 went OFFLINE' });
    const steps = await t.app.operations.getSteps(op!.id);
    expect(steps.map((s) => [s.workloadId, s.state, s.reason, s.toNodeId])).toEqual([
      ['cold', 'MOVED', 'COLD_ATTACH', '4'],
      ['lowest', 'MOVED', null, '3'],
      ['outside', 'MOVED', null, '3'],
      ['paused', 'SKIPPED', 'SHARD_POLICY_PAUSE', null],
      ['stopped', 'SKIPPED', 'SHARD_POLICY_STOP', null],
    ]);
    const shard = async (id: string) => t!.cluster.getShard(id);
    expect(await shard('outside')).toMatchObject({ attachedNodeId: '3', secondaryNodeIds: ['1', '2'] });
    expect(await shard('lowest')).toMatchObject({ attachedNodeId: '3', secondaryNodeIds: ['1', '4'] });
    expect(await shard('cold')).toMatchObject({ attachedNodeId: '4', secondaryNodeIds: ['1'] });
    expect(await shard('paused')).toMatchObject({ attachedNodeId: '1' });
    expect(await shard('elsewhere')).toMatchObject({ attachedNodeId: '2', secondaryNodeIds: ['1'] });
    // Events, audit and metrics say so.
    const events = await t.db.prisma.event.findMany({ where: { operationId: op!.id }, orderBy: { seq: 'asc' } });
    // The plan's skips (neon:H5f) are on the log from the admission, as the run's would read.
    expect(events.map((e) => e.type)).toEqual([
      'OPERATION_STARTED',
      'SHARD_SKIPPED',
      'SHARD_SKIPPED',
      'SHARD_MOVED',
      'SHARD_MOVED',
      'SHARD_MOVED',
      'OPERATION_FINISHED',
    ]);
    expect(events.filter((e) => e.type === 'SHARD_SKIPPED').map((e) => JSON.parse(e.payload))).toEqual([
      { shard: 'paused', from: '1', to: null, reason: 'SHARD_POLICY_PAUSE', error: null, failover: true },
      { shard: 'stopped', from: '1', to: null, reason: 'SHARD_POLICY_STOP', error: null, failover: true },
    ]);
    expect(await t.db.prisma.auditEntry.findMany({ where: { action: 'failover' } })).toMatchObject([{ actor: 'system', nodeId: '1', outcome: 'OK' }]);
    const res = await t.gql(`{ operation(id: "${op!.id}") { ... on Operation { kind startedBy counts { moved skipped } } } }`);
    expect(res.data.operation).toEqual({ kind: 'FAILOVER', startedBy: 'system', counts: { moved: 3, skipped: 2 } });
  });

  it('neon:H5b–c: the only node, or a cluster where no other node may schedule, fails over nothing', async () => {
    t = await createTestApp({ topology: { nodes: [{ id: '1' }], shards: [{ tenantId: 'x', attachedNodeId: '1' }] } });
    await t.cluster.simulation.setNodeOnline('1', false);
    await driveUntil(t, async () => (await t!.db.prisma.event.count({ where: { type: 'FAILOVER_NOT_STARTED' } })) === 1);
    expect(JSON.parse((await t.db.prisma.event.findFirstOrThrow({ where: { type: 'FAILOVER_NOT_STARTED' } })).payload)).toEqual({
      reason: 'ONLY_NODE',
      shards: 1,
    });
    await t.stop();
    t = await createTestApp({ topology: THREE_ZONES });
    for (const n of ['2', '3', '4']) await t.gql(`mutation { configureNode(nodeId: "${n}", policy: PAUSE) { __typename } }`);
    await t.cluster.simulation.setNodeOnline('1', false);
    await driveUntil(t, async () => (await t!.db.prisma.event.count({ where: { type: 'FAILOVER_NOT_STARTED' } })) === 1);
    expect(await t.app.operations.listOperations({ kind: 'FAILOVER' })).toEqual([]);
    expect((await t.cluster.getShard('outside'))?.attachedNodeId).toBe('1');
  });

  it('is never refused or queued by maxConcurrentOperations: it starts while a drain runs elsewhere, and a drain or fill of the lost node ends FAILED (NODE_OFFLINE)', async () => {
    t = await createTestApp({ topology: THREE_ZONES, latenciesMs: { cutOver: 5000 } });
    const drain = await mutate(t, 'startNodeDrain', '2');
    expect(drain.__typename).toBe('Operation');
    expect((await mutate(t, 'startNodeDrain', '3')).__typename).toBe('OperationLimitReachedError');
    await t.cluster.simulation.setNodeOnline('2', false);
    await settle(t, '2');
    expect((await t.app.operations.getOperation(drain.id))!).toMatchObject({ state: 'FAILED', error: 'NODE_OFFLINE' });
    const [failover] = await t.app.operations.listOperations({ nodeId: '2', kind: 'FAILOVER' });
    expect(failover).toMatchObject({ kind: 'FAILOVER' });
    await driveUntil(t, async () => (await t!.cluster.getShard('elsewhere'))?.attachedNodeId === '1');
    // Meanwhile a node with a drain running elsewhere fails over too.
    await mutate(t, 'startNodeDrain', '4');
    await t.cluster.simulation.setNodeOnline('3', false);
    await driveUntil(t, async () => (await t!.app.operations.listOperations({ nodeId: '3', kind: 'FAILOVER' })).length === 1);
  });

  it('neon:H8: setNodeAvailability OFFLINE on a node that answers fails it over at once; the next heartbeat makes it ACTIVE; nothing moves back (neon:H7)', async () => {
    t = await createTestApp({ topology: THREE_ZONES, heartbeatIntervalMs: 1000 });
    const res = await t.gql(
      'mutation { setNodeAvailability(nodeId: "1", availability: OFFLINE, reason: "hardware alarm") { __typename ... on ClusterNode { availability } } }',
    );
    expect(res.data.setNodeAvailability).toEqual({ __typename: 'ClusterNode', availability: 'OFFLINE' });
    const op = await failoverOf(t, '1');
    expect(op?.state).toBe('SUCCEEDED');
    await t.clock.advance(1000);
    expect((await t.cluster.getNode('1'))?.availability).toBe('ACTIVE');
    expect((await t.cluster.getShard('outside'))?.attachedNodeId).toBe('3');
    expect(await t.db.prisma.auditEntry.findMany({ where: { action: 'setNodeAvailability' } })).toMatchObject([
      { reason: 'hardware alarm', outcome: 'OK', nodeId: '1' },
    ]);
    const unknown = await t.gql('mutation { setNodeAvailability(nodeId: "9", availability: OFFLINE) { __typename } }');
    expect(unknown.data.setNodeAvailability.__typename).toBe('NotFoundError');
  });

  it('a gateway restart resumes a failover that was running', async () => {
    const a = await createTestApp({ topology: THREE_ZONES });
    t = a;
    const slow = a.cluster.failover.failOverShard.bind(a.cluster.failover);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    a.cluster.failover.failOverShard = async (id, o) => {
      await gate;
      return slow(id, o);
    };
    await a.cluster.simulation.setNodeOnline('1', false);
    await driveUntil(a, () => a.app.failover.activeFailover('1')?.counts.moving === 3);
    await a.app.operations.shutdown();
    t = undefined;
    a.cluster.failover.failOverShard = slow;
    release();
    const b = await createTestApp({ clock: a.clock, databaseFile: a.db.file, backend: () => a.cluster });
    t = b;
    await driveUntil(b, () => b.app.operations.live.all(['FAILOVER']).length === 0);
    const [op] = await b.app.operations.listOperations({ nodeId: '1', kind: 'FAILOVER' });
    expect(op).toMatchObject({ state: 'SUCCEEDED', counts: { moved: 3 } });
    await a.db.close();
  });
});
