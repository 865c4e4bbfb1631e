/**
 * Issue 16 point 4: `kill -9` in each dangerous window of a maintenance or a fill, at a
 * definite signal, never at a time. Each window is held open by the simulated cluster's
 * faults (a `stuck` move, or an action that always fails transiently), the gateway is
 * killed once the API shows the window, and restarted on the same database and the same
 * durable cluster. Where the window has a move in flight, the state file is edited while
 * the gateway is down to say whether the cluster finished it (point 3: a move whose latency
 * has run finished; one still held had not), so the resumed gateway must find out which.
 * After the run the campaign's invariants hold (campaign/invariants.ts), plus each
 * window's own checks.
 *
 * The pageserver cut-over window (neon:C1–C9, between its steps) is in
 * kill-pageserver-cutover.test.ts: killed in neon:C6 (WAL catch-up held) and in neon:C7 (the
 * compute notification held), with the real pageserver plugin on the pageserver simulators.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { findViolations, readDatabase, viewCluster, type ClusterView, type Ledger } from '../../campaign/invariants.ts';
import { vmOn1 } from '../support/durable-topology.ts';
import { postGraphQL, spawnLockkeeper, until as untilEvery25ms } from '../support/child-server.ts';

/** Polls four times a second: each look is a whole-cluster query, and the machine is shared. */
const until = <T>(probe: () => Promise<T | undefined>, what: string) => untilEvery25ms(probe, what, 200_000, 250);

let server: ReturnType<typeof spawnLockkeeper> | undefined;
afterEach(() => {
  server?.child.kill('SIGKILL');
});

/** Two process starts on a loaded two-core machine (80–100 s seen at load 27), and the runs between them; only catches a hang. */
const TIMEOUT = 240_000;
const OPERATIONS = { migrationRetryDelayMs: 200 };

interface Run {
  dir: string;
  ledger: Ledger;
}

/** A gateway on a durable simulated cluster in a fresh directory. */
async function startRun(topology: object, latenciesMs: object, operations: object = OPERATIONS): Promise<Run> {
  const dir = mkdtempSync(join(tmpdir(), 'lk-kill-window-'));
  writeFileSync(
    join(dir, 'lockkeeper.config.json'),
    JSON.stringify({ plugins: [{ name: 'fake', options: { statePath: 'cluster-state.json', latenciesMs, topology } }], operations }),
  );
  await boot(dir);
  const view = await viewCluster(server!.url);
  return {
    dir,
    ledger: { initialRunStrategy: new Map([...view.vms.values()].map((v) => [v.id, v.runStrategy])), startedOperations: new Set(), namedFailures: new Set() },
  };
}

async function boot(dir: string): Promise<void> {
  server = spawnLockkeeper({ LOCKKEEPER_DATABASE_URL: `file:${join(dir, 'lockkeeper.db')}` }, dir);
  await server.ready;
}

async function kill(): Promise<void> {
  server!.child.kill('SIGKILL');
  expect((await server!.exited).signal).toBe('SIGKILL');
}

/** Changes the cluster while no gateway runs: what the cluster did on its own meanwhile. */
function whileDown(run: Run, change: (state: any) => void): void {
  const path = join(run.dir, 'cluster-state.json');
  const state = JSON.parse(readFileSync(path, 'utf8'));
  change(state);
  writeFileSync(path, JSON.stringify(state));
}

/** The moves the state file holds in flight. */
const movesInFlight = (run: Run): { result: { kind: string; vmId?: string; shardId?: string } }[] =>
  JSON.parse(readFileSync(join(run.dir, 'cluster-state.json'), 'utf8')).moves;

const gql = (query: string) => postGraphQL(server!.url, query);
const mutate = async (field: string, args: string, select = '... on Operation { id }') =>
  (await gql(`mutation { r: ${field}(${args}) { __typename ${select} ... on Error { code message } } }`)).r;

async function enable(run: Run, nodeId: string): Promise<string> {
  const r = await mutate('enableMaintenanceMode', `nodeId: "${nodeId}", reason: "kill window"`);
  expect(r.__typename).toBe('Operation');
  run.ledger.startedOperations.add(r.id);
  return r.id;
}

const injectFaults = (input: string) => gql(`mutation { simulation { injectFaults(input: { ${input} }) { __typename } } }`);
const clearFaults = () => gql('mutation { simulation { clearFaults { stuck } } }');

/** Waits, through the API, for a view that passes `ready`. */
const viewUntil = (ready: (v: ClusterView) => boolean, what: string) =>
  until(async () => {
    const v = await viewCluster(server!.url);
    return ready(v) ? v : undefined;
  }, what);

async function expectClean(run: Run): Promise<ClusterView> {
  const view = await viewCluster(server!.url);
  expect(findViolations(view, readDatabase(join(run.dir, 'lockkeeper.db')), run.ledger)).toEqual([]);
  return view;
}

async function operation(id: string): Promise<{ state: string; counts: Record<string, number>; steps: { workloadId: string; state: string }[] }> {
  const data = await gql(
    `{ operation(id: "${id}") { ... on Operation { state counts { moved skipped failed planned moving } steps(first: 100) { edges { node { workloadId state } } } } } }`,
  );
  return { ...data.operation, steps: data.operation.steps.edges.map((e: any) => e.node) };
}

const ended = (id: string) =>
  until(async () => {
    const op = await operation(id);
    return op.state === 'RUNNING' || op.state === 'CANCELLING' ? undefined : op;
  }, `operation ${id} to end`);

describe('kill -9 in each dangerous window, at a definite signal', () => {
  it(
    'maintenance DRAINING, after the tracking write and before the stop: the resumed run stops and restarts with the saved run strategies',
    async () => {
      const run = await startRun(
        {
          nodes: [{ id: '1' }, { id: '2' }, { id: '3' }],
          vms: [
            vmOn1('ae', 'ShutdownAndRestartAfterEnable', { runStrategy: 'RerunOnFailure' }),
            vmOn1('ad', 'ShutdownAndRestartAfterDisable', { runStrategy: 'Manual' }),
            vmOn1('m', null),
          ],
        },
        { migrate: 50, stop: 50, start: 50, cordon: 20 },
      );
      // Every stop and the cordon fail (transiently, retried): DRAINING holds with tracking written and nothing stopped.
      await injectFaults('failureRate: { stop: 1, cordon: 1 }');
      const id = await enable(run, '1');
      const atKill = await viewUntil(
        (v) => v.nodes.get('1')!.phase === 'DRAINING' && !!v.vms.get('default/ae')!.tracking && !!v.vms.get('default/ad')!.tracking,
        'DRAINING with both trackings recorded',
      );
      for (const vm of ['default/ae', 'default/ad']) expect(atKill.vms.get(vm)).toMatchObject({ status: 'RUNNING', nodeId: '1' });
      expect(atKill.vms.get('default/ae')!.tracking).toMatchObject({ strategy: 'ShutdownAndRestartAfterEnable', savedRunStrategy: 'RERUN_ON_FAILURE' });
      await kill();

      await boot(run.dir);
      expect(server!.stdout()).toContain('resuming maintenance of node 1 in phase DRAINING');
      await clearFaults();
      expect((await ended(id)).state).toBe('SUCCEEDED');
      const done = await expectClean(run);
      expect(done.nodes.get('1')).toMatchObject({ phase: 'COMPLETED', cordoned: true });
      // The stop after the kill must not have recorded Halted as the run strategy to restore.
      expect(done.vms.get('default/ae')).toMatchObject({ status: 'RUNNING', runStrategy: 'RERUN_ON_FAILURE', tracking: null });
      expect(done.vms.get('default/ae')!.nodeId).not.toBe('1');
      expect(done.vms.get('default/ad')).toMatchObject({
        status: 'STOPPED',
        tracking: { nodeName: 'node-1', strategy: 'ShutdownAndRestartAfterDisable', savedRunStrategy: 'MANUAL' },
      });
      expect(done.vms.get('default/m')!.nodeId).not.toBe('1');
    },
    TIMEOUT,
  );

  it(
    'during the vm:M4 restarts: a start the cluster finished meanwhile is found done, one it had not is made again',
    async () => {
      const run = await startRun(
        {
          nodes: [{ id: '1' }, { id: '2' }, { id: '3' }],
          vms: [
            vmOn1('done-meanwhile', 'ShutdownAndRestartAfterEnable', { runStrategy: 'RerunOnFailure' }),
            vmOn1('not-done', 'ShutdownAndRestartAfterEnable'),
            vmOn1('m', null),
          ],
        },
        // Starts take no time of their own: a held start has run its latency, so it finishes once released.
        { migrate: 50, stop: 50, start: 0, cordon: 20 },
      );
      // The migration holds the node in EVACUATING until both VMs are stopped; then one mutation
      // releases it and holds their restarts instead, so the restarts start held.
      await injectFaults('stuck: ["default/m"]');
      const id = await enable(run, '1');
      await viewUntil(
        (v) =>
          v.vms.get('default/m')!.status === 'MIGRATING' && ['default/done-meanwhile', 'default/not-done'].every((vm) => v.vms.get(vm)!.status === 'STOPPED'),
        'both stopped, the migration held',
      );
      await injectFaults('stuck: ["default/done-meanwhile", "default/not-done"]');
      await viewUntil(
        (v) => v.nodes.get('1')!.phase === 'EVACUATING' && ['default/done-meanwhile', 'default/not-done'].every((vm) => v.vms.get(vm)!.status === 'STARTING'),
        'both restarts after enable in flight',
      );
      await kill();
      expect(movesInFlight(run).map((m) => m.result)).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ kind: 'start', vmId: 'default/done-meanwhile' }),
          expect.objectContaining({ kind: 'start', vmId: 'default/not-done' }),
        ]),
      );
      // While the gateway is down the cluster lets one start through: it finished, unrecorded.
      whileDown(run, (state) => (state.faults.stuck = ['default/not-done']));

      await boot(run.dir);
      expect(server!.stdout()).toContain('resuming maintenance of node 1 in phase EVACUATING');
      const resumed = await viewCluster(server!.url);
      expect(resumed.vms.get('default/done-meanwhile')).toMatchObject({ status: 'RUNNING', runStrategy: 'RERUN_ON_FAILURE' });
      await clearFaults();
      expect((await ended(id)).state).toBe('SUCCEEDED');
      const done = await expectClean(run);
      for (const vm of ['default/done-meanwhile', 'default/not-done']) {
        expect(done.vms.get(vm), vm).toMatchObject({ status: 'RUNNING', tracking: null });
        expect(done.vms.get(vm)!.nodeId, vm).not.toBe('1');
      }
      expect(done.vms.get('default/not-done')!.runStrategy).toBe('ALWAYS');
    },
    TIMEOUT,
  );

  it(
    'during disable: the node stays in maintenance until every tracked VM is restarted, so disabling again finishes the job',
    async () => {
      const run = await startRun(
        {
          nodes: [{ id: '1' }, { id: '2' }],
          vms: [vmOn1('ad1', 'ShutdownAndRestartAfterDisable'), vmOn1('ad2', 'ShutdownAndRestartAfterDisable', { runStrategy: 'Manual' }), vmOn1('m', null)],
        },
        { migrate: 50, stop: 50, start: 0, cordon: 20 },
      );
      const id = await enable(run, '1');
      expect((await ended(id)).state).toBe('SUCCEEDED');
      // Restarts go in namespace/name order: ad1 first, held, so ad2 is not even asked for.
      await injectFaults('stuck: ["default/ad1"]');
      const disabling = mutate('disableMaintenanceMode', 'nodeId: "1"', '... on DisableMaintenanceResult { restartedVmIds }').catch((e: unknown) => e);
      await viewUntil((v) => v.vms.get('default/ad1')!.status === 'STARTING', 'the first restart of disable in flight');
      await kill();
      expect(await disabling).toBeInstanceOf(Error);
      whileDown(run, (state) => (state.faults.stuck = []));

      await boot(run.dir);
      const resumed = await viewCluster(server!.url);
      // Not out of maintenance yet: ad2 still waits, and the node still says so.
      expect(resumed.nodes.get('1')!.phase).toBe('COMPLETED');
      expect(resumed.vms.get('default/ad1')).toMatchObject({ status: 'RUNNING', runStrategy: 'ALWAYS' });
      expect(resumed.vms.get('default/ad2')).toMatchObject({ status: 'STOPPED', tracking: { savedRunStrategy: 'MANUAL' } });
      const again = await mutate('disableMaintenanceMode', 'nodeId: "1"', '... on DisableMaintenanceResult { restartedVmIds failures { vmId } }');
      // vm:T2: ad1 runs already, so only its tracking goes; ad2 is restarted.
      expect(again).toMatchObject({ __typename: 'DisableMaintenanceResult', restartedVmIds: ['default/ad2'], failures: [] });
      const done = await viewUntil((v) => v.vms.get('default/ad2')!.status === 'RUNNING', 'ad2 running');
      expect(done.nodes.get('1')).toMatchObject({ phase: null, cordoned: false });
      expect(done.vms.get('default/ad1')).toMatchObject({ runStrategy: 'ALWAYS', tracking: null });
      expect(done.vms.get('default/ad2')).toMatchObject({ runStrategy: 'MANUAL', tracking: null });
      await expectClean(run);
    },
    TIMEOUT,
  );

  it(
    'during a fill: a cut-over recorded, one the cluster finished unrecorded, one not finished; each shard moves exactly once',
    async () => {
      const tenants = ['ta', 'tb', 'tc', 'td', 'te', 'tf', 'tg', 'th', 'ti'];
      const run = await startRun(
        {
          nodes: [{ id: '1' }, { id: '2' }, { id: '3' }],
          // Node 1 holds nothing attached, a secondary of every shard: the fill brings three back (storage:F3).
          shards: tenants.map((t, i) => ({ tenantId: t, attachedNodeId: i % 2 ? '2' : '3', secondaries: [{ nodeId: '1' }] })),
        },
        { cutOver: 0, cordon: 20 },
      );
      await injectFaults(`stuck: ${JSON.stringify(tenants)}`);
      const r = await mutate('startNodeFill', 'nodeId: "1", reason: "kill window"');
      expect(r.__typename).toBe('Operation');
      run.ledger.startedOperations.add(r.id);
      const moving = await until(async () => {
        const op = await operation(r.id);
        return op.steps.length === 3 && op.steps.every((s) => s.state === 'MOVING') ? op.steps.map((s) => s.workloadId) : undefined;
      }, 'three cut-overs in flight');
      const [recorded, meanwhile, notDone] = moving as [string, string, string];
      await injectFaults(`stuck: ${JSON.stringify(tenants.filter((t) => t !== recorded))}`);
      await until(async () => ((await operation(r.id)).counts.moved === 1 ? true : undefined), 'one cut-over recorded');
      await kill();
      expect(
        movesInFlight(run)
          .map((m) => m.result.shardId)
          .sort(),
      ).toEqual([meanwhile, notDone].sort());
      whileDown(run, (state) => (state.faults.stuck = [notDone]));

      await boot(run.dir);
      expect(server!.stdout()).toContain('resuming fill of node 1');
      expect((await viewCluster(server!.url)).shards.get(meanwhile)!.attachedNodeId).toBe('1');
      await clearFaults();
      const op = await ended(r.id);
      expect(op).toMatchObject({ state: 'SUCCEEDED', counts: { moved: 3, skipped: 0, failed: 0, planned: 0, moving: 0 } });
      const done = await expectClean(run);
      for (const shard of [recorded, meanwhile, notDone]) {
        expect(done.shards.get(shard), shard).toMatchObject({ attachedNodeId: '1' });
        expect(done.shards.get(shard)!.secondaryNodeIds).toHaveLength(1);
      }
      expect([...done.shards.values()].filter((s) => s.attachedNodeId === '1')).toHaveLength(3);
    },
    TIMEOUT,
  );
});
