import { afterEach, describe, expect, it } from 'vitest';
import type { TopologySpec } from '../../plugins/fake/index.ts';
import { createTestApp, type TestApp } from '../support/graphql-app.ts';
import { refuseOperationsOfKind } from '../support/test-database.ts';
import { driveUntil, mutate, policyOf, settle } from './drive.ts';

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
    // No secondary: a cold attach to a fresh node, in its preferred AZ first (neon:H10): node 2
    // (zone a), though node 4 (zone b) has fewer attached shards.
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
      ['cold', 'MOVED', 'COLD_ATTACH', '2'],
      ['lowest', 'MOVED', null, '3'],
      ['outside', 'MOVED', null, '3'],
      ['paused', 'SKIPPED', 'SHARD_POLICY_PAUSE', null],
      ['stopped', 'SKIPPED', 'SHARD_POLICY_STOP', null],
    ]);
    const shard = async (id: string) => t!.cluster.getShard(id);
    expect(await shard('outside')).toMatchObject({ attachedNodeId: '3', secondaryNodeIds: ['1', '2'] });
    expect(await shard('lowest')).toMatchObject({ attachedNodeId: '3', secondaryNodeIds: ['1', '4'] });
    expect(await shard('cold')).toMatchObject({ attachedNodeId: '2', secondaryNodeIds: ['1'] });
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
    // neon:H10: the plan and the events name why each node was chosen.
    expect(steps.map((s) => [s.workloadId, s.detail ?? null])).toEqual([
      ['cold', '{"placement":"preferred AZ a"}'],
      ['lowest', '{"placement":"secondary (neon:H5)"}'],
      ['outside', '{"placement":"secondary (neon:H5)"}'],
      ['paused', null],
      ['stopped', null],
    ]);
    expect(events.filter((e) => e.type === 'SHARD_MOVED').map((e) => JSON.parse(e.payload))).toEqual([
      { shard: 'cold', from: '1', to: '2', reason: null, error: null, failover: true, placement: 'preferred AZ a' },
      { shard: 'lowest', from: '1', to: '3', reason: null, error: null, failover: true, placement: 'secondary (neon:H5)' },
      { shard: 'outside', from: '1', to: '3', reason: null, error: null, failover: true, placement: 'secondary (neon:H5)' },
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

  it('neon:H10: a resumed step whose planned node may no longer schedule chooses again by the same ranking, and its step and event name the new reason', async () => {
    const a = await createTestApp({ topology: THREE_ZONES });
    t = a;
    const slow = a.cluster.failover.failOverShard.bind(a.cluster.failover);
    a.cluster.failover.failOverShard = () => new Promise(() => {});
    await a.cluster.simulation.setNodeOnline('1', false);
    await driveUntil(a, () => a.app.failover.activeFailover('1')?.counts.moving === 3);
    const [first] = await a.app.operations.listOperations({ nodeId: '1', kind: 'FAILOVER' });
    expect((await a.app.operations.getSteps(first!.id)).find((s) => s.workloadId === 'cold')).toMatchObject({
      toNodeId: '2',
      detail: '{"placement":"preferred AZ a"}',
    });
    // The planned node (2, zone a) is paused before the restart: zone a has no other node, so
    // zone b's nodes tie on AZ and affinity and node 4 (no attached shard) wins on utilisation.
    expect((await a.gql(`mutation { configureNode(nodeId: "2", policy: PAUSE) { __typename } }`)).data.configureNode.__typename).toBe('ClusterNode');
    await a.app.operations.shutdown();
    t = undefined;
    a.cluster.failover.failOverShard = slow;
    const b = await createTestApp({ clock: a.clock, databaseFile: a.db.file, backend: () => a.cluster });
    t = b;
    await driveUntil(b, () => b.app.operations.live.all(['FAILOVER']).length === 0);
    expect((await b.app.operations.getSteps(first!.id)).find((s) => s.workloadId === 'cold')).toMatchObject({
      state: 'MOVED',
      reason: 'COLD_ATTACH',
      toNodeId: '4',
      detail: '{"placement":"least utilised"}',
    });
    const moved = await b.db.prisma.event.findMany({ where: { operationId: first!.id, type: 'SHARD_MOVED' } });
    expect(moved.map((e) => JSON.parse(e.payload)).find((p) => p.shard === 'cold')).toMatchObject({ to: '4', placement: 'least utilised' });
    await a.db.close();
  });

  it('ha:L8: a loss told again to the restarted gateway as it watches (a backend replaying an unheard nodeLost) resumes the recorded failover and starts no second one', async () => {
    const a = await createTestApp({ topology: THREE_ZONES });
    t = a;
    const slow = a.cluster.failover.failOverShard.bind(a.cluster.failover);
    // The first gateway's moves never answer: the shards are still attached to node 1 when it restarts.
    a.cluster.failover.failOverShard = () => new Promise(() => {});
    await a.cluster.simulation.setNodeOnline('1', false);
    await driveUntil(a, () => a.app.failover.activeFailover('1')?.counts.moving === 3);
    await a.app.operations.shutdown();
    t = undefined;
    a.cluster.failover.failOverShard = slow;
    const watch = a.cluster.watch.bind(a.cluster);
    a.cluster.watch = (listener) => {
      const unwatch = watch(listener);
      queueMicrotask(() => listener({ type: 'nodeLost', nodeId: '1' }));
      return unwatch;
    };
    const b = await createTestApp({ clock: a.clock, databaseFile: a.db.file, backend: () => a.cluster });
    t = b;
    await b.app.failover.idle();
    await driveUntil(b, () => b.app.operations.live.all(['FAILOVER']).length === 0);
    const ops = await b.app.operations.listOperations({ nodeId: '1', kind: 'FAILOVER' });
    expect(ops.map((o) => [o.state, o.counts.moved])).toEqual([['SUCCEEDED', 3]]);
    await a.db.close();
  });
});

describe('neon:H5 — operations.maxConcurrentFailovers: attaches in flight at once', () => {
  /** Node 1 holds ten shards, each with a secondary on node 2 or 3; attaches take 1 s (virtual). */
  const TEN: TopologySpec = {
    nodes: [{ id: '1' }, { id: '2' }, { id: '3' }],
    shards: Array.from({ length: 10 }, (_, i) => ({ tenantId: `t${i}`, attachedNodeId: '1', secondaries: [{ nodeId: String(2 + (i % 2)) }] })),
  };

  /** When (virtual ms after the loss) each shard was attached elsewhere, and the simulator's high-water mark of attaches in flight. */
  async function loseNode1(settings: { maxConcurrentFailovers?: number }) {
    t = await createTestApp({ topology: TEN, latenciesMs: { cutOver: 1000 }, settings });
    const app = t;
    const attachedAt: number[] = [];
    const lostAt = app.clock.now();
    const unwatch = app.cluster.watch((e) => {
      if (e.type === 'shardChanged' && e.shard.attachedNodeId !== '1') attachedAt.push(app.clock.now() - lostAt);
    });
    await app.cluster.simulation.setNodeOnline('1', false);
    const op = await failoverOf(app, '1');
    unwatch();
    return { op, attachedAt, highWater: app.cluster.failover.attaches.highWater };
  }

  it('never more in flight than configured, measured where the attach requests arrive; the first wave starts at the loss', async () => {
    const { op, attachedAt, highWater } = await loseNode1({ maxConcurrentFailovers: 3 });
    expect(op).toMatchObject({ state: 'SUCCEEDED', counts: { moved: 10 } });
    expect(highWater).toBe(3);
    // ⌈10 / 3⌉ = 4 waves of 1 s, the first answered 1 s after the loss.
    expect(attachedAt).toEqual([1000, 1000, 1000, 2000, 2000, 2000, 3000, 3000, 3000, 4000]);
  });

  it('a loss whose shards all have a secondary is planned from the lost node’s shards alone, never a listing of the whole fleet (a region holds a million)', async () => {
    const listings: unknown[] = [];
    t = await createTestApp({
      topology: TEN,
      backend: (c) =>
        Object.assign(Object.create(c) as typeof c, {
          listShards: (filter?: object) => {
            listings.push(filter ?? {});
            return c.listShards(filter);
          },
        }),
    });
    listings.length = 0;
    await t.cluster.simulation.setNodeOnline('1', false);
    expect(await failoverOf(t, '1')).toMatchObject({ state: 'SUCCEEDED', counts: { moved: 10 } });
    expect(listings).toEqual([{ attachedNodeId: '1' }]);
  });

  it('by default 128: ten shards all at once', async () => {
    const { attachedAt, highWater } = await loseNode1({});
    expect(highWater).toBe(10);
    expect(attachedAt).toEqual(Array(10).fill(1000));
  });
});

describe('ha:R2 — a FAILOVER ends the lost node’s drain in the transaction that admits it', () => {
  /**
   * What the database holds of the node's operations (what another replica would see): the
   * operations, and the events of operations (a node's own events, e.g. its availability, are
   * written by other transactions, whose seq may fall between those of one transaction).
   */
  async function recorded(t: TestApp, nodeId: string) {
    const ops = await t.db.prisma.operation.findMany({ where: { nodeId }, orderBy: { createdAt: 'asc' } });
    const events = await t.db.prisma.event.findMany({ where: { nodeId, operationId: { not: null } }, orderBy: { seq: 'asc' } });
    return { ops, events };
  }

  const ATTACHED_TO_1 = ['outside', 'lowest', 'cold'];

  /** Until the failover is in the database, without moving the clock (nothing else advances meanwhile). */
  async function failoverRecorded(t: TestApp): Promise<void> {
    for (let i = 0; (await t.db.prisma.operation.count({ where: { kind: 'FAILOVER' } })) === 0; i++) {
      if (i === 1000) throw new Error('no failover recorded');
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  /** Holds every shard failover at the backend until released, so the failover reads RUNNING meanwhile. */
  function holdFailovers(t: TestApp): () => void {
    const failover = t.cluster.failover;
    const real = failover.failOverShard.bind(failover);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    failover.failOverShard = async (id, o) => {
      await gate;
      return real(id, o);
    };
    return release;
  }

  it('neon:H5: its cut-over in flight never answers, yet the drain is FAILED (NODE_OFFLINE) when the failover is: the cut-over ABANDONED, the rest skipped, one end', async () => {
    t = await createTestApp({ topology: THREE_ZONES, settings: { maxConcurrentMoves: 1 } });
    t.cluster.simulation.injectFaults({ stuck: (await t.cluster.listShards({ attachedNodeId: '1' })).map((s) => s.id) });
    const release = holdFailovers(t);
    const drain = await mutate(t, 'startNodeDrain', '1');
    await driveUntil(t, () => t!.app.storage.activeOperation('1')?.counts.moving === 1);
    await t.cluster.simulation.setNodeOnline('1', false);
    // The first state the database shows with a failover in it (the clock has not moved): the drain has ended in it too.
    await failoverRecorded(t);
    const { ops, events } = await recorded(t, '1');
    expect(ops.map((o) => [o.kind, o.state, o.error])).toEqual([
      ['DRAIN', 'FAILED', 'NODE_OFFLINE'],
      ['FAILOVER', 'RUNNING', null],
    ]);
    const steps = await t.db.prisma.operationStep.findMany({ where: { operationId: drain.id }, orderBy: { seq: 'asc' } });
    const abandoned = steps.filter((s) => s.state === 'ABANDONED');
    expect(abandoned).toHaveLength(1);
    expect(abandoned[0]).toMatchObject({ reason: 'NODE_OFFLINE' });
    expect(abandoned[0]!.error).toContain('went OFFLINE and a failover took over its shards');
    expect(steps.filter((s) => s.state === 'PLANNED' || s.state === 'MOVING')).toEqual([]);
    expect(steps.map((s) => [s.workloadId, s.state, s.reason])).toEqual([
      ['lowest', 'ABANDONED', 'NODE_OFFLINE'],
      ['outside', 'SKIPPED', 'NOT_ATTEMPTED'],
    ]);
    // In the log: the drain's last step and its end, then at once the failover's start (one transaction, in order).
    const started = events.findIndex((e) => e.type === 'OPERATION_STARTED' && e.operationId === ops[1]!.id);
    expect(events.slice(started - 4).map((e) => [e.type, e.operationId])).toEqual([
      ['STEP_ABANDONED', drain.id],
      ['OPERATION_FINISHED', drain.id],
      ['WORKLOADS_REMAIN', drain.id],
      ['NODE_POLICY_CHANGED', drain.id],
      ['OPERATION_STARTED', ops[1]!.id],
      // The failover's plan-time skips (the paused and the stopped shard), in its admission too.
      ['SHARD_SKIPPED', ops[1]!.id],
      ['SHARD_SKIPPED', ops[1]!.id],
    ]);
    expect(JSON.parse(events[started - 3]!.payload)).toMatchObject({ outcome: 'FAILED', error: 'NODE_OFFLINE' });
    expect(await policyOf(t, '1')).not.toBe('DRAINING');

    // The backend answers at last: the failover finds each shard where it is; the drain's record does not change again.
    t.cluster.simulation.injectFaults({ stuck: [] });
    release();
    await driveUntil(t, () => t!.app.operations.live.all(['FAILOVER']).length === 0);
    for (const id of ATTACHED_TO_1) expect((await t.cluster.listShards()).find((s) => s.tenantId === id)?.attachedNodeId).not.toBe('1');
    const after = await recorded(t, '1');
    expect(after.ops.map((o) => [o.kind, o.state])).toEqual([
      ['DRAIN', 'FAILED'],
      ['FAILOVER', 'SUCCEEDED'],
    ]);
    expect(after.events.filter((e) => e.operationId === drain.id && e.type === 'OPERATION_FINISHED')).toHaveLength(1);
    expect(await t.db.prisma.operationStep.findMany({ where: { operationId: drain.id }, orderBy: { seq: 'asc' } })).toEqual(steps);
  });

  it('one transaction: when the database refuses the failover, the drain’s end is not written either (nothing half-written)', async () => {
    t = await createTestApp({ topology: THREE_ZONES, settings: { maxConcurrentMoves: 1 } });
    t.cluster.simulation.injectFaults({ stuck: (await t.cluster.listShards({ attachedNodeId: '1' })).map((s) => s.id) });
    const drain = await mutate(t, 'startNodeDrain', '1');
    await driveUntil(t, () => t!.app.storage.activeOperation('1')?.counts.moving === 1);
    await t.app.operations.journal.flush();
    const stepsOf = () => t!.db.prisma.operationStep.findMany({ where: { operationId: drain.id }, orderBy: { seq: 'asc' } });
    const before = await stepsOf();
    await refuseOperationsOfKind(t.db, 'FAILOVER');
    await t.cluster.simulation.setNodeOnline('1', false);
    await t.app.failover.idle();
    const refused = await recorded(t, '1');
    expect(refused.ops.map((o) => [o.kind, o.state])).toEqual([['DRAIN', 'RUNNING']]);
    expect(refused.events.filter((e) => e.operationId === drain.id && ['OPERATION_FINISHED', 'STEP_ABANDONED'].includes(e.type))).toEqual([]);
    expect(await stepsOf()).toEqual(before);
  });

  it('neon:H9: a failover the database refused is admitted again (every 5 s) until the lost node’s shards have an attached intent elsewhere', async () => {
    t = await createTestApp({ topology: THREE_ZONES });
    const allow = await refuseOperationsOfKind(t.db, 'FAILOVER');
    await t.cluster.simulation.setNodeOnline('1', false);
    await t.app.failover.idle();
    expect(await t.app.operations.listOperations({ nodeId: '1', kind: 'FAILOVER' })).toEqual([]);
    // Still refused at the first retry: nothing is written, and it is tried again.
    await driveUntil(t, () => false, { maxMs: 5_000 }).catch(() => {});
    await t.app.failover.idle();
    expect(await t.app.operations.listOperations({ nodeId: '1', kind: 'FAILOVER' })).toEqual([]);
    await allow();
    await driveUntil(t, async () => (await t!.app.operations.listOperations({ nodeId: '1', kind: 'FAILOVER' })).length === 1, { maxMs: 5_050 });
    const op = await failoverOf(t, '1');
    expect(op).toMatchObject({ kind: 'FAILOVER', state: 'SUCCEEDED' });
    const movable = (await t.cluster.listShards({ attachedNodeId: '1' })).filter((s) => s.policy !== 'PAUSE' && s.policy !== 'STOP');
    expect(movable).toEqual([]);
  });

  it('the drain part of a maintenance (hyperconverged node) ends with the failover’s admission; the maintenance then ends FAILED', async () => {
    t = await createTestApp({
      topology: { ...THREE_ZONES, vms: [{ namespace: 'default', name: 'web', nodeId: '1' }] },
      latenciesMs: { migrate: 500, stop: 200, start: 300, cordon: 10 },
      settings: { maxConcurrentMoves: 1 },
    });
    t.cluster.simulation.injectFaults({ stuck: (await t.cluster.listShards({ attachedNodeId: '1' })).map((s) => s.id) });
    const res = await t.gql('mutation { enableMaintenanceMode(nodeId: "1") { __typename ... on Operation { id } } }');
    const id = res.data.enableMaintenanceMode.id as string;
    const release = holdFailovers(t);
    await driveUntil(t, () => t!.app.maintenance.activeOperation('1')?.counts.moving === 2);
    await t.cluster.simulation.setNodeOnline('1', false);
    await failoverRecorded(t);
    const shardSteps = await t.db.prisma.operationStep.findMany({ where: { operationId: id, workloadKind: 'shard' } });
    expect(shardSteps.filter((s) => s.state === 'PLANNED' || s.state === 'MOVING')).toEqual([]);
    expect(shardSteps.filter((s) => s.state === 'ABANDONED' && s.reason === 'NODE_OFFLINE')).toHaveLength(1);
    // In the log, one after the other: the part's last step, its policy change, the failover's start.
    const { ops, events } = await recorded(t, '1');
    const failover = ops.find((o) => o.kind === 'FAILOVER')!;
    const started = events.findIndex((e) => e.type === 'OPERATION_STARTED' && e.operationId === failover.id);
    expect(events.slice(started - 2, started + 1).map((e) => [e.type, e.operationId])).toEqual([
      ['STEP_ABANDONED', id],
      ['NODE_POLICY_CHANGED', id],
      ['OPERATION_STARTED', failover.id],
    ]);
    t.cluster.simulation.injectFaults({ stuck: [] });
    release();
    await driveUntil(t, () => t!.app.maintenance.activeOperation('1') === null);
    expect(await t.app.operations.getOperation(id)).toMatchObject({ state: 'FAILED', error: 'SHARD_DRAIN_FAILED: NODE_OFFLINE' });
  });
});
