import type { TopologySpec, VmSpec } from '../../plugins/fake/index.ts';
import { createTestApp, type TestApp, type TestAppOptions } from '../support/graphql-app.ts';
import { driveUntil } from '../operations/drive.ts';

/** Three worker nodes (one zone), nothing else; VMs are added per test. */
export function cluster(vms: VmSpec[], extra: Partial<TopologySpec> = {}): TopologySpec {
  return {
    nodes: [
      { id: '1', name: 'node-1', roles: ['control-plane', 'worker'] },
      { id: '2', name: 'node-2', roles: ['control-plane', 'worker'] },
      { id: '3', name: 'node-3', roles: ['control-plane', 'worker'] },
    ],
    vms,
    ...extra,
  };
}

export async function maintenanceApp(topology: TopologySpec, options: Omit<TestAppOptions, 'topology'> = {}): Promise<TestApp> {
  return createTestApp({ topology, latenciesMs: { migrate: 500, stop: 200, start: 300, cordon: 10 }, ...options });
}

const ENABLE_RESULT = `__typename
  ... on Operation { id state kind counts { planned moving moved skipped failed total } waitingOn { kind description workloadIds } }
  ... on Error { code message }
  ... on PreconditionFailedError { failedReason: reason blockers { id reasons } }`;

export async function enable(t: TestApp, nodeId: string, args = '') {
  const res = await t.gql(`mutation { r: enableMaintenanceMode(nodeId: "${nodeId}"${args}) { ${ENABLE_RESULT} } }`);
  if (res.errors) throw new Error(JSON.stringify(res.errors));
  return res.data.r;
}

/** Runs a request whose backend actions take simulated time, moving the clock until it answers. */
export async function whileDriving<T>(t: TestApp, request: Promise<T>): Promise<T> {
  let settled = false;
  const tracked = request.finally(() => {
    settled = true;
  });
  await driveUntil(t, () => settled, { stepMs: 50 });
  return tracked;
}

export async function disable(t: TestApp, nodeId: string) {
  const res = await whileDriving(
    t,
    t.gql(`mutation { r: disableMaintenanceMode(nodeId: "${nodeId}") { __typename
    ... on DisableMaintenanceResult { restartedVmIds trackingClearedVmIds failures { vmId message } warnings node { cordoned maintenancePhase } fillOperation { id kind } }
    ... on Error { code message } } }`),
  );
  if (res.errors) throw new Error(JSON.stringify(res.errors));
  return res.data.r;
}

export async function phaseOf(t: TestApp, nodeId: string): Promise<string | null> {
  return t.app.maintenance.stateOf(nodeId)?.phase ?? null;
}

/** Drives virtual time until the node's maintenance reaches `phase`. */
export async function untilPhase(t: TestApp, nodeId: string, phase: string, maxMs = 3_600_000) {
  await driveUntil(t, async () => (await phaseOf(t, nodeId)) === phase, { stepMs: 100, maxMs });
}

export async function vm(t: TestApp, id: string) {
  const v = await t.cluster.getVm(id);
  if (!v) throw new Error(`no VM ${id}`);
  return v;
}
