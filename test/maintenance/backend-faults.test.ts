import { afterEach, describe, expect, it } from 'vitest';
import { BackendError } from '../../src/cluster/errors.ts';
import type { SimulatedCluster } from '../../plugins/fake/index.ts';
import type { TestApp } from '../support/graphql-app.ts';
import { driveUntil } from '../operations/drive.ts';
import { cluster, enable, maintenanceApp, untilPhase, vm } from './harness.ts';

let t: TestApp;
afterEach(async () => {
  await t?.stop();
});

/** The simulated cluster with some methods replaced. */
function withOverrides(overrides: Partial<Record<keyof SimulatedCluster, unknown>>) {
  return (c: SimulatedCluster) =>
    new Proxy(c, {
      get: (target, prop, receiver) => (prop in overrides ? overrides[prop as keyof SimulatedCluster] : Reflect.get(target, prop, receiver)),
    });
}

describe('backend faults during maintenance', () => {
  it('an API outage pauses the run, says so in waitingOn, and the run goes on when the backend answers again', async () => {
    let down = false;
    let real: SimulatedCluster | undefined;
    t = await maintenanceApp(cluster([{ namespace: 'default', name: 'a', nodeId: '1' }]), {
      settings: { migrationRetryDelayMs: 1000 },
      backend: (c) => {
        real = c;
        return withOverrides({
          listVms: (f?: object) => (down ? Promise.reject(new BackendError('Unavailable', 'the API server is unreachable')) : c.listVms(f)),
        })(c);
      },
    });
    await enable(t, '1');
    down = true;
    await driveUntil(t, () => (t.app.maintenance.activeOperation('1')?.waitingOn?.description ?? '').includes('unreachable'), { stepMs: 200 });
    expect(t.app.maintenance.activeOperation('1')!.waitingOn!.description).toMatch(
      /reading the VMs on node 1 failed \(the API server is unreachable\); retrying every 1 s/,
    );
    down = false;
    await untilPhase(t, '1', 'COMPLETED');
    expect((await real!.getVm('default/a'))?.nodeId).not.toBe('1');
  });

  it('a VM deleted mid-maintenance is recorded as gone, not as a failure that blocks the node', async () => {
    let deleted = false;
    t = await maintenanceApp(
      cluster([
        { namespace: 'default', name: 'gone', nodeId: '1', maintenanceStrategyLabel: 'Shutdown' },
        { namespace: 'default', name: 'a', nodeId: '1' },
      ]),
      {
        backend: (c) =>
          withOverrides({
            // Someone deletes the VM just as maintenance stops it.
            stopVm: () => {
              deleted = true;
              return Promise.reject(new BackendError('NotFound', 'vm default/gone not found', { kind: 'vm', id: 'default/gone' }));
            },
            listVms: async (f?: { nodeId?: string }) => (await c.listVms(f)).filter((v) => !(deleted && v.id === 'default/gone')),
          })(c),
      },
    );
    const op = await enable(t, '1');
    await untilPhase(t, '1', 'COMPLETED');
    const steps = await t.app.operations.getSteps(op.id);
    expect(steps.find((s) => s.workloadId === 'default/gone')).toMatchObject({ state: 'SKIPPED', reason: 'VM_GONE' });
    expect((await t.app.operations.getOperation(op.id))?.state).toBe('SUCCEEDED');
    expect((await vm(t, 'default/a')).nodeId).not.toBe('1');
  });

  it('a backend that cannot see replicas makes the plan say the LastHealthyReplica rule was not checked', async () => {
    t = await maintenanceApp(cluster([{ namespace: 'default', name: 'a', nodeId: '1' }]), {
      backend: (c) => withOverrides({ capabilities: { ...c.capabilities, replicaHealth: false } })(c),
    });
    const res = await t.gql('{ maintenancePlan(nodeId: "1") { warnings } }');
    expect(res.data.maintenancePlan.warnings).toContain(
      'LastHealthyReplica (vm:N1) not checked: the backend cannot see volume replicas (e.g. Longhorn is not installed)',
    );
  });
});

describe('backend faults at the request', () => {
  it('enable while the backend is unreachable is a typed Unavailable, with nothing changed', async () => {
    t = await maintenanceApp(cluster([{ namespace: 'default', name: 'a', nodeId: '1' }]), {
      backend: withOverrides({ listVms: () => Promise.reject(new BackendError('Unavailable', 'the API server is unreachable')) }),
    });
    const res = await enable(t, '1');
    expect(res).toMatchObject({ __typename: 'UnavailableError', message: 'the API server is unreachable' });
    expect(t.app.maintenance.stateOf('1')).toBeNull();
  });
});

describe('a refusal the run cannot get past', () => {
  it('a forbidden cordon ends the maintenance in ERROR with the reason, not a silent hang', async () => {
    t = await maintenanceApp(cluster([{ namespace: 'default', name: 'a', nodeId: '1' }]), {
      backend: withOverrides({ cordonNode: () => Promise.reject(new BackendError('Rejected', 'forbidden: grant verb "patch" on resource "nodes"')) }),
    });
    const op = await enable(t, '1');
    await untilPhase(t, '1', 'ERROR');
    expect(await t.app.operations.getOperation(op.id)).toMatchObject({ state: 'FAILED', error: 'FAILED: forbidden: grant verb "patch" on resource "nodes"' });
  });
});
