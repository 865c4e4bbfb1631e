import type { TopologySpec } from '../../plugins/fake/index.ts';
import { driveUntil } from '../operations/drive.ts';
import { createTestApp, type TestApp, type TestAppOptions } from '../support/graphql-app.ts';
import type { RolloutRun } from '../../src/operations/rollouts/run.ts';

/** Four storage-and-VM nodes in two zones, VMs of every strategy (all migratable), every shard with a warm secondary. */
export function twoZoneCluster(): TopologySpec {
  const strategies = ['Migrate', 'ShutdownAndRestartAfterEnable', 'ShutdownAndRestartAfterDisable', 'Shutdown', null];
  const nodes = ['1', '2', '3', '4'].map((id) => ({ id, zone: Number(id) <= 2 ? 'zone-a' : 'zone-b', roles: ['worker', 'storage'] }));
  const vms = nodes.flatMap((n, i) =>
    [0, 1].map((j) => ({
      namespace: 'prod',
      name: `vm-${n.id}-${j}`,
      nodeId: n.id,
      maintenanceStrategyLabel: strategies[(i * 2 + j) % strategies.length] ?? null,
      volumes: [{ name: 'root', replicas: [{ nodeId: n.id }, { nodeId: String((Number(n.id) % 4) + 1) }] }],
    })),
  );
  // Unsharded tenants: a fill's per-tenant cap (storage:F3) then never holds a node below its share.
  const shards = Array.from({ length: 16 }, (_, i) => ({
    tenantId: `t${i}`,
    attachedNodeId: String((i % 4) + 1),
    secondaries: [{ nodeId: String(((i + 1) % 4) + 1) }],
  }));
  return { nodes, vms, shards };
}

export async function rolloutApp(topology: TopologySpec, options: Omit<TestAppOptions, 'topology'> = {}): Promise<TestApp> {
  return createTestApp({
    topology,
    latenciesMs: { migrate: 200, stop: 100, start: 100, cordon: 10, cutOver: 20 },
    restartDelayMs: 2_000,
    heartbeatIntervalMs: 500,
    ...options,
  });
}

const START = `__typename
  ... on Operation { id state kind nodeId counts { planned moving moved skipped failed total } waitingOn { kind description workloadIds } }
  ... on Error { code message }
  ... on InvalidInputError { field value }
  ... on NotFoundError { id }
  ... on ConflictError { operationId }`;

export async function startRollout(t: TestApp, input: string) {
  const res = await t.gql(`mutation { r: startRollout(input: { ${input} }) { ${START} } }`);
  if (res.errors) throw new Error(JSON.stringify(res.errors));
  return res.data.r;
}

export async function control(t: TestApp, mutation: string, args: string) {
  const res = await t.gql(
    `mutation { r: ${mutation}(${args}) { __typename ... on Operation { id state waitingOn { kind description } } ... on Error { code message } } }`,
  );
  if (res.errors) throw new Error(JSON.stringify(res.errors));
  return res.data.r;
}

export function run(t: TestApp, id: string): RolloutRun {
  return t.app.operations.live.get(id) as RolloutRun;
}

export async function stateOf(t: TestApp, id: string) {
  return (await t.app.operations.getOperation(id))!.state;
}

/**
 * Plays the operator's reboot automation: a node the rollout hands over for its restart
 * is restarted (once) in the simulated cluster.
 */
function restarter(t: TestApp, id: string, cluster = t.cluster) {
  const restarted = new Set<string>();
  return async () => {
    const r = t.app.operations.live.get(id) as RolloutRun | undefined;
    if (!r) return;
    for (const [nodeId, d] of r.details) {
      const key = `${nodeId}:${d.operations.map((o) => o.id).join()}`;
      if (d.phase === 'WAITING_FOR_RESTART' && !restarted.has(key)) {
        restarted.add(key);
        await cluster.simulation.restartNode(nodeId);
      }
    }
  };
}

/** Drives virtual time, restarting handed-over nodes, until the rollout reaches one of `states`. */
export async function driveRollout(
  t: TestApp,
  id: string,
  states: string[],
  options: { restart?: boolean; maxMs?: number; cluster?: TestApp['cluster'] } = {},
) {
  // `cluster`: the simulated cluster the app's backend is (a restarted gateway's test app given the first one's).
  const restart = options.restart === false ? async () => {} : restarter(t, id, options.cluster);
  await driveUntil(
    t,
    async () => {
      await restart();
      return states.includes(await stateOf(t, id));
    },
    { stepMs: 100, maxMs: options.maxMs ?? 3_600_000 },
  );
  return t.app.operations.getOperation(id);
}

/**
 * rollout:O5 from the event log alone: replays every logged transition of policy,
 * maintenance phase, availability and cordon, and returns the most nodes ever out of
 * service at once (and which nodes went out at all).
 */
export async function mostOutOfServiceFromLog(t: TestApp): Promise<{ max: number; nodesOut: string[] }> {
  await t.app.operations.journal.flush();
  const events = await t.db.prisma.event.findMany({ orderBy: { seq: 'asc' } });
  const nodes = new Map<string, { policy: string; phase: string | null; availability: string; cordoned: boolean }>();
  const get = (id: string) => {
    if (!nodes.has(id)) nodes.set(id, { policy: 'ACTIVE', phase: null, availability: 'ACTIVE', cordoned: false });
    return nodes.get(id)!;
  };
  const isOut = (n: { policy: string; phase: string | null; availability: string; cordoned: boolean }) =>
    n.policy !== 'ACTIVE' || n.phase !== null || n.availability !== 'ACTIVE' || n.cordoned;
  let max = 0;
  const nodesOut = new Set<string>();
  for (const e of events) {
    if (!e.nodeId) continue;
    const payload = JSON.parse(e.payload);
    const n = get(e.nodeId);
    const wasOut = isOut(n);
    if (e.type === 'NODE_POLICY_CHANGED') n.policy = payload.to;
    else if (e.type === 'MAINTENANCE_PHASE_CHANGED') n.phase = payload.to;
    else if (e.type === 'NODE_STATE_CHANGED') Object.assign(n, { availability: payload.availability, cordoned: payload.cordoned });
    else continue;
    if (!wasOut && isOut(n)) nodesOut.add(e.nodeId);
    max = Math.max(max, [...nodes.values()].filter(isOut).length);
  }
  return { max, nodesOut: [...nodesOut].sort() };
}
