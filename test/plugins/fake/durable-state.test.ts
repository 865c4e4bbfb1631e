import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { flushMicrotasks, VirtualClock } from '../../support/virtual-clock.ts';
import fakePlugin, { createSimulatedCluster, generateTopology, StateFileError, type SimulatedCluster } from '../../../plugins/fake/index.ts';
import { PROJECT_ROOT } from '../../support/child-server.ts';
import { setup, smallTopology } from './setup.ts';

let dir: string;
let statePath: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'lockkeeper-fake-'));
  statePath = join(dir, 'cluster.json');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const readState = () => JSON.parse(readFileSync(statePath, 'utf8'));

/** A second process on the same file: a fresh clock at the same start, a topology that must be ignored. */
function reopen(clock = new VirtualClock()): SimulatedCluster {
  return createSimulatedCluster({ clock, topology: 'empty', statePath });
}

async function everything(c: SimulatedCluster) {
  const shards = await c.listShards();
  const secondaries = await Promise.all(
    shards.flatMap((s) => s.secondaryNodeIds.map(async (n) => ({ shard: s.id, node: n, ...(await c.getSecondaryStatus(s.id, n)) }))),
  );
  return { nodes: await c.listNodes(), vms: await c.listVms(), shards, secondaries, latencies: c.simulation.getLatencies(), faults: c.simulation.getFaults() };
}

describe('statePath: a simulated cluster that outlives the process', () => {
  it('writes the topology at creation, then every change; a new instance on the file has the same state', async () => {
    const t = setup({ statePath, secondaryDownloadBytesPerSecond: 100 });
    expect(readState()).toMatchObject({ format: 'lockkeeper-fake-cluster', version: 1 });
    await t.after(50, t.cluster.cordonNode('2'));
    await t.after(400, t.cluster.stopVm('default/plain'));
    await t.after(300, t.cluster.cutOverShard('t1', { fromNodeId: '1', toNodeId: '2' }));
    await t.cluster.setVmMaintenanceStrategyLabel('default/gpu', 'Shutdown');
    await t.cluster.setVmTracking('default/plain', { nodeName: 'node-1', strategy: 'Shutdown', savedRunStrategy: 'Always' });
    await t.cluster.simulation.setSecondaryLag('t2', '2', 800, 10);
    await t.cluster.simulation.setSecondaryHeatmapKnown('t2', '3', false);
    t.cluster.simulation.setLatencies({ migrate: 7 });
    t.cluster.simulation.injectFaults({ failureRate: { stop: 0.25 }, stuck: ['default/manual'] });
    await t.cluster.simulation.removeNode('3');
    const before = await everything(t.cluster);
    expect(before.nodes.map((n) => n.id)).toEqual(['1', '2']);

    const clock = new VirtualClock(t.clock.now());
    const again = reopen(clock);
    expect(await everything(again)).toEqual(before);
    expect(await again.getNode('2')).toMatchObject({ cordoned: true });
    expect(await again.getVm('default/plain')).toMatchObject({ status: 'Stopped', runStrategy: 'Halted', tracking: { strategy: 'Shutdown' } });
    // It keeps working, and keeps saving.
    const uncordon = again.uncordonNode('2');
    await clock.advance(50);
    await uncordon;
    expect(readState().nodes[1]).toMatchObject({ id: '2', cordoned: false });
    await t.cluster.close();
    await again.close();
  });

  it("an action's effect is on disk before its promise's reactions run and before its event is delivered", async () => {
    const t = setup({ statePath });
    const seen: boolean[] = [];
    const cordonedOnDisk = () => readState().nodes.find((n: { id: string }) => n.id === '2').cordoned as boolean;
    t.cluster.watch((e) => {
      if (e.type === 'nodeChanged') seen.push(cordonedOnDisk());
    });
    const onResolve = t.cluster.cordonNode('2').then(cordonedOnDisk);
    await t.clock.advance(50);
    expect(await onResolve).toBe(true);
    expect(seen).toEqual([true]);
    // Changes that emit no event are saved too, before the action resolves.
    const lag = t.cluster.simulation.setSecondaryLag('t1', '2', 123).then(() => readState().secondaries);
    expect(await lag).toContainEqual(expect.objectContaining({ shardId: 't1', nodeId: '2', bytesTotal: 1000, bytesDownloaded: 877 }));
  });

  it('writes through <path>.tmp and a rename; a .tmp left by a crash is ignored and overwritten', async () => {
    writeFileSync(`${statePath}.tmp`, '{"torn": ');
    const first = createSimulatedCluster({ clock: new VirtualClock(), topology: smallTopology(), statePath });
    expect(existsSync(`${statePath}.tmp`)).toBe(false);
    writeFileSync(`${statePath}.tmp`, '{"torn": ');
    // Loading ignores the .tmp: the renamed file is the state.
    const second = reopen();
    expect((await second.listNodes()).map((n) => n.id)).toEqual(['1', '2', '3']);
    expect(readState().nodes).toHaveLength(3);
    expect(existsSync(`${statePath}.tmp`)).toBe(false);
    await first.close();
    await second.close();
  });

  it('survives kill -9 at any instant: the file is always a whole state', async () => {
    const fixture = fileURLToPath(new URL('./fixtures/churn.ts', import.meta.url));
    let before = await createSimulatedCluster({ topology: generateTopology({ nodes: 4, tenants: 20, shardsPerTenant: 100 }) }).listShards();
    // Killed after a definite number of cut-overs, while the next ones are under way.
    for (const afterMoves of [1, 7, 40]) {
      const child = spawn(process.execPath, ['--import', 'tsx', fixture, statePath], { cwd: PROJECT_ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
      const exited = new Promise((resolve) => child.once('exit', resolve));
      await new Promise<void>((resolve, reject) => {
        let moved = 0;
        child.stdout!.on('data', (chunk: Buffer) => {
          moved += chunk.toString().split('\n').length - 1;
          if (moved >= afterMoves) resolve();
        });
        child.once('exit', (code) => reject(new Error(`churn exited with ${code} after ${moved} cut-overs`)));
      });
      child.kill('SIGKILL');
      await exited;
      const again = reopen();
      const shards = await again.listShards();
      expect(shards).toHaveLength(2000);
      // The child did change things before it died (the test is not vacuous): each cut-over of
      // a pass moves another shard, and the ones it reported are on disk.
      expect(shards.filter((s, k) => s.attachedNodeId !== before[k]!.attachedNodeId).length).toBeGreaterThanOrEqual(afterMoves);
      before = shards;
      await again.close();
    }
  });

  it('a corrupt or foreign file is an error naming it, and is left as it was (never silently re-created)', () => {
    const cases = ['{"nodes": [', '{"hello": "world"}', JSON.stringify({ format: 'lockkeeper-fake-cluster', version: 2 })];
    for (const content of cases) {
      writeFileSync(statePath, content);
      const open = () => createSimulatedCluster({ clock: new VirtualClock(), topology: smallTopology(), statePath });
      expect(open).toThrow(StateFileError);
      expect(open).toThrow(statePath);
      expect(readFileSync(statePath, 'utf8')).toBe(content);
    }
    writeFileSync(statePath, JSON.stringify({ ...readValid(), nodes: [{ id: '1' }] }));
    expect(() => reopen()).toThrow(/nodes\.0\.name/);
  });

  it('a move in flight at the kill whose latency had not run by the reload never happened (killed early, it stays)', async () => {
    const t = setup({ statePath });
    const migrate = t.cluster.migrateVm('default/plain', { fromNodeId: '1', toNodeId: '2' });
    const stop = t.cluster.stopVm('default/manual');
    const start = t.cluster.startVm('default/halted', { runStrategy: 'Always', nodeId: '2' });
    const cut = t.cluster.cutOverShard('t1', { fromNodeId: '1', toNodeId: '2' });
    const cordon = t.cluster.cordonNode('3');
    await t.clock.advance(40);
    expect(await t.cluster.getVm('default/manual')).toMatchObject({ status: 'Stopping', runStrategy: 'Halted' });
    expect(readState().moves).toHaveLength(5);
    // Later changes to a VM mid-move are kept; only the move's own fields are rolled back.
    await t.cluster.setVmMaintenanceStrategyLabel('default/plain', 'Migrate');
    // The kill: the first instance runs no more. A new one on the file, its clock where the old one stopped.
    const again = reopen(new VirtualClock(t.clock.now()));
    expect(await again.getVm('default/plain')).toMatchObject({ status: 'Running', nodeId: '1', maintenanceStrategyLabel: 'Migrate' });
    expect(await again.getVm('default/manual')).toMatchObject({ status: 'Running', nodeId: '1', runStrategy: 'Manual' });
    expect(await again.getVm('default/halted')).toMatchObject({ status: 'Stopped', nodeId: null, runStrategy: 'Halted' });
    expect(await again.getShard('t1')).toMatchObject({ attachedNodeId: '1', secondaryNodeIds: ['2'] });
    expect(await again.getNode('3')).toMatchObject({ cordoned: false });
    // Nothing of them is left in flight either: the file records none.
    expect(readState().moves).toEqual([]);
    // The first process carries on (it was not killed after all); what completes is saved.
    await t.clock.advance(1000);
    await Promise.all([migrate, stop, start, cut, cordon]);
    const third = reopen();
    expect(await third.getVm('default/plain')).toMatchObject({ status: 'Running', nodeId: '2' });
    expect(await third.getVm('default/halted')).toMatchObject({ status: 'Running', nodeId: '2', runStrategy: 'Always' });
    expect(await third.getShard('t1')).toMatchObject({ attachedNodeId: '2' });
    await t.cluster.close();
  });

  it('a move in flight at the kill whose latency has run by the reload finished in the cluster, with the result it would have had', async () => {
    const t = setup({ statePath });
    void t.cluster.migrateVm('default/plain', { fromNodeId: '1', toNodeId: '2' }); // 800 ms
    void t.cluster.stopVm('default/manual'); // 400 ms
    void t.cluster.startVm('default/halted', { runStrategy: 'Always', nodeId: '2' }); // 500 ms
    void t.cluster.cutOverShard('t1', { fromNodeId: '1', toNodeId: '2' }); // 300 ms
    void t.cluster.cordonNode('3'); // 50 ms
    await t.clock.advance(20);
    const killedAt = t.clock.now();
    // The time a move had run at the last save counts, plus the time the clock moved on since.
    const again = reopen(new VirtualClock(killedAt + 780));
    const events: string[] = [];
    again.watch((e) => events.push(e.type));
    expect(await again.getVm('default/plain')).toMatchObject({ status: 'Running', nodeId: '2' });
    expect(await again.getVm('default/manual')).toMatchObject({ status: 'Stopped', nodeId: null, runStrategy: 'Halted' });
    expect(await again.getVm('default/halted')).toMatchObject({ status: 'Running', nodeId: '2', runStrategy: 'Always' });
    expect(await again.getShard('t1')).toMatchObject({ attachedNodeId: '2', secondaryNodeIds: ['1'] });
    // The old attached location is a warm secondary, as after any cut-over.
    expect(await again.getSecondaryStatus('t1', '1')).toMatchObject({ bytesTotal: 1000, bytesDownloaded: 1000 });
    expect(await again.getNode('3')).toMatchObject({ cordoned: true });
    // On disk at once, and nobody is told (nobody watched when it happened).
    expect(readState().vms.find((v: { id: string }) => v.id === 'default/plain')).toMatchObject({ nodeId: '2', status: 'Running' });
    expect(readState().moves).toEqual([]);
    // A change made now is delivered, and is the only thing delivered.
    await again.setVmMaintenanceStrategyLabel('default/gpu', 'Migrate');
    await flushMicrotasks();
    expect(events).toEqual(['vmChanged']);
    await again.close();
  });

  it('each move is decided on its own latency, to the millisecond; a stuck one has not finished', async () => {
    const t = setup({ statePath });
    t.cluster.simulation.injectFaults({ stuck: ['t2'] });
    void t.cluster.migrateVm('default/plain', { fromNodeId: '1', toNodeId: '2' }); // 800 ms
    void t.cluster.stopVm('default/manual'); // 400 ms
    void t.cluster.cutOverShard('t1', { fromNodeId: '1', toNodeId: '2' }); // 300 ms
    void t.cluster.cutOverShard('t2', { fromNodeId: '1', toNodeId: '2' }); // 300 ms, held by the fault
    await t.clock.advance(399);
    expect(await t.cluster.getShard('t1')).toMatchObject({ attachedNodeId: '2' });
    expect(await t.cluster.getVm('default/manual')).toMatchObject({ status: 'Stopping' });
    const killedAt = t.clock.now();
    // 400 ms after the start: the stop has just run its time, the migration has not.
    const again = reopen(new VirtualClock(killedAt + 1));
    expect(await again.getVm('default/manual')).toMatchObject({ status: 'Stopped', runStrategy: 'Halted' });
    expect(await again.getVm('default/plain')).toMatchObject({ status: 'Running', nodeId: '1' });
    expect(await again.getShard('t2')).toMatchObject({ attachedNodeId: '1' });
    await again.close();
  });

  it('a finished move meets the cluster as it was saved: a migration whose target was down keeps the VM at its source', async () => {
    const t = setup({ statePath });
    void t.cluster.migrateVm('default/plain', { fromNodeId: '1', toNodeId: '2' }).catch(() => {});
    await t.clock.advance(10);
    await t.cluster.simulation.setNodeOnline('2', false);
    const again = reopen(new VirtualClock(t.clock.now() + 10_000));
    expect(await again.getVm('default/plain')).toMatchObject({ status: 'Running', nodeId: '1' });
    await again.close();
  });

  it('nodes mid-restart come back ACTIVE with their VMs running again; a restart held down stays down', async () => {
    const t = setup({ statePath, restartDelayMs: 3000, heartbeatIntervalMs: 1000 });
    await t.cluster.simulation.restartNode('1');
    await t.cluster.simulation.restartNode('2');
    await t.cluster.simulation.setNodeOnline('2', false);
    await t.cluster.simulation.restartNode('3');
    await t.clock.advance(3000);
    expect(await t.cluster.getNode('3')).toMatchObject({ availability: 'WARMING_UP' });
    const again = createSimulatedCluster({ clock: new VirtualClock(), statePath });
    const events: string[] = [];
    again.watch((e) => events.push(e.type));
    expect((await again.listNodes()).map((n) => n.availability)).toEqual(['ACTIVE', 'OFFLINE', 'ACTIVE']);
    // Always restarts by itself, Manual does not (as after a re-attach).
    expect(await again.getVm('default/plain')).toMatchObject({ status: 'Running', nodeId: '1' });
    expect(await again.getVm('default/manual')).toMatchObject({ status: 'Stopped', nodeId: null });
    await again.simulation.setNodeOnline('2', true);
    expect(await again.getNode('2')).toMatchObject({ availability: 'WARMING_UP' });
    await new Promise((r) => setTimeout(r, 0));
    expect(events).toContain('nodeReattached');
    await again.close();
  });

  it('lag progress: bytes downloaded at the last save, plus the time the clock moved on since', async () => {
    const start = Date.UTC(2026, 0, 1);
    const t = setup({ statePath });
    await t.cluster.simulation.setSecondaryLag('t1', '2', 1000, 100);
    await t.clock.advance(2000);
    await t.cluster.simulation.setSecondaryHeatmapKnown('t2', '3', false);
    const saved = readFileSync(statePath, 'utf8');
    const lagAfterReload = async (now: number) => {
      // Each reload rewrites the file (a restarted VirtualClock moves time back), so start from the same save.
      writeFileSync(statePath, saved);
      const s = await reopen(new VirtualClock(now)).getSecondaryStatus('t1', '2');
      return { lag: s.bytesTotal - s.bytesDownloaded, heatmapAgeMs: s.heatmapMtime === null ? null : now - s.heatmapMtime };
    };
    // Saved at start + 2 s with 200 bytes down; a clock restarting at its start credits nothing.
    expect(await lagAfterReload(start)).toEqual({ lag: 800, heatmapAgeMs: 2000 });
    // A clock that moved on (the system clock after a restart) credits the download meanwhile.
    expect(await lagAfterReload(start + 5000)).toEqual({ lag: 500, heatmapAgeMs: 5000 });
    expect((await reopen().getSecondaryStatus('t2', '3')).heatmapMtime).toBeNull();
  });

  it('without statePath nothing is written; the plugin resolves a relative statePath against configDir', async () => {
    const plain = setup();
    await plain.after(50, plain.cluster.cordonNode('2'));
    expect(existsSync(statePath)).toBe(false);
    const options = fakePlugin.optionsSchema.parse({ topology: { nodes: [{ id: '1' }] }, statePath: 'state/cluster.json' });
    const backend = await fakePlugin.create(options, { clock: new VirtualClock(), configDir: dir, log: { info: () => {}, warn: () => {} } });
    expect(JSON.parse(readFileSync(join(dir, 'state', 'cluster.json'), 'utf8')).nodes).toHaveLength(1);
    await backend.close();
  });
});

function readValid() {
  createSimulatedCluster({ clock: new VirtualClock(), topology: smallTopology(), statePath: `${statePath}.valid` });
  return JSON.parse(readFileSync(`${statePath}.valid`, 'utf8'));
}
