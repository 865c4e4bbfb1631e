/**
 * startRollout(rehearsal:) on the fake backend (issue 33 point 3, docs/rehearsal.md "When a
 * rehearsal is stale"): the cluster is changed through the simulated cluster's own controls
 * after the rehearsal; a change that changes the plan is refused, named; one that does not is
 * accepted. The comparison's rules one by one are test/domain/rehearsal/plan-changes.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ClusterBackend } from '../../src/cluster/backend.ts';
import type { ClusterNode } from '../../src/cluster/types.ts';
import { rolloutApp, twoZoneCluster } from '../rollouts/harness.ts';
import type { TestApp } from '../support/graphql-app.ts';
import { sample, workerDouble } from './doubles.ts';

const REHEARSE = `mutation { r: rehearseRollout(input: { nodes: ["1", "2"], action: MAINTENANCE }, samples: 1, seed: 1) { __typename ... on Rehearsal { id } } }`;
const START = `mutation ($rehearsal: ID) { r: startRollout(input: { nodes: ["1", "2"], action: MAINTENANCE }, rehearsal: $rehearsal) {
  __typename ... on Operation { id rehearsal { id } } ... on RehearsalStaleError { code rehearsalId changes { code nodeId workload message } } } }`;

const apps: TestApp[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.stop()));
});

/** Labels added to node 4 as the backend lists it (the fake has no control for labels). */
const extraLabels: Record<string, string> = {};
const withLabels = (cluster: TestApp['cluster']): ClusterBackend =>
  new Proxy(cluster, {
    get: (target, prop, receiver) =>
      prop === 'listNodes'
        ? async (): Promise<ClusterNode[]> => (await target.listNodes()).map((n) => (n.id === '4' ? { ...n, labels: { ...n.labels, ...extraLabels } } : n))
        : Reflect.get(target, prop, receiver),
  });

async function rehearsed(): Promise<{ t: TestApp; id: string }> {
  for (const key of Object.keys(extraLabels)) delete extraLabels[key];
  const worker = workerDouble();
  const t = await rolloutApp(twoZoneCluster(), { rehearsal: { runSamples: worker.runSamples }, backend: withLabels });
  apps.push(t);
  const { data } = await t.gql(REHEARSE);
  expect(data.r.__typename).toBe('Rehearsal');
  worker.calls[0]!.resolve([sample(1, 60_000)]);
  await t.app.rehearsals.settled();
  return { t, id: data.r.id as string };
}

describe('startRollout(rehearsal:) after the cluster changed', () => {
  it.each([
    {
      change: 'a node outside the rollout cordoned (it counts for the budget, rollout:O5)',
      act: async (t: TestApp) => {
        const cordoned = t.cluster.cordonNode('3');
        await t.clock.advance(10);
        await cordoned;
      },
      changes: [{ code: 'NODE_STATE_CHANGED', nodeId: '3', workload: null, message: '3 is now ACTIVE, cordoned, cordoned (was ACTIVE, schedulable)' }],
    },
    {
      change: 'a node outside the rollout offline',
      act: (t: TestApp) => t.cluster.simulation.setNodeOnline('4', false),
      changes: [{ code: 'NODE_STATE_CHANGED', nodeId: '4', workload: null, message: '4 is now OFFLINE, schedulable, OFFLINE (was ACTIVE, schedulable)' }],
    },
    {
      change: "a VM's maintenance strategy changed on a node of the rollout",
      act: (t: TestApp) => t.cluster.setVmMaintenanceStrategyLabel('prod/vm-2-0', 'Migrate'),
      changes: [
        {
          code: 'WORKLOAD_CHANGED',
          nodeId: '2',
          workload: 'prod/vm-2-0',
          message:
            '2: VM prod/vm-2-0 has maintenance strategy Migrate (was ShutdownAndRestartAfterDisable); would be live-migrated (was stopped (restart AFTER_DISABLE))',
        },
      ],
    },
    {
      change: 'a VM migrated onto a node of the rollout',
      act: async (t: TestApp) => {
        const moved = t.cluster.migrateVm('prod/vm-3-0', { fromNodeId: '3', toNodeId: '1' });
        await t.clock.advance(200);
        await moved;
      },
      changes: [{ code: 'WORKLOAD_ADDED', nodeId: '1', workload: 'prod/vm-3-0', message: '1: VM prod/vm-3-0 is new there' }],
    },
  ])('refuses after $change, naming the change', async ({ act, changes }) => {
    const { t, id } = await rehearsed();
    await act(t);
    const res = (await t.gql(START, { rehearsal: id })).data.r;
    expect(res).toMatchObject({ __typename: 'RehearsalStaleError', code: 'REHEARSAL_STALE', rehearsalId: id });
    expect(res.changes).toEqual(changes);
    expect(await t.db.prisma.operation.count({ where: { kind: 'ROLLOUT' } })).toBe(0);
  });

  it('accepts after a change that does not change the plan: a label no selector names', async () => {
    const { t, id } = await rehearsed();
    extraLabels['team'] = 'storage';
    expect((await t.cluster.listNodes()).find((n) => n.id === '4')!.labels['team']).toBeUndefined();
    expect((await t.app.rollouts.clusterView()).find((n) => n.id === '4')!.labels['team']).toBe('storage');
    const res = (await t.gql(START, { rehearsal: id })).data.r;
    expect(res).toMatchObject({ __typename: 'Operation', rehearsal: { id } });
  });
});
