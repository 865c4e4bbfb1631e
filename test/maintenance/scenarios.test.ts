import { afterEach, describe, expect, it } from 'vitest';
import type { TestApp } from '../support/graphql-app.ts';
import { driveUntil } from '../operations/drive.ts';
import { cluster, disable, enable, maintenanceApp, phaseOf, untilPhase, vm } from './harness.ts';

let t: TestApp;
afterEach(async () => {
  await t?.stop();
});

const labelled = (name: string, strategy: string) => ({ namespace: 'default', name, nodeId: '1', maintenanceStrategyLabel: strategy });
const control = { namespace: 'default', name: 'control', nodeId: '1' };

describe('vm:scenario-1–5, simulated cluster', () => {
  it('1. ShutdownAndRestartAfterDisable: stops with tracking, control migrates, COMPLETED; after disable it runs on the original node', async () => {
    t = await maintenanceApp(cluster([labelled('vm', 'ShutdownAndRestartAfterDisable'), control]));
    expect((await enable(t, '1')).__typename).toBe('Operation');
    await untilPhase(t, '1', 'COMPLETED');
    const stopped = await vm(t, 'default/vm');
    expect(stopped).toMatchObject({
      status: 'Stopped',
      runStrategy: 'Halted',
      tracking: { nodeName: 'node-1', strategy: 'ShutdownAndRestartAfterDisable', savedRunStrategy: 'Always' },
    });
    expect((await vm(t, 'default/control')).nodeId).not.toBe('1');
    expect((await t.cluster.getNode('1'))?.cordoned).toBe(true);
    const result = await disable(t, '1');
    expect(result).toMatchObject({
      __typename: 'DisableMaintenanceResult',
      restartedVmIds: ['default/vm'],
      failures: [],
      node: { cordoned: false, maintenancePhase: null },
    });
    expect(await vm(t, 'default/vm')).toMatchObject({ status: 'Running', nodeId: '1', runStrategy: 'Always', tracking: null });
  });

  it('2. ShutdownAndRestartAfterEnable: stops, then after COMPLETED runs on another node by restart; disable changes nothing more', async () => {
    t = await maintenanceApp(cluster([labelled('vm', 'ShutdownAndRestartAfterEnable'), control]));
    await enable(t, '1');
    await driveUntil(t, async () => (await vm(t, 'default/vm')).status === 'Stopped', { stepMs: 50 });
    expect((await vm(t, 'default/vm')).tracking).toMatchObject({ strategy: 'ShutdownAndRestartAfterEnable' });
    await untilPhase(t, '1', 'COMPLETED');
    const restarted = await vm(t, 'default/vm');
    expect(restarted).toMatchObject({ status: 'Running', runStrategy: 'Always', tracking: null });
    expect(restarted.nodeId).not.toBe('1');
    // By restart, not migration: the fake counts migrations per VM.
    expect(t.cluster.callCounts.get('migrateVm')).toBe(1);
    const result = await disable(t, '1');
    expect(result.restartedVmIds).toEqual([]);
    expect((await vm(t, 'default/vm')).nodeId).toBe(restarted.nodeId);
  });

  it('3. Shutdown: stops, no tracking, stays off after disable', async () => {
    t = await maintenanceApp(cluster([labelled('vm', 'Shutdown'), control]));
    await enable(t, '1');
    await untilPhase(t, '1', 'COMPLETED');
    expect(await vm(t, 'default/vm')).toMatchObject({ status: 'Stopped', runStrategy: 'Halted', tracking: null });
    expect((await disable(t, '1')).restartedVmIds).toEqual([]);
    await t.clock.advance(5000);
    expect(await vm(t, 'default/vm')).toMatchObject({ status: 'Stopped', runStrategy: 'Halted' });
  });

  it('4. force: labelled and unlabelled last-replica VMs stop and stay off without tracking, the migratable one migrates; without force, refused naming the unlabelled one', async () => {
    const lastReplica = (name: string, label: string | null) => ({
      namespace: 'default',
      name,
      nodeId: '1',
      maintenanceStrategyLabel: label,
      volumes: [
        {
          name: `${name}-disk`,
          replicas: [
            { nodeId: '1', healthy: true },
            { nodeId: '2', healthy: false },
          ],
        },
      ],
    });
    const topo = cluster([
      lastReplica('labelled', 'ShutdownAndRestartAfterDisable'),
      lastReplica('unlabelled', null),
      { namespace: 'default', name: 'mobile', nodeId: '1' },
    ]);
    t = await maintenanceApp(topo);
    const refused = await enable(t, '1');
    expect(refused).toMatchObject({ __typename: 'PreconditionFailedError', failedReason: 'NON_MIGRATABLE_VMS' });
    expect(refused.blockers).toEqual([{ id: 'default/unlabelled', reasons: ['LastHealthyReplica (volume unlabelled-disk)'] }]);
    expect(refused.message).toMatch(/force/);
    // vm:M1: a refusal leaves no trace.
    expect(await phaseOf(t, '1')).toBeNull();
    expect((await t.cluster.getNode('1'))?.cordoned).toBe(false);

    expect((await enable(t, '1', ', force: true')).__typename).toBe('Operation');
    await untilPhase(t, '1', 'COMPLETED');
    for (const id of ['default/labelled', 'default/unlabelled'])
      expect(await vm(t, id)).toMatchObject({ status: 'Stopped', runStrategy: 'Halted', tracking: null });
    expect((await vm(t, 'default/mobile')).nodeId).not.toBe('1');
    expect((await disable(t, '1')).restartedVmIds).toEqual([]);
    for (const id of ['default/labelled', 'default/unlabelled']) expect((await vm(t, id)).status).toBe('Stopped');
  });

  it('5. node removed while in maintenance: tracking on its VMs is cleared', async () => {
    t = await maintenanceApp(cluster([labelled('vm', 'ShutdownAndRestartAfterDisable'), control]));
    await enable(t, '1');
    await untilPhase(t, '1', 'COMPLETED');
    expect((await vm(t, 'default/vm')).tracking).not.toBeNull();
    await t.cluster.simulation.removeNode('1');
    await driveUntil(t, async () => (await vm(t, 'default/vm')).tracking === null, { stepMs: 50, maxMs: 5000 });
    expect(await vm(t, 'default/vm')).toMatchObject({ status: 'Stopped', runStrategy: 'Halted', tracking: null });
    expect(await t.db.prisma.vmTracking.count()).toBe(0);
    expect(await phaseOf(t, '1')).toBeNull();
  });
});
