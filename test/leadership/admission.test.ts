/**
 * Admission by the database (ha:R2–R4) on a real PostgreSQL server: several replicas in one
 * process over one shared simulated cluster (test/support/replicas.ts). A stand-by admits
 * starts, cancels and policy changes by writing them; the leader adopts and runs them; the
 * database, not a process's memory, refuses what conflicts. Assertions are about outcomes,
 * order and ownership (which replica sent each backend action), never durations.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ShardSpec, VmSpec } from '../../plugins/fake/index.ts';
import type { Clock } from '../../src/cluster/clock.ts';
import { until } from '../support/child-server.ts';
import { startReplicas, type Replica, type ReplicaSet } from '../support/replicas.ts';
import { createPostgresDatabase, postgresSkipReason } from '../support/test-database.ts';
import { VirtualClock } from '../support/virtual-clock.ts';

const skip = postgresSkipReason();
let set: ReplicaSet | undefined;
afterEach(async () => {
  await set?.stop();
  set = undefined;
});

/** `n` shards attached to node 1 with a secondary on node 2 or 3; VMs on node 3. */
function cluster(n: number, options: { cutOverMs?: number; vms?: number; twoNodes?: boolean; clock?: Clock } = {}) {
  const shards: ShardSpec[] = Array.from({ length: n }, (_, i) => ({
    tenantId: `t${Math.floor(i / 8)}`,
    shardNumber: i % 8,
    shardCount: 8,
    // twoNodes: half on node 1, half on node 2, their secondaries on 3 and 4.
    attachedNodeId: options.twoNodes && i % 2 ? '2' : '1',
    secondaries: [{ nodeId: options.twoNodes ? (i % 4 < 2 ? '3' : '4') : i % 2 ? '2' : '3' }],
  }));
  const vms: VmSpec[] = Array.from({ length: options.vms ?? 0 }, (_, i) => ({ name: `vm-${i}`, nodeId: '3' }));
  const roles = ['control-plane', 'worker'];
  return {
    topology: { nodes: ['1', '2', '3', '4'].map((id) => ({ id, name: `node-${id}`, roles })), shards, vms },
    latenciesMs: { cutOver: options.cutOverMs ?? 15, migrate: 20 },
    ...(options.clock ? { clock: options.clock } : {}),
  };
}

const RESULT = `__typename ... on Operation { id state kind } ... on Error { code message }`;

async function mutate(r: Replica, field: string, args: string) {
  const res = await r.gql(`mutation { r: ${field}(${args}) { ${RESULT} } }`);
  if (res.errors) throw new Error(JSON.stringify(res.errors));
  return res.data.r as { __typename: string; id?: string; state?: string; code?: string; message?: string; operationId?: string | null };
}

async function finished(r: Replica, id: string) {
  return until(async () => {
    const op = await r.db.prisma.operation.findUnique({ where: { id } });
    return op && ['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(op.state) ? op : undefined;
  }, `operation ${id} to end`);
}

async function threeReplicas(options: Parameters<typeof cluster>[1] & { shards?: number; settings?: object } = {}) {
  set = await startReplicas(await createPostgresDatabase(), 3, { cluster: cluster(options.shards ?? 40, options), settings: options.settings ?? {} });
  const leader = await set.untilLeader();
  const standbys = set.replicas.filter((r) => r !== leader);
  return { set, leader, standbys };
}

describe.skipIf(skip)(skip ?? 'admission by the database', () => {
  it('ha:R2: a drain started on a stand-by is admitted there (policy and plan written) and run by the leader alone', async () => {
    const { set, leader, standbys } = await threeReplicas({ shards: 40 });
    const [standby] = standbys;
    const op = await mutate(standby!, 'startNodeDrain', 'nodeId: "1"');
    expect(op).toMatchObject({ __typename: 'Operation', state: 'RUNNING', kind: 'DRAIN' });
    // Admitted by the database: the operation and the node's new policy are committed before the answer.
    expect(await standby!.db.prisma.operation.findUnique({ where: { id: op.id! } })).toMatchObject({ state: 'RUNNING', nodeId: '1' });
    expect(await standby!.db.prisma.nodeState.findUnique({ where: { id: '1' } })).toMatchObject({ schedulingPolicy: 'DRAINING' });
    const done = await finished(leader, op.id!);
    expect(done.state).toBe('SUCCEEDED');
    const cutOvers = set.actions.filter((a) => a.method === 'cutOverShard');
    expect(cutOvers).toHaveLength(40);
    expect(new Set(cutOvers.map((a) => a.replica))).toEqual(new Set([leader.name]));
    expect(set.actions.filter((a) => a.replica !== leader.name)).toEqual([]);
    expect((await set.cluster.listShards()).filter((s) => s.attachedNodeId === '1')).toEqual([]);
    // The leader's view follows: the drain ran there and the policy it ended with is its own.
    expect(leader.app.storage.policyOf('1')).toBe(done.state === 'SUCCEEDED' ? 'PAUSE_FOR_RESTART' : 'ACTIVE');
  });

  it('ha:R3: 50 concurrent drains of one node over 3 replicas: exactly one accepted, 49 typed ConflictError', async () => {
    // The cluster's time stands still: the drain admitted first is still running while the others race.
    const { set } = await threeReplicas({ shards: 16, clock: new VirtualClock() });
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => mutate(set.replicas[i % 3]!, 'startNodeDrain', 'nodeId: "1"')));
    const accepted = answers.filter((a) => a.__typename === 'Operation');
    expect(accepted).toHaveLength(1);
    const refused = answers.filter((a) => a.__typename !== 'Operation');
    expect(refused.map((a) => a.__typename)).toEqual(Array(49).fill('ConflictError'));
    expect(await set.replicas[0]!.db.prisma.operation.count()).toBe(1);
  });

  it('ha:R3: 50 concurrent enableMaintenanceMode of one node over 3 replicas: exactly one accepted, 49 typed ConflictError; the leader runs it', async () => {
    // The cluster's time stands still while the 50 race: the maintenance admitted first cannot
    // end (and a late request meet a node already in maintenance) however slow the machine.
    const clock = new VirtualClock();
    const { set, leader } = await threeReplicas({ shards: 0, vms: 6, clock });
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => mutate(set.replicas[i % 3]!, 'enableMaintenanceMode', 'nodeId: "3"')));
    const accepted = answers.filter((a) => a.__typename === 'Operation');
    expect(accepted).toHaveLength(1);
    expect(answers.filter((a) => a.__typename !== 'Operation').map((a) => a.__typename)).toEqual(Array(49).fill('ConflictError'));
    const ended = await until(async () => {
      await clock.advance(20);
      const op = await leader.db.prisma.operation.findUnique({ where: { id: accepted[0]!.id! } });
      return op && ['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(op.state) ? op : undefined;
    }, 'the maintenance to end');
    expect(ended.state).toBe('SUCCEEDED');
    const migrations = set.actions.filter((a) => a.method === 'migrateVm');
    expect(migrations).toHaveLength(6);
    expect(new Set(migrations.map((a) => a.replica))).toEqual(new Set([leader.name]));
  });

  it('ha:R2: the cluster-wide limit holds across replicas: with a limit of 1, concurrent drains of two nodes on two stand-bys admit one', async () => {
    // Cut-overs of an hour: the drain admitted first is still running while the others race, however slow the machine.
    const { set, standbys } = await threeReplicas({ shards: 32, cutOverMs: 3_600_000, twoNodes: true, settings: { maxConcurrentOperations: 1 } });
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => mutate(standbys[i % 2]!, 'startNodeDrain', `nodeId: "${i % 2 ? '2' : '1'}"`)));
    expect(answers.filter((a) => a.__typename === 'Operation')).toHaveLength(1);
    expect(new Set(answers.filter((a) => a.__typename !== 'Operation').map((a) => a.__typename))).toEqual(
      new Set(['OperationLimitReachedError', 'ConflictError']),
    );
    // One operation was ever written.
    expect(await set.replicas[0]!.db.prisma.operation.count()).toBe(1);
  });

  it('ha:R4: a cancel asked of a stand-by is recorded (CANCELLING) and the leader’s run ends CANCELLED; configureNode on a stand-by reaches the leader', async () => {
    const { set, leader, standbys } = await threeReplicas({ shards: 60, cutOverMs: 100, settings: { maxConcurrentMoves: 1 } });
    const op = await mutate(leader, 'startNodeDrain', 'nodeId: "1"');
    expect(op.__typename).toBe('Operation');
    await until(() => (set.actions.filter((a) => a.method === 'cutOverShard').length >= 2 ? true : undefined), 'a couple of cut-overs');
    const cancelled = await mutate(standbys[0]!, 'cancelNodeDrain', 'nodeId: "1"');
    expect(cancelled).toMatchObject({ __typename: 'Operation', id: op.id, state: 'CANCELLING' });
    const done = await finished(leader, op.id!);
    expect(done.state).toBe('CANCELLED');
    const events = await leader.db.prisma.event.findMany({ where: { operationId: op.id!, type: 'OPERATION_CANCELLING' } });
    expect(events).toHaveLength(1);
    // A second cancel finds nothing to cancel.
    expect(await mutate(standbys[1]!, 'cancelNodeDrain', 'nodeId: "1"')).toMatchObject({ __typename: 'PreconditionFailedError' });

    const res = await standbys[1]!.gql(`mutation { configureNode(nodeId: "4", policy: PAUSE) { __typename } }`);
    expect(res.errors).toBeUndefined();
    expect(await leader.db.prisma.nodeState.findUnique({ where: { id: '4' } })).toMatchObject({ schedulingPolicy: 'PAUSE' });
    await until(() => (leader.app.storage.policyOf('4') === 'PAUSE' ? true : undefined), 'the leader to see the new policy');
  });

  it('ha:R4: configureNode on a stand-by is refused while any replica’s drain runs on the node', async () => {
    const { standbys, leader } = await threeReplicas({ shards: 30, cutOverMs: 300 });
    const op = await mutate(standbys[0]!, 'startNodeDrain', 'nodeId: "1"');
    const res = await standbys[1]!.gql(
      `mutation { configureNode(nodeId: "1", policy: ACTIVE) { __typename ... on PreconditionFailedError { reason operationId } } }`,
    );
    expect(res.data.configureNode).toMatchObject({ __typename: 'PreconditionFailedError', reason: 'OPERATION_RUNNING', operationId: op.id });
    await mutate(leader, 'cancelNodeDrain', 'nodeId: "1"');
    await finished(leader, op.id!);
  });
});
