import { afterEach, expect, it } from 'vitest';
import { pageserverWorlds } from '../support/pageserver-e2e.ts';

/**
 * Issue 17, point 6: on a backend that serves no VMs (the pageserver plugin), a query that
 * asks for VMs or a maintenance plan answers — empty lists and a typed refusal — instead of
 * failing as a whole (`data: null`).
 */

const { setUp } = pageserverWorlds(afterEach);

it('vms is an empty page, maintenancePlan a NO_VMS refusal, enable a typed PreconditionFailedError; the rest of the query answers', async () => {
  const w = await setUp({ nodes: [{ id: 1 }, { id: 2 }], shards: [{ tenant: 1, attached: 1, secondaries: [2] }] });
  const data = await w.gql(`{
    vms(first: 10) { totalCount edges { node { id } } }
    maintenancePlan(nodeId: "1") { accepted vms { vmId } refusals { code message } }
    node(id: "1") { ... on ClusterNode { id safeToRestart remainingWorkloads { kind id } } }
  }`);
  expect(data.vms).toEqual({ totalCount: 0, edges: [] });
  expect(data.maintenancePlan.accepted).toBe(false);
  expect(data.maintenancePlan.vms).toEqual([]);
  expect(data.maintenancePlan.refusals).toEqual([{ code: 'NO_VMS', message: expect.stringContaining('drain its shards with startNodeDrain') }]);
  expect(data.node).toMatchObject({ id: '1', safeToRestart: false, remainingWorkloads: [{ kind: 'SHARD' }] });
  const enable = await w.gql(`mutation { r: enableMaintenanceMode(nodeId: "1") {
    __typename ... on Error { code message } ... on PreconditionFailedError { reason } } }`);
  expect(enable.r).toMatchObject({ __typename: 'PreconditionFailedError', code: 'PRECONDITION_FAILED', reason: 'NO_VMS' });
});
