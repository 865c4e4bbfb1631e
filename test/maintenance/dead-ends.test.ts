/**
 * The runbook's ways out (docs/runbook.md, issue 17 point 3), each through the exact
 * mutations it names: a maintenance past its deadline on a hyperconverged node, cleared,
 * then disabled (the tracked VM runs again, the shards come back) or enabled again; and a
 * disable while the enable is still in progress.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { TestApp } from '../support/graphql-app.ts';
import { driveUntil, mutate, policyOf } from '../operations/drive.ts';
import { cluster, disable, enable, maintenanceApp, phaseOf, untilPhase, vm, whileDriving } from './harness.ts';

let t: TestApp;
afterEach(async () => {
  await t?.stop();
});

const MiB = 1024 ** 2;
const on1 = (name: string, extra: object = {}) => ({ namespace: 'default', name, nodeId: '1', ...extra });

/** Node 1: a VM whose migration never ends, a VM stopped with tracking to restart on disable, one shard that moves and one whose secondary lags. */
function stuckHyperconverged() {
  return cluster([on1('stuck'), on1('later', { maintenanceStrategyLabel: 'ShutdownAndRestartAfterDisable' })], {
    shards: [
      { tenantId: 'moves', attachedNodeId: '1', secondaries: [{ nodeId: '2' }] },
      { tenantId: 'lags', attachedNodeId: '1', secondaries: [{ nodeId: '3', lagBytes: 512 * MiB, downloadBytesPerSecond: 0 }] },
    ],
  });
}

async function toError(app: TestApp) {
  app.cluster.simulation.injectFaults({ stuck: ['default/stuck'] });
  const op = await enable(app, '1', ', deadlineSeconds: 60');
  await untilPhase(app, '1', 'ERROR');
  expect(await policyOf(app, '1')).toBe('PAUSE_FOR_RESTART');
  const cleared = await whileDriving(
    app,
    app.gql(`mutation { r: clearMaintenanceError(nodeId: "1", reason: "runbook") {
      __typename ... on ClusterNode { cordoned maintenancePhase schedulingPolicy } ... on Error { code message } } }`),
  );
  // Out of maintenance, uncordoned, and the storage policy back to ACTIVE: nothing admin-only is needed next.
  expect(cleared.data.r).toEqual({ __typename: 'ClusterNode', cordoned: false, maintenancePhase: null, schedulingPolicy: 'ACTIVE' });
  // vm:M5: tracking kept; the VM it belongs to is still off.
  expect(await vm(app, 'default/later')).toMatchObject({ status: 'Stopped', tracking: { strategy: 'ShutdownAndRestartAfterDisable' } });
  return op;
}

describe('ERROR after a deadline, then clearMaintenanceError', () => {
  it('disable is accepted next: it restarts the tracked VM on its node and starts the fill', async () => {
    t = await maintenanceApp(stuckHyperconverged(), { latenciesMs: { migrate: 500, stop: 200, start: 300, cordon: 10, cutOver: 100 } });
    await toError(t);
    const result = await disable(t, '1');
    expect(result).toMatchObject({ __typename: 'DisableMaintenanceResult', restartedVmIds: ['default/later'], failures: [], fillOperation: { kind: 'FILL' } });
    expect(await vm(t, 'default/later')).toMatchObject({ status: 'Running', nodeId: '1', tracking: null });
    await driveUntil(t, async () => (await policyOf(t, '1')) === 'ACTIVE' && t.app.storage.activeOperation('1') === null);
    expect(await t.app.operations.getOperation(result.fillOperation.id)).toMatchObject({ kind: 'FILL', state: 'SUCCEEDED' });
    // Nothing left to undo: a second disable is the typed refusal of vm:D3.
    expect(await disable(t, '1')).toMatchObject({ __typename: 'PreconditionFailedError', code: 'PRECONDITION_FAILED' });
  });

  it('a new enable is accepted next (once the stuck migration is dealt with) and completes', async () => {
    t = await maintenanceApp(stuckHyperconverged(), { latenciesMs: { migrate: 500, stop: 200, start: 300, cordon: 10, cutOver: 100 } });
    await toError(t);
    t.cluster.simulation.clearFaults();
    await driveUntil(t, async () => (await vm(t, 'default/stuck')).nodeId !== '1');
    const again = await enable(t, '1');
    expect(again).toMatchObject({ __typename: 'Operation', kind: 'MAINTENANCE', state: 'RUNNING' });
    await untilPhase(t, '1', 'COMPLETED');
    expect(await t.app.operations.getOperation(again.id)).toMatchObject({ state: 'SUCCEEDED' });
    // The lagging shard is still there, and said so (issue 17 point 1).
    expect((await t.app.operations.getOperation(again.id))!.remaining).toMatchObject([{ kind: 'SHARD', id: 'lags', reason: 'SECONDARY_LAGGING' }]);
    // The tracked VM is still off until this maintenance is disabled.
    expect(await disable(t, '1')).toMatchObject({ restartedVmIds: ['default/later'] });
  });
});

describe('disableMaintenanceMode during an enable in progress', () => {
  it('ends the maintenance at once: the operation is CANCELLED, the node uncordoned, every VM whose strategy restarts runs again, what was under way is named, the storage policy is ACTIVE at once', async () => {
    t = await maintenanceApp(
      cluster(
        [
          on1('slow-migrate'),
          on1('after-enable', { maintenanceStrategyLabel: 'ShutdownAndRestartAfterEnable' }),
          on1('after-disable', { maintenanceStrategyLabel: 'ShutdownAndRestartAfterDisable' }),
          on1('off', { maintenanceStrategyLabel: 'Shutdown' }),
        ],
        {
          shards: [
            { tenantId: 'a', attachedNodeId: '1', secondaries: [{ nodeId: '2' }] },
            { tenantId: 'b', attachedNodeId: '1', secondaries: [{ nodeId: '3' }] },
          ],
        },
      ),
      { latenciesMs: { migrate: 60_000, stop: 200, start: 300, cordon: 10, cutOver: 30_000 }, settings: { maxConcurrentMoves: 1 } },
    );
    const op = await enable(t, '1');
    // Mid-enable: the stops are done, the migration and a cut-over are in flight.
    await driveUntil(t, async () => (await vm(t, 'default/off')).status === 'Stopped' && (await vm(t, 'default/after-disable')).status === 'Stopped');
    expect(await phaseOf(t, '1')).toBe('EVACUATING');
    const result = await disable(t, '1');
    expect(result).toMatchObject({
      __typename: 'DisableMaintenanceResult',
      node: { cordoned: false, maintenancePhase: null },
      failures: [],
    });
    // What was under way is named: the migration and the cut-over go on in the cluster.
    expect(result.warnings).toEqual([
      '2 move(s) were under way and may still complete in the cluster: vm default/slow-migrate (migrate to node 2), shard a (cut_over to node 2); a shard that lands elsewhere comes back with startNodeFill',
    ]);
    // vm:D1 and vm:T5: both shutdown-and-restart VMs run again; Shutdown stays off.
    expect([...result.restartedVmIds].sort()).toEqual(['default/after-disable', 'default/after-enable']);
    expect(await t.app.operations.getOperation(op.id)).toMatchObject({ state: 'CANCELLED', error: 'DISABLED' });
    for (const id of ['default/after-enable', 'default/after-disable']) expect(await vm(t, id)).toMatchObject({ status: 'Running', tracking: null });
    expect(await vm(t, 'default/off')).toMatchObject({ status: 'Stopped', runStrategy: 'Halted' });
    // The migration that was in flight finishes in the cluster; the VM keeps running (wherever it landed).
    await driveUntil(t, async () => (await vm(t, 'default/slow-migrate')).status === 'Running', { stepMs: 1000 });
    // Storage: policy back to ACTIVE at once; the node takes new work (a drain is accepted).
    expect(await policyOf(t, '1')).toBe('ACTIVE');
    expect((await mutate(t, 'startNodeDrain', '1')).__typename).toBe('Operation');
  });
});
