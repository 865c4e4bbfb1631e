/**
 * A rehearsal end to end (issue 33): rehearseRollout on the fake backend through the real
 * worker thread, the real loader, engines and report; its report covers every wave and node
 * of rolloutPlan, and startRollout(rehearsal:) accepts it while nothing has changed.
 */
import { afterEach, expect, it } from 'vitest';
import { rolloutApp, twoZoneCluster } from '../rollouts/harness.ts';
import type { TestApp } from '../support/graphql-app.ts';

const INPUT = `{ nodes: ["1", "3"], action: MAINTENANCE, restart: NONE, reason: "patch night" }`;

const apps: TestApp[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.stop()));
});

it('runs the samples in the worker and stores a report of every wave and node; the rehearsed rollout then starts', { timeout: 180_000 }, async () => {
  const t = await rolloutApp(twoZoneCluster(), { plugins: [{ name: 'fake', options: {} }] });
  apps.push(t);
  const planned = await t.gql(`{ p: rolloutPlan(input: ${INPUT}) { __typename ... on RolloutPlan { waves { number nodeIds } } ... on Error { message } } }`);
  expect(planned.errors?.map((e) => e.message)).toBeUndefined();
  const plan = planned.data!.p;
  expect(plan.waves).toEqual([
    { number: 1, nodeIds: ['1'] },
    { number: 2, nodeIds: ['3'] },
  ]);

  const started = (
    await t.gql(`mutation { r: rehearseRollout(input: ${INPUT}, samples: 3, seed: 11) { __typename ... on Rehearsal { id state } ... on Error { message } } }`)
  ).data.r;
  expect(started).toMatchObject({ __typename: 'Rehearsal', state: 'RUNNING' });
  await t.app.rehearsals.settled();

  const read = (
    await t.gql(
      `query ($id: ID!) { r: rehearsal(id: $id) { ... on Rehearsal { state error report { samples duration { p10 p50 p90 } waves { wave nodeIds } nodes { nodeId wave } outcomes { succeeded gaveUp } peakNodesOut } } } }`,
      { id: started.id },
    )
  ).data.r;
  expect(read.error).toBeNull();
  expect(read.state).toBe('SUCCEEDED');
  expect(read.report.samples).toBe(3);
  expect(read.report.waves).toEqual(plan.waves.map((w: { number: number; nodeIds: string[] }) => ({ wave: w.number, nodeIds: w.nodeIds })));
  expect(read.report.nodes.map((n: { nodeId: string; wave: number }) => [n.nodeId, n.wave])).toEqual([
    ['1', 1],
    ['3', 2],
  ]);
  expect(read.report.outcomes.succeeded).toBe(3);
  expect(read.report.peakNodesOut).toBe(1);
  // Each wave moves VMs at the harness's latencies: the predicted rollout takes virtual time.
  expect(read.report.duration.p10).toBeGreaterThan(0);
  expect(read.report.duration.p10).toBeLessThanOrEqual(read.report.duration.p50);
  expect(read.report.duration.p50).toBeLessThanOrEqual(read.report.duration.p90);

  const start = (
    await t.gql(
      `mutation ($id: ID) { r: startRollout(input: ${INPUT}, rehearsal: $id) { __typename ... on Operation { kind rehearsal { id } } ... on Error { message } } }`,
      { id: started.id },
    )
  ).data.r;
  expect(start).toEqual({ __typename: 'Operation', kind: 'ROLLOUT', rehearsal: { id: started.id } });
});
