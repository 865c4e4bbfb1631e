/**
 * Issue 4, resumption (vm:M6): a real `lockkeeper serve` child process is `kill -9`ed while
 * its maintenance is EVACUATING, started again on the same database and the same durable
 * simulated cluster, and the maintenance finishes with every VM where its strategy puts it
 * and every step done exactly once.
 *
 * The kill point is made deterministic, not a race against a 400 ms window: the last
 * migration (migrations leave one at a time, `maxOutboundMigrationsPerNode: 1`) is held by
 * the fake's `stuck` fault, so the node stays EVACUATING, with four of five migrations done,
 * for as long as the test needs. The fault is in the cluster's state file, so it outlives
 * the kill too; the test lifts it after the restart and the resumed run completes.
 */
import Database from 'better-sqlite3';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { vmOn1 } from '../support/durable-topology.ts';
import { postGraphQL, spawnLockkeeper, until } from '../support/child-server.ts';

let server: ReturnType<typeof spawnLockkeeper> | undefined;
afterEach(() => {
  server?.child.kill('SIGKILL');
});

const MIGRATE = ['default/m1', 'default/m2', 'default/m3', 'default/m4', 'default/m5'];
/** Migrations leave in namespace/name order, one at a time: m5 is the last one. */
const LAST_MIGRATION = 'default/m5';
const AFTER_ENABLE = ['default/ae1', 'default/ae2'];
const AFTER_DISABLE = ['default/ad1', 'default/ad2'];
const SHUTDOWN = ['default/sd1'];
const ON_NODE_1 = [...MIGRATE, ...AFTER_ENABLE, ...AFTER_DISABLE, ...SHUTDOWN];
const BYSTANDER = 'default/elsewhere';

function writeConfig(dir: string): void {
  writeFileSync(
    join(dir, 'lockkeeper.config.json'),
    JSON.stringify({
      plugins: [
        {
          name: 'fake',
          options: {
            statePath: 'cluster-state.json',
            latenciesMs: { migrate: 400, stop: 300, start: 300, cordon: 20 },
            topology: {
              nodes: [{ id: '1' }, { id: '2' }, { id: '3' }],
              vms: [
                vmOn1('m1', null),
                vmOn1('m2', 'Migrate'),
                vmOn1('m3', null, { runStrategy: 'RerunOnFailure' }),
                vmOn1('m4', null),
                vmOn1('m5', null),
                vmOn1('ae1', 'ShutdownAndRestartAfterEnable'),
                vmOn1('ae2', 'ShutdownAndRestartAfterEnable', { runStrategy: 'RerunOnFailure' }),
                vmOn1('ad1', 'ShutdownAndRestartAfterDisable'),
                vmOn1('ad2', 'ShutdownAndRestartAfterDisable', { runStrategy: 'Manual' }),
                vmOn1('sd1', 'Shutdown'),
                { namespace: 'default', name: 'elsewhere', nodeId: '2' },
              ],
            },
          },
        },
      ],
      operations: { maxParallelMigrations: 2, maxOutboundMigrationsPerNode: 1 },
    }),
  );
}

interface VmView {
  id: string;
  status: string;
  runStrategy: string;
  nodeId: string | null;
  tracking: { nodeName: string; strategy: string; savedRunStrategy: string | null } | null;
}

async function snapshot(url: string): Promise<{ phase: string | null; cordoned: boolean; vms: Map<string, VmView> }> {
  const data = await postGraphQL(
    url,
    `{ node(id: "1") { ... on ClusterNode { maintenancePhase cordoned } }
       vms(first: 100) { edges { node { id status runStrategy node { id } tracking { nodeName strategy savedRunStrategy } } } } }`,
  );
  const vms = new Map<string, VmView>();
  for (const { node: v } of data.vms.edges)
    vms.set(v.id, { id: v.id, status: v.status, runStrategy: v.runStrategy, nodeId: v.node?.id ?? null, tracking: v.tracking });
  return { phase: data.node.maintenancePhase, cordoned: data.node.cordoned, vms };
}

const offNode1 = (vm: VmView | undefined) => vm !== undefined && vm.status === 'RUNNING' && vm.nodeId !== null && vm.nodeId !== '1';

describe('kill -9 during EVACUATING', () => {
  // Two child processes start and stop here: generous on a loaded two-core machine.
  it('resumes on restart with the same database and cluster, reaches COMPLETED, and loses nothing', { timeout: 120_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lk-kill-maint-'));
    writeConfig(dir);
    server = spawnLockkeeper({ LOCKKEEPER_DATABASE_URL: `file:${join(dir, 'lockkeeper.db')}` }, dir);
    await server.ready;
    const before = await snapshot(server.url);
    expect([...before.vms.keys()].sort()).toEqual([...ON_NODE_1, BYSTANDER].sort());

    await postGraphQL(server.url, `mutation { simulation { injectFaults(input: { stuck: ["${LAST_MIGRATION}"] }) { __typename } } }`);
    const enabled = await postGraphQL(
      server.url,
      'mutation { r: enableMaintenanceMode(nodeId: "1", reason: "kill test") { __typename ... on Operation { id } ... on Error { code message } } }',
    );
    expect(enabled.r.__typename).toBe('Operation');
    const id: string = enabled.r.id;

    // EVACUATING, the last migration in flight (held), the other four done, every stop done.
    const atKill = await until(async () => {
      const s = await snapshot(server!.url);
      const stopsDone = [...AFTER_ENABLE, ...AFTER_DISABLE, ...SHUTDOWN].every((v) => s.vms.get(v)?.status === 'STOPPED');
      const migrated = MIGRATE.filter((v) => offNode1(s.vms.get(v)));
      return s.phase === 'EVACUATING' && stopsDone && migrated.length === MIGRATE.length - 1 ? s : undefined;
    }, 'EVACUATING with four of five migrations done');
    expect(atKill.vms.get(LAST_MIGRATION)).toMatchObject({ nodeId: '1' });
    for (const v of AFTER_ENABLE) expect(atKill.vms.get(v)?.tracking).toMatchObject({ nodeName: 'node-1', strategy: 'ShutdownAndRestartAfterEnable' });

    server.child.kill('SIGKILL');
    expect((await server.exited).signal).toBe('SIGKILL');

    server = spawnLockkeeper({ LOCKKEEPER_DATABASE_URL: `file:${join(dir, 'lockkeeper.db')}` }, dir);
    await server.ready;
    expect(server.stdout()).toContain('resuming maintenance of node 1 in phase EVACUATING');
    // Still held: nothing can have completed yet.
    expect((await snapshot(server.url)).phase).toBe('EVACUATING');
    await postGraphQL(server.url, 'mutation { simulation { clearFaults { stuck } } }');

    const done = await until(async () => {
      const s = await snapshot(server!.url);
      return s.phase === 'EVACUATING' ? undefined : s;
    }, 'the maintenance to leave EVACUATING');
    expect(done.phase).toBe('COMPLETED');
    expect(done.cordoned).toBe(true);

    // Nothing lost: the same VMs, none of them left running on node 1.
    expect([...done.vms.keys()].sort()).toEqual([...ON_NODE_1, BYSTANDER].sort());
    for (const v of MIGRATE) {
      expect(offNode1(done.vms.get(v)), v).toBe(true);
      expect(done.vms.get(v)?.tracking, v).toBeNull();
    }
    expect(done.vms.get('default/m3')?.runStrategy).toBe('RERUN_ON_FAILURE');
    for (const v of AFTER_ENABLE) {
      expect(offNode1(done.vms.get(v)), v).toBe(true);
      expect(done.vms.get(v)?.tracking, v).toBeNull();
    }
    // vm:T2: the saved run strategy is restored.
    expect(done.vms.get('default/ae1')?.runStrategy).toBe('ALWAYS');
    expect(done.vms.get('default/ae2')?.runStrategy).toBe('RERUN_ON_FAILURE');
    expect(done.vms.get('default/ad1')).toMatchObject({
      status: 'STOPPED',
      runStrategy: 'HALTED',
      nodeId: null,
      tracking: { nodeName: 'node-1', strategy: 'ShutdownAndRestartAfterDisable', savedRunStrategy: 'ALWAYS' },
    });
    expect(done.vms.get('default/ad2')).toMatchObject({
      status: 'STOPPED',
      runStrategy: 'HALTED',
      nodeId: null,
      tracking: { nodeName: 'node-1', strategy: 'ShutdownAndRestartAfterDisable', savedRunStrategy: 'MANUAL' },
    });
    expect(done.vms.get('default/sd1')).toMatchObject({ status: 'STOPPED', runStrategy: 'HALTED', nodeId: null, tracking: null });
    expect(done.vms.get(BYSTANDER)).toMatchObject({ status: 'RUNNING', nodeId: '2' });

    // One operation, one step per VM of node 1, each finished exactly once: MOVED, or STOPPED for the VMs only stopped.
    const data = await postGraphQL(
      server.url,
      `{ operation(id: "${id}") { ... on Operation { state kind counts { planned moving moved stopped skipped failed total } steps(first: 100) { totalCount edges { node { workloadId action state } } } } }
         operations { totalCount } }`,
    );
    expect(data.operations.totalCount).toBe(1);
    expect(data.operation).toMatchObject({
      state: 'SUCCEEDED',
      kind: 'MAINTENANCE',
      counts: {
        planned: 0,
        moving: 0,
        moved: MIGRATE.length + AFTER_ENABLE.length,
        stopped: AFTER_DISABLE.length + SHUTDOWN.length,
        skipped: 0,
        failed: 0,
        total: ON_NODE_1.length,
      },
    });
    const steps = data.operation.steps.edges.map((e: any) => e.node);
    expect(steps.map((s: any) => s.workloadId).sort()).toEqual([...ON_NODE_1].sort());
    const stateOf = Object.fromEntries(steps.map((s: any) => [s.workloadId, s.state]));
    for (const v of [...MIGRATE, ...AFTER_ENABLE]) expect(stateOf[v]).toBe('MOVED');
    for (const v of [...AFTER_DISABLE, ...SHUTDOWN]) expect(stateOf[v]).toBe('STOPPED');
    const actionOf = Object.fromEntries(steps.map((s: any) => [s.workloadId, s.action]));
    for (const v of MIGRATE) expect(actionOf[v]).toBe('MIGRATE');
    for (const v of AFTER_ENABLE) expect(actionOf[v]).toBe('STOP_AND_RESTART');
    for (const v of [...AFTER_DISABLE, ...SHUTDOWN]) expect(actionOf[v]).toBe('STOP');

    // The event log has exactly one terminal event per VM step, across both processes.
    const db = new Database(join(dir, 'lockkeeper.db'), { readonly: true });
    try {
      const rows = db.prepare(`SELECT type, payload FROM "Event" WHERE operationId = ? AND type LIKE 'VM\\_%' ESCAPE '\\'`).all(id) as {
        type: string;
        payload: string;
      }[];
      const terminal = rows
        .filter((r) => /_(MOVED|STOPPED|SKIPPED|FAILED)$/.test(r.type))
        .map((r) => ({ vm: JSON.parse(r.payload).vm as string, type: r.type }));
      expect(terminal.map((t) => t.vm).sort()).toEqual([...ON_NODE_1].sort());
      expect(Object.fromEntries(terminal.map((t) => [t.vm, t.type]))).toEqual(
        Object.fromEntries(ON_NODE_1.map((v) => [v, [...AFTER_DISABLE, ...SHUTDOWN].includes(v) ? 'VM_STOPPED' : `VM_${actionOf[v]}_MOVED`])),
      );
      // Tracking copies: only the after-disable VMs are still tracked.
      const tracked = (db.prepare('SELECT vmId FROM "VmTracking" ORDER BY vmId').all() as { vmId: string }[]).map((r) => r.vmId);
      expect(tracked).toEqual(AFTER_DISABLE);
    } finally {
      db.close();
    }

    // Disable: the after-disable VMs run on node 1 again, with their run strategies back.
    const disabled = await postGraphQL(
      server.url,
      `mutation { r: disableMaintenanceMode(nodeId: "1") { __typename ... on DisableMaintenanceResult { restartedVmIds failures { vmId message } node { cordoned maintenancePhase } } ... on Error { code message } } }`,
    );
    expect(disabled.r).toMatchObject({ __typename: 'DisableMaintenanceResult', failures: [], node: { cordoned: false, maintenancePhase: null } });
    expect([...disabled.r.restartedVmIds].sort()).toEqual(AFTER_DISABLE);
    const after = await until(async () => {
      const s = await snapshot(server!.url);
      return AFTER_DISABLE.every((v) => s.vms.get(v)?.status === 'RUNNING') ? s : undefined;
    }, 'the after-disable VMs to run');
    expect(after.vms.get('default/ad1')).toMatchObject({ nodeId: '1', runStrategy: 'ALWAYS', tracking: null });
    expect(after.vms.get('default/ad2')).toMatchObject({ nodeId: '1', runStrategy: 'MANUAL', tracking: null });
    expect(after.vms.get('default/sd1')).toMatchObject({ status: 'STOPPED', tracking: null });
    for (const v of [...MIGRATE, ...AFTER_ENABLE]) expect(offNode1(after.vms.get(v)), v).toBe(true);
    expect([...after.vms.values()].every((v) => v.tracking === null)).toBe(true);
  });
});
