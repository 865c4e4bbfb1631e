/**
 * The rehearsal's API (issue 33): rehearseRollout admits like startRollout, answers RUNNING at
 * once, stores the report (or the error) when the samples come back; a restart marks what was
 * left RUNNING FAILED; startRollout(rehearsal:) refuses a stale one, naming the change.
 *
 * docs/rehearsal.md's GraphQL examples are these.
 *
 * The worker is replaced by a test double that hands back hand-written samples when the test
 * releases it (the samples themselves are the worker's and reh-domain's, tested there).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { rolloutApp, twoZoneCluster } from '../rollouts/harness.ts';
import type { TestApp } from '../support/graphql-app.ts';
import { DIALECTS, postgresSkipReason } from '../support/test-database.ts';
import { sample, workerDouble } from './doubles.ts';

const REHEARSE = `mutation ($samples: Int, $seed: Int) { r: rehearseRollout(input: { nodes: ["1", "2"], action: MAINTENANCE, reason: "patch night" }, samples: $samples, seed: $seed) {
  __typename ... on Rehearsal { id state samples seed actor summary progress { done total } }
  ... on Error { code message } ... on InvalidInputError { field value } ... on NotFoundError { kind id } } }`;

const READ = `query ($id: ID!) { r: rehearsal(id: $id) { __typename ... on Rehearsal { id state error finishedAt
  report { samples duration { p10 p50 p90 } waves { wave nodeIds duration { p50 } } nodes { nodeId wave leftOnNode safeToRestart }
    pauses { reason nodeId workload probability typicalAtSeconds } peakNodesOut outcomes { succeeded gaveUp } durationSources { default } }
  rollout { id } } ... on NotFoundError { kind id } } }`;

const START = `mutation ($rehearsal: ID) { r: startRollout(input: { nodes: ["1", "2"], action: MAINTENANCE, reason: "patch night" }, rehearsal: $rehearsal) {
  __typename ... on Operation { id rehearsal { id } } ... on Error { code message } ... on NotFoundError { kind id }
  ... on PreconditionFailedError { reason } ... on RehearsalStaleError { rehearsalId changes { code message } } ... on ConflictError { operationId } } }`;

const apps: TestApp[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.stop()));
});

describe.each(DIALECTS)('rehearseRollout on %s', (dialect) => {
  const skip = dialect === 'postgresql' ? postgresSkipReason() : null;

  async function app(worker = workerDouble(), databaseFile?: string) {
    const t = await rolloutApp(twoZoneCluster(), {
      dialect,
      ...(databaseFile && { databaseFile }),
      rehearsal: { runSamples: worker.runSamples, snapshot: async () => [{ plugin: 'fake', takenAt: Date.UTC(2026, 0, 1), data: { nodes: 4 } }] },
    });
    apps.push(t);
    return t;
  }

  async function rehearsed(t: TestApp, worker: ReturnType<typeof workerDouble>) {
    const { data } = await t.gql(REHEARSE, { samples: 3, seed: 7 });
    expect(data.r.__typename).toBe('Rehearsal');
    worker.calls.at(-1)!.resolve([sample(7, 600_000), sample(8, 720_000), sample(9, 900_000)]);
    await t.app.rehearsals.settled();
    return data.r.id as string;
  }

  it.skipIf(skip)('answers RUNNING at once, runs the samples in the worker with the snapshot, then stores the report; audited', async () => {
    const worker = workerDouble();
    const t = await app(worker);
    const { data } = await t.gql(REHEARSE, { samples: 3, seed: 7 });
    expect(data.r).toMatchObject({ __typename: 'Rehearsal', state: 'RUNNING', samples: 3, seed: 7, actor: 'anonymous', progress: { done: 1, total: 3 } });
    expect(data.r.summary).toBe('MAINTENANCE of node(s) 1, 2, maxUnavailable 1, restart WAIT_FOR_REATTACH');
    // The worker got everything as data: the input, the samples and seed, the backends' snapshot.
    expect(worker.calls).toHaveLength(1);
    expect(worker.calls[0]!.request).toMatchObject({
      samples: 3,
      seed: 7,
      input: { nodes: ['1', '2'], action: 'MAINTENANCE' },
      snapshots: [{ plugin: 'fake' }],
    });
    expect((await t.gql(READ, { id: data.r.id })).data.r).toMatchObject({ state: 'RUNNING', report: null, finishedAt: null });

    worker.calls[0]!.resolve([sample(7, 600_000, 60_000), sample(8, 720_000), sample(9, 900_000, 120_000)]);
    await t.app.rehearsals.settled();
    const read = (await t.gql(READ, { id: data.r.id })).data.r;
    expect(read.state).toBe('SUCCEEDED');
    expect(read.finishedAt).not.toBeNull();
    expect(read.report).toEqual({
      samples: 3,
      // Three samples: (n + 1)·q is held within 1…n, so p10 and p90 are the extremes; each wave is half of each sample.
      duration: { p10: 600, p50: 720, p90: 900 },
      waves: [
        { wave: 1, nodeIds: ['1'], duration: { p50: 360 } },
        { wave: 2, nodeIds: ['2'], duration: { p50: 360 } },
      ],
      nodes: [
        { nodeId: '1', wave: 1, leftOnNode: [], safeToRestart: true },
        { nodeId: '2', wave: 2, leftOnNode: [], safeToRestart: true },
      ],
      // In two samples of three, at 60 s and 120 s.
      pauses: [{ reason: 'UNSAFE_TO_RESTART', nodeId: '2', workload: 'prod/vm-2-1', probability: 2 / 3, typicalAtSeconds: 90 }],
      peakNodesOut: 1,
      outcomes: { succeeded: 3, gaveUp: 0 },
      durationSources: { default: 9 },
    });
    const list = (await t.gql('{ rehearsals(first: 10) { totalCount edges { node { id state } } } }')).data.rehearsals;
    expect(list).toEqual({ totalCount: 1, edges: [{ node: { id: data.r.id, state: 'SUCCEEDED' } }] });
    const audit = await t.db.prisma.auditEntry.findMany({ where: { action: 'rehearseRollout' } });
    expect(audit.map((a) => [a.actor, a.outcome, a.reason])).toEqual([['anonymous', 'OK', 'patch night']]);
  });

  it.skipIf(skip)('refuses samples out of 1..200 and input startRollout refuses, before anything runs or is stored', async () => {
    const worker = workerDouble();
    const t = await app(worker);
    for (const samples of [0, 201]) {
      const { data } = await t.gql(REHEARSE, { samples });
      expect(data.r).toMatchObject({ __typename: 'InvalidInputError', code: 'INVALID_INPUT', field: 'samples', value: String(samples) });
    }
    const unknown = await t.gql(
      `mutation { r: rehearseRollout(input: { nodes: ["404"], action: MAINTENANCE }) { __typename ... on NotFoundError { kind id } } }`,
    );
    expect(unknown.data.r).toEqual({ __typename: 'NotFoundError', kind: 'NODE', id: '404' });
    expect(worker.calls).toHaveLength(0);
    expect(await t.db.prisma.rehearsal.count()).toBe(0);
    const outcomes = (await t.db.prisma.auditEntry.findMany({ where: { action: 'rehearseRollout' }, orderBy: { at: 'asc' } })).map((a) => a.outcome);
    expect(outcomes.sort()).toEqual(['INVALID_INPUT', 'INVALID_INPUT', 'NOT_FOUND']);
  });

  it.skipIf(skip)('runs one rehearsal at a time; a worker that fails leaves the rehearsal FAILED with its error', async () => {
    const worker = workerDouble();
    const t = await app(worker);
    const first = (await t.gql(REHEARSE, {})).data.r;
    const second = (await t.gql(REHEARSE, {})).data.r;
    expect(second).toMatchObject({ __typename: 'ConflictError', code: 'CONFLICT' });
    expect(second.message).toContain(first.id);
    worker.calls[0]!.reject(new Error('the loader of plugin "fake" refused the snapshot'));
    await t.app.rehearsals.settled();
    expect((await t.gql(READ, { id: first.id })).data.r).toMatchObject({
      state: 'FAILED',
      error: 'the loader of plugin "fake" refused the snapshot',
      report: null,
    });
    // The slot is free again.
    expect((await t.gql(REHEARSE, {})).data.r.__typename).toBe('Rehearsal');
  });

  it.skipIf(skip)('a restart marks a rehearsal left RUNNING FAILED (interrupted by a restart); a stop ends its worker and says so', async () => {
    const file = dialect === 'sqlite' ? join(mkdtempSync(join(tmpdir(), 'lk-rehearsal-')), 'lk.db') : undefined;
    const worker = workerDouble();
    const first = await app(worker, file);
    // A gateway killed mid-rehearsal: its row stays RUNNING (written as the service writes it).
    const killed = await first.db.prisma.rehearsal.create({
      data: { actor: 'ops', input: '{"nodes":["1"],"action":"MAINTENANCE"}', samples: 20, seed: 1, state: 'RUNNING', planBasis: 'null' },
    });
    const running = (await first.gql(REHEARSE, {})).data.r;
    const url = first.db.file;
    await first.stop();
    apps.splice(apps.indexOf(first), 1);
    expect(worker.calls[0]!.signal?.aborted).toBe(true);

    const second = await app(workerDouble(), file ?? url);
    for (const id of [killed.id, running.id]) {
      expect((await second.gql(READ, { id })).data.r).toMatchObject({ state: 'FAILED', error: 'interrupted by a restart' });
    }
  });

  it.skipIf(skip)('startRollout(rehearsal:) refuses an unknown, unfinished or stale rehearsal, naming the change; records an accepted one', async () => {
    const worker = workerDouble();
    const t = await app(worker);
    expect((await t.gql(START, { rehearsal: 'nope' })).data.r).toMatchObject({ __typename: 'NotFoundError', kind: 'REHEARSAL', id: 'nope' });

    const pending = (await t.gql(REHEARSE, {})).data.r.id;
    expect((await t.gql(START, { rehearsal: pending })).data.r).toMatchObject({ __typename: 'PreconditionFailedError', reason: 'REHEARSAL_NOT_SUCCEEDED' });
    worker.calls[0]!.resolve([sample(1, 1000)]);
    await t.app.rehearsals.settled();

    // A VM on node 1 now carries a shutdown strategy: the maintenance of node 1 would stop it instead of migrating it.
    await t.cluster.setVmMaintenanceStrategyLabel('prod/vm-1-0', 'Shutdown');
    const stale = (await t.gql(START, { rehearsal: pending })).data.r;
    expect(stale.__typename).toBe('RehearsalStaleError');
    expect(stale.code).toBe('REHEARSAL_STALE');
    expect(stale.changes).toEqual([
      {
        code: 'WORKLOAD_CHANGED',
        message: '1: VM prod/vm-1-0 has maintenance strategy Shutdown (was Migrate); would be stopped (restart NEVER) (was live-migrated)',
      },
    ]);
    expect(stale.message).toBe(
      `rehearsal ${pending} is stale: the plan changed since the rehearsal (1 change): 1: VM prod/vm-1-0 has maintenance strategy Shutdown (was Migrate); would be stopped (restart NEVER) (was live-migrated); rehearse again`,
    );
    expect(await t.db.prisma.operation.count({ where: { kind: 'ROLLOUT' } })).toBe(0);

    // Rehearsed again on the cluster as it is now: accepted and recorded on the rollout.
    const fresh = await rehearsed(t, worker);
    const started = (await t.gql(START, { rehearsal: fresh })).data.r;
    expect(started).toMatchObject({ __typename: 'Operation', rehearsal: { id: fresh } });
    expect((await t.gql(READ, { id: fresh })).data.r.rollout).toEqual({ id: started.id });
    // A rehearsal stands for one rollout only.
    const reused = (await t.gql(START, { rehearsal: fresh })).data.r;
    expect(reused).toMatchObject({ __typename: 'ConflictError', operationId: started.id });
    const audit = await t.db.prisma.auditEntry.findMany({ where: { action: 'startRollout' } });
    expect(audit.map((a) => a.outcome).sort()).toEqual(['CONFLICT', 'NOT_FOUND', 'OK', 'PRECONDITION_FAILED', 'REHEARSAL_STALE']);
  });

  it.skipIf(skip)('startRollout(rehearsal:) with other settings than the rehearsed ones is stale too, naming the setting', async () => {
    const worker = workerDouble();
    const t = await app(worker);
    const id = await rehearsed(t, worker);
    const res = await t.gql(
      `mutation ($id: ID) { r: startRollout(input: { nodes: ["1", "2"], action: MAINTENANCE, settleSeconds: 60 }, rehearsal: $id) {
        __typename ... on RehearsalStaleError { changes { code message } } } }`,
      { id },
    );
    expect(res.data.r.changes[0]).toEqual({ code: 'SETTINGS_CHANGED', message: 'settleSeconds is now 60 (was 0)' });
  });
});
