/**
 * Issue 16 point 4, the pageserver window: `kill -9` of a gateway (`lockkeeper serve` with the
 * real `pageserver` plugin, a child process) in the middle of a live cut-over (neon:C1–C9),
 * at a definite signal: the step shows the phase, and the simulator holds the cut-over there.
 * The pageserver simulators and the compute hook run in this process and outlive the kill, as
 * real ones do. Restarted on the same database, the resumed gateway rolls the cut-over
 * forward: the operation ends, the shard has exactly one AttachedSingle (on the destination),
 * the origin is a Secondary, the computes were told the destination (neon:C7), no generation
 * was attached on two pageservers (the simulators' safety checker records every location it
 * was told to hold), and the campaign invariants hold on the database.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { findViolations, readDatabase, viewCluster, type Ledger } from '../../campaign/invariants.ts';
import {
  createPageserverCampaignCluster,
  findPageserverViolations,
  GenerationRecorder,
  type PageserverCampaignCluster,
} from '../../campaign/pageserver-cluster.ts';
import { shardIdOf, type SimShardSpec } from '../../simulators/pageserver/index.ts';
import { postGraphQL, until as untilEvery25ms } from '../support/child-server.ts';

const until = <T>(probe: () => Promise<T | undefined>, what: string) => untilEvery25ms(probe, what, 200_000, 250);

/** Two process starts on a loaded two-core machine, and the runs between them; only catches a hang. */
const TIMEOUT = 240_000;
/** Unsharded: a sharded tenant with one shard only would never be notified (the hook waits for every shard, neon:C12). */
const SHARD: SimShardSpec = { tenant: 1, attached: 1, secondaries: [2] };
const ID = shardIdOf(SHARD);

let cluster: PageserverCampaignCluster | undefined;
afterEach(async () => {
  await cluster?.stop();
  cluster = undefined;
});

const gql = (query: string) => postGraphQL(cluster!.gateway!.url, query);

async function stepOf(opId: string): Promise<{ state: string; phase: string | null; error: string | null; startedAt: string | null }> {
  const data = await gql(
    `{ operation(id: "${opId}") { ... on Operation { state steps(first: 10) { edges { node { workloadId state phase error startedAt } } } } } }`,
  );
  return data.operation.steps.edges.find((e: any) => e.node.workloadId === ID).node;
}

async function drain(ledger: Ledger): Promise<string> {
  const r = (
    await gql(`mutation { r: startNodeDrain(nodeId: "1", reason: "kill window") { __typename ... on Operation { id } ... on Error { code message } } }`)
  ).r;
  expect(r.__typename).toBe('Operation');
  ledger.startedOperations.add(r.id);
  return r.id;
}

async function killAndRestart(): Promise<void> {
  const g = cluster!.gateway!;
  g.child.kill('SIGKILL');
  expect((await g.exited).signal).toBe('SIGKILL');
  cluster!.gateway = undefined;
  await cluster!.start();
}

async function endsClean(opId: string, ledger: Ledger): Promise<void> {
  const op = await until(async () => {
    const d = await gql(`{ operation(id: "${opId}") { ... on Operation { state counts { moved failed } } } }`);
    return d.operation.state === 'RUNNING' || d.operation.state === 'CANCELLING' ? undefined : d.operation;
  }, 'the drain to end');
  expect(op).toMatchObject({ state: 'SUCCEEDED', counts: { moved: 1, failed: 0 } });
  expect((await stepOf(opId)).state).toBe('MOVED');
  // The computes may be told by the resumed gateway's reconcile after the operation ended.
  await until(async () => (cluster!.hook.applied.get(ID.slice(0, 32))?.shards[0]?.node_id === 2 ? true : undefined), 'the computes told node 2 (neon:C7)');
  // The origin's AttachedStale may be made Secondary by the resumed gateway's reconcile after the operation ended (neon:C8).
  await until(async () => (cluster!.fleet.view()[ID]!['1'] === 'Secondary@-' ? true : undefined), 'the origin made a Secondary (neon:C8)');
  const held = cluster!.fleet.view()[ID]!;
  expect(held['2']).toMatch(/^AttachedSingle@\d+$/);
  expect(held['1']).toBe('Secondary@-');
  const view = await viewCluster(cluster!.gateway!.url);
  expect(view.shards.get(ID)).toMatchObject({ attachedNodeId: '2', secondaryNodeIds: ['1'] });
  expect(findPageserverViolations(cluster!, view)).toEqual([]);
  expect(findViolations(view, readDatabase(cluster!.dbPath), ledger)).toEqual([]);
}

const newLedger = (): Ledger => ({ initialRunStrategy: new Map(), startedOperations: new Set(), namedFailures: new Set() });

describe('kill -9 during a pageserver cut-over, between its steps', () => {
  it(
    'in neon:C6 (AttachedMulti issued on the destination, WAL catch-up held): the resumed gateway rolls forward to AttachedSingle there, no generation reused',
    { timeout: TIMEOUT },
    async () => {
      cluster = await createPageserverCampaignCluster({ putLatencyMs: 0, shards: [SHARD] });
      await cluster.start();
      const ledger = newLedger();
      cluster.fleet.sim(2).holdCatchUp(ID, 3_600_000);
      const op = await drain(ledger);
      await until(async () => ((await stepOf(op)).phase === 'WAL_CATCH_UP' ? true : undefined), 'the step waiting in WAL_CATCH_UP');
      // neon:C1 and neon:C5 done: the origin AttachedStale, the destination AttachedMulti at a newer generation.
      const atKill = cluster.fleet.view()[ID]!;
      expect(atKill['1']).toBe('AttachedStale@1');
      expect(atKill['2']).toMatch(/^AttachedMulti@([2-9]|\d\d+)$/);
      const startedBefore = (await stepOf(op)).startedAt;
      // Node 2 hears no location_config until the resumed gateway has taken the step up.
      cluster.fleet.sim(2).holdLocationConfigs(true);
      await killAndRestart();
      // The intent already names node 2, but the step is not MOVED before node 2 holds the shard
      // AttachedSingle: until then the drain must not end and call node 1 safe to restart.
      const resumed = await until(async () => {
        const step = await stepOf(op);
        return step.state === 'MOVED' || step.startedAt !== startedBefore ? step : undefined;
      }, 'the resumed gateway to take the step up');
      expect(resumed).toMatchObject({ state: 'MOVING' });
      expect(cluster.fleet.view()[ID]!['2']).toMatch(/^AttachedMulti@/);
      // The resumed reconcile attaches node 2 directly (Neon's reconcile after a crash): no second catch-up wait.
      cluster.fleet.sim(2).holdLocationConfigs(false);
      cluster.fleet.sim(2).endCatchUp(ID);
      await endsClean(op, ledger);
    },
  );

  it('in neon:C7 (the compute notification held unanswered): the resumed gateway notifies again and finishes neon:C8–C9', { timeout: TIMEOUT }, async () => {
    cluster = await createPageserverCampaignCluster({ putLatencyMs: 0, shards: [SHARD] });
    await cluster.start();
    const ledger = newLedger();
    let hold = true;
    cluster.hook.answerWith(() => (hold ? { status: 200, delayMs: 3_600_000 } : { status: 200 }));
    const op = await drain(ledger);
    await until(async () => ((await stepOf(op)).phase === 'COMPUTE_NOTIFY' && cluster!.hook.waiting > 0 ? true : undefined), 'the notification held');
    expect(cluster.fleet.view()[ID]!['2']).toMatch(/^AttachedMulti@/);
    hold = false;
    await killAndRestart();
    await endsClean(op, ledger);
  });

  it('the generation evidence: a generation attached on two pageservers is named', () => {
    const recorder = new GenerationRecorder();
    recorder.record('1', ID, { mode: 'AttachedSingle', generation: 3 });
    recorder.record('1', ID, { mode: 'AttachedStale', generation: 3 });
    recorder.record('2', ID, { mode: 'AttachedMulti', generation: 4 });
    expect(recorder.generationsIssuedTwice()).toEqual([]);
    recorder.record('3', ID, { mode: 'AttachedMulti', generation: 4 });
    expect(recorder.generationsIssuedTwice()).toEqual([`shard ${ID}: generation 4 was issued to nodes 2 and 3`]);
  });
});
