import { afterEach, describe, expect, it } from 'vitest';
import { applyEnvironment } from '../../src/config/environment.ts';
import { DEFAULT_CONFIG } from '../../src/config/defaults.ts';
import type { TestApp } from '../support/graphql-app.ts';
import { cluster, enable, maintenanceApp } from './harness.ts';

/**
 * Issue 17, point 8: maintenance of the node Lockkeeper itself runs on, while its database
 * volume cannot move, is refused with a message that says what to do — force or not, in the
 * plan as in the enable.
 */

let t: TestApp;
afterEach(async () => {
  await t?.stop();
});

const topology = () => cluster([{ namespace: 'default', name: 'web', nodeId: '1' }]);

async function planOf(nodeId: string, force = false) {
  const res = await t.gql(`{ maintenancePlan(nodeId: "${nodeId}", force: ${force}) { accepted refusals { code message } } }`);
  return res.data.maintenancePlan;
}

describe('GATEWAY_ON_NODE', () => {
  it('refuses maintenance of the gateway’s own node (by name), with force too, and says how to get out', async () => {
    t = await maintenanceApp(topology(), { settings: { gatewayNodeName: 'node-1' } });
    const refused = await enable(t, '1');
    expect(refused).toMatchObject({ __typename: 'PreconditionFailedError', code: 'PRECONDITION_FAILED', failedReason: 'GATEWAY_ON_NODE' });
    expect(refused.message).toContain('Lockkeeper itself runs on node 1 and its database volume cannot move');
    expect(refused.message).toContain('delete the lockkeeper pod');
    expect(await enable(t, '1', ', force: true')).toMatchObject({ failedReason: 'GATEWAY_ON_NODE' });
    const plan = await planOf('1', true);
    expect(plan.accepted).toBe(false);
    expect(plan.refusals.map((r: { code: string }) => r.code)).toEqual(['GATEWAY_ON_NODE']);
    // Nothing was written: the node is not in maintenance, and another node is accepted.
    expect((await t.gql(`{ node(id: "1") { ... on ClusterNode { maintenancePhase cordoned } } }`)).data.node).toEqual({
      maintenancePhase: null,
      cordoned: false,
    });
    expect(await enable(t, '2')).toMatchObject({ __typename: 'Operation', kind: 'MAINTENANCE' });
  });

  it('accepts it when the gateway’s volume can move (network storage, or PostgreSQL)', async () => {
    t = await maintenanceApp(topology(), { settings: { gatewayNodeName: 'node-1', gatewayVolumeMovable: true } });
    expect(await planOf('1')).toMatchObject({ accepted: true, refusals: [] });
    expect(await enable(t, '1')).toMatchObject({ __typename: 'Operation', kind: 'MAINTENANCE' });
  });

  it('knows its node from LOCKKEEPER_NODE_NAME (the downward API’s spec.nodeName)', () => {
    expect(applyEnvironment(DEFAULT_CONFIG, { LOCKKEEPER_NODE_NAME: 'worker-7' }).operations.gatewayNodeName).toBe('worker-7');
    expect(applyEnvironment(DEFAULT_CONFIG, {}).operations.gatewayNodeName).toBeUndefined();
  });
});
