import { afterEach, describe, expect, it } from 'vitest';
import type { TestApp } from '../support/graphql-app.ts';
import { cluster, enable, maintenanceApp, untilPhase } from './harness.ts';

let t: TestApp;
afterEach(async () => {
  await t?.stop();
});

describe('maintenance progress streams', () => {
  it('nodeChanged carries each phase change; operationProgress carries per-VM steps and what it waits on', async () => {
    t = await maintenanceApp(
      cluster([
        { namespace: 'default', name: 'a', nodeId: '1' },
        { namespace: 'default', name: 'b', nodeId: '1', maintenanceStrategyLabel: 'Shutdown' },
      ]),
    );
    const phases: (string | null)[] = [];
    const nodeSub = t.app.bus.subscribe('nodeChanged');
    const watchingNodes = (async () => {
      for await (const node of nodeSub) {
        if (node.id !== '1') continue;
        const phase = t.app.maintenance.stateOf('1')?.phase ?? null;
        if (phases.at(-1) !== phase) phases.push(phase);
        if (phase === 'COMPLETED') break;
      }
    })();
    const op = await enable(t, '1');
    const steps: string[] = [];
    const waits: string[] = [];
    const progress = t.app.bus.subscribe('operationProgress', op.id);
    const watchingOp = (async () => {
      for await (const p of progress) {
        for (const s of p.steps) steps.push(`${s.workloadId}:${s.action}:${s.state}`);
        if (p.operation.waitingOn) waits.push(p.operation.waitingOn.kind);
        if (p.operation.state !== 'RUNNING') break;
      }
    })();
    await untilPhase(t, '1', 'COMPLETED');
    await Promise.all([watchingNodes, watchingOp]);
    expect(phases).toEqual(['DRAINING', 'EVACUATING', 'COMPLETED']);
    expect(steps).toContain('default/a:MIGRATE:MOVED');
    expect(steps).toContain('default/b:STOP:STOPPED');
    expect(waits).toContain('VMS_ON_NODE');
  });
});
