import { afterEach, describe, expect, it } from 'vitest';
import type { TestApp } from '../support/graphql-app.ts';
import { cluster, enable, maintenanceApp } from '../maintenance/harness.ts';
import { driveUntil, mutate, settle } from './drive.ts';

/**
 * Issue 11 point 3, limits: DRAIN, FILL, DELETE and MAINTENANCE each count toward
 * `maxConcurrentOperations` (a FAILOVER never does: test/operations/failover.test.ts).
 */

let t: TestApp;
afterEach(async () => {
  await t?.stop();
});

const vms = [
  { namespace: 'default', name: 'a', nodeId: '1' },
  { namespace: 'default', name: 'b', nodeId: '3' },
];
const shards = [{ tenantId: 't', attachedNodeId: '2', secondaries: [{ nodeId: '4' }] }];
// Four workers (no control-plane quorum in the way); VMs on 1 and 3, a shard on 2 with its secondary on 4.
const nodes = ['1', '2', '3', '4'].map((id) => ({ id, name: `node-${id}`, roles: ['worker'] }));

describe('maxConcurrentOperations counts maintenances too', () => {
  it('limit 1: a maintenance running refuses a drain elsewhere, and a drain running refuses a maintenance elsewhere (OperationLimitReached)', async () => {
    t = await maintenanceApp(cluster(vms, { nodes, shards }), { latenciesMs: { migrate: 5000, cutOver: 5000, cordon: 10 } });
    const maintenance = await enable(t, '1');
    expect(maintenance).toMatchObject({ __typename: 'Operation', kind: 'MAINTENANCE', state: 'RUNNING' });
    expect(await mutate(t, 'startNodeDrain', '2')).toMatchObject({ __typename: 'OperationLimitReachedError', limit: 1 });
    await driveUntil(t, () => t.app.maintenance.stateOf('1')?.phase === 'COMPLETED' && t.app.storage.runningNodeOperations().length === 0, { stepMs: 100 });

    const drain = await mutate(t, 'startNodeDrain', '2');
    expect(drain.__typename).toBe('Operation');
    expect(await enable(t, '3')).toMatchObject({ __typename: 'OperationLimitReachedError', code: 'OPERATION_LIMIT_REACHED' });
    expect((await settle(t, '2')).state).toBe('SUCCEEDED');
    // The slot is free again.
    expect(await enable(t, '3')).toMatchObject({ __typename: 'Operation', kind: 'MAINTENANCE' });
  });

  it('limit 2: a maintenance and a drain run at once; a third operation is refused', async () => {
    t = await maintenanceApp(cluster(vms, { nodes, shards }), {
      latenciesMs: { migrate: 5000, cutOver: 5000, cordon: 10 },
      settings: { maxConcurrentOperations: 2 },
    });
    expect((await enable(t, '1')).__typename).toBe('Operation');
    expect((await mutate(t, 'startNodeDrain', '2')).__typename).toBe('Operation');
    expect(await enable(t, '3')).toMatchObject({ __typename: 'OperationLimitReachedError', code: 'OPERATION_LIMIT_REACHED' });
    expect((await settle(t, '2')).state).toBe('SUCCEEDED');
  });
});
