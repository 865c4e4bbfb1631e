import { afterEach, describe, expect, it } from 'vitest';
import type { TestApp } from '../support/graphql-app.ts';
import { driveUntil, mutate, policyOf } from '../operations/drive.ts';
import { cluster, disable, enable, maintenanceApp, untilPhase, vm } from './harness.ts';

let t: TestApp;
afterEach(async () => {
  await t?.stop();
});

/** Node 1 runs two VMs and holds four attached shards; other nodes hold shards with secondaries on node 1. */
function hyperconverged() {
  const shard = (tenantId: string, n: number, on: string, secondary: string) => ({
    tenantId,
    shardNumber: n,
    shardCount: 4,
    attachedNodeId: on,
    secondaries: [{ nodeId: secondary }],
  });
  return cluster(
    [
      { namespace: 'default', name: 'web', nodeId: '1' },
      { namespace: 'default', name: 'db', nodeId: '1', maintenanceStrategyLabel: 'ShutdownAndRestartAfterDisable' },
    ],
    {
      shards: [
        shard('a', 0, '1', '2'),
        shard('a', 1, '1', '3'),
        shard('b', 0, '1', '2'),
        shard('b', 1, '1', '3'),
        shard('c', 0, '2', '1'),
        shard('c', 1, '3', '1'),
      ],
    },
  );
}

describe('hyperconverged node: VMs and shards under one maintenance', () => {
  it('the plan shows both kinds', async () => {
    t = await maintenanceApp(hyperconverged());
    const res = await t.gql('{ maintenancePlan(nodeId: "1") { accepted vms { vmId action } shards { shardId action toNodeId } } }');
    expect(res.data.maintenancePlan.accepted).toBe(true);
    expect(res.data.maintenancePlan.vms.map((v: any) => `${v.vmId}:${v.action}`)).toEqual(['default/db:STOP', 'default/web:MIGRATE']);
    expect(res.data.maintenancePlan.shards).toEqual([
      { shardId: 'a-0004', action: 'CUT_OVER', toNodeId: '2' },
      { shardId: 'a-0104', action: 'CUT_OVER', toNodeId: '3' },
      { shardId: 'b-0004', action: 'CUT_OVER', toNodeId: '2' },
      { shardId: 'b-0104', action: 'CUT_OVER', toNodeId: '3' },
    ]);
    // Asking changed nothing.
    expect(await policyOf(t, '1')).toBe('ACTIVE');
    expect(t.app.maintenance.stateOf('1')).toBeNull();
  });

  it('enable drains both under one operation and reaches COMPLETED only when both are done; disable restarts VMs and fills the shards back', async () => {
    t = await maintenanceApp(hyperconverged(), {
      latenciesMs: { migrate: 500, stop: 200, start: 300, cordon: 10, cutOver: 20_000 },
      settings: { maxConcurrentMoves: 1 },
    });
    const op = await enable(t, '1');
    expect(op).toMatchObject({ __typename: 'Operation', kind: 'MAINTENANCE', counts: { total: 6 } });
    expect(await policyOf(t, '1')).toBe('DRAINING');
    // Another drain or a policy change on the node is refused while the maintenance owns it.
    expect((await mutate(t, 'startNodeDrain', '1')).__typename).toBe('ConflictError');
    expect((await t.gql('mutation { configureNode(nodeId: "1", policy: ACTIVE) { __typename } }')).data.configureNode.__typename).toBe(
      'PreconditionFailedError',
    );
    // The VMs are done long before the 20 s cut-overs: still EVACUATING, waiting on shards.
    await driveUntil(t, async () => (await vm(t, 'default/web')).nodeId !== '1' && (await vm(t, 'default/db')).status === 'Stopped');
    await t.clock.advance(2000);
    expect(t.app.maintenance.stateOf('1')?.phase).toBe('EVACUATING');
    await driveUntil(t, () => t.app.maintenance.activeOperation('1')?.waitingOn?.kind === 'SHARDS', { stepMs: 100 });
    await untilPhase(t, '1', 'COMPLETED');
    expect((await t.cluster.listShards({ attachedNodeId: '1' })).length).toBe(0);
    expect(await policyOf(t, '1')).toBe('PAUSE_FOR_RESTART');
    const done = await t.app.operations.getOperation(op.id);
    // web migrated, db only stopped (it restarts on disable), four shards cut over.
    expect(done).toMatchObject({ state: 'SUCCEEDED', counts: { moved: 5, stopped: 1, failed: 0 } });
    const steps = await t.app.operations.getSteps(op.id);
    expect(steps.filter((s) => s.workloadKind === 'shard')).toHaveLength(4);
    expect(steps.filter((s) => s.workloadKind === 'vm')).toHaveLength(2);

    const result = await disable(t, '1');
    expect(result.restartedVmIds).toEqual(['default/db']);
    const fill = await t.gql('mutation { r: disableMaintenanceMode(nodeId: "1") { __typename } }');
    expect(fill.data.r.__typename).toBe('PreconditionFailedError');
    const ops = await t.app.operations.listOperations({ nodeId: '1', kind: 'FILL' });
    expect(ops).toHaveLength(1);
    expect(result.fillOperation).toEqual({ id: ops[0]!.id, kind: 'FILL' });
    await driveUntil(t, async () => (await t.app.operations.getOperation(ops[0]!.id))?.state === 'SUCCEEDED', { stepMs: 500 });
    expect(await policyOf(t, '1')).toBe('ACTIVE');
    // 6 shards over 3 nodes: the fill brings node 1 back to its fair share of 2.
    expect((await t.cluster.listShards({ attachedNodeId: '1' })).length).toBe(2);
  });

  it('a shard the plan skips (storage:D2) has its SHARD_SKIPPED event from the admission, once', async () => {
    t = await maintenanceApp(hyperconverged());
    // Node 3 paused: the shards whose only secondary is there have no schedulable secondary.
    await t.gql('mutation { configureNode(nodeId: "3", policy: PAUSE) { __typename } }');
    const op = await enable(t, '1');
    expect(op).toMatchObject({ __typename: 'Operation', counts: { skipped: 2 } });
    await untilPhase(t, '1', 'COMPLETED');
    const skips = await t.db.prisma.event.findMany({ where: { operationId: op.id, type: 'SHARD_SKIPPED' }, orderBy: { seq: 'asc' } });
    expect(skips.map((e) => JSON.parse(e.payload))).toEqual(
      ['a-0104', 'b-0104'].map((shard) => ({ shard, from: '1', to: null, reason: 'NO_SCHEDULABLE_SECONDARY', error: null })),
    );
    const steps = await t.app.operations.getSteps(op.id);
    expect(steps.filter((s) => s.state === 'SKIPPED').map((s) => s.workloadId)).toEqual(['a-0104', 'b-0104']);
  });
});
