import { createServer, type Server } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { createSimulatedCluster, type TopologySpec } from '../../plugins/fake/index.ts';
import { DEFAULT_CONFIG } from '../../src/config/defaults.ts';
import type { HistoryRecord } from '../../src/domain/rehearsal/types.ts';
import type { RehearsalRequest } from '../../src/rehearsal/request.ts';
import { runRehearsalInWorker } from '../../src/rehearsal/run-in-worker.ts';
import { RehearsalRefusedError, runSamples } from '../../rehearsal/run-samples.ts';
import loadFake from '../../rehearsal/loaders/fake.ts';
import { VirtualClock } from '../support/virtual-clock.ts';

const MIN = 60_000;

/**
 * Five nodes in two zones, two migratable VMs each; on node 3 a VM that cannot be live-migrated
 * (strategy Migrate: the maintenance is refused), on node 5 one that is shut down for maintenance.
 */
function topology(): TopologySpec {
  const nodes = ['1', '2', '3', '4', '5'].map((id) => ({ id, zone: Number(id) <= 2 ? 'zone-a' : 'zone-b', roles: ['worker', 'storage'] }));
  const vms = nodes.flatMap((n) => [0, 1].map((j) => ({ namespace: 'prod', name: `vm-${n.id}-${j}`, nodeId: n.id, maintenanceStrategyLabel: 'Migrate' })));
  vms.push({ namespace: 'prod', name: 'batch', nodeId: '5', maintenanceStrategyLabel: 'Shutdown' } as never);
  vms.push({
    namespace: 'prod',
    name: 'pinned',
    nodeId: '3',
    maintenanceStrategyLabel: 'Migrate',
    liveMigratable: false,
    liveMigratableReason: 'HostDeviceNotLiveMigratable',
  } as never);
  return { nodes, vms, shards: [] };
}

async function request(history: HistoryRecord[], overrides: Partial<RehearsalRequest> = {}): Promise<RehearsalRequest> {
  const cluster = createSimulatedCluster({
    topology: topology(),
    clock: new VirtualClock(),
    latenciesMs: { migrate: 1_000, stop: 500, start: 500, cordon: 10, cutOver: 10 },
  });
  const snapshots = await cluster.snapshot();
  await cluster.close();
  return {
    config: { plugins: [{ name: 'fake', options: {} }], operations: DEFAULT_CONFIG.operations },
    snapshots,
    history,
    input: { nodes: ['1', '2', '3', '4', '5'], action: 'MAINTENANCE', maxUnavailable: 1 },
    samples: 3,
    seed: 7,
    ...overrides,
  };
}

/** Earlier migrations of every VM, `minutes` long give or take 30 %, and node restarts of 2 to 4 minutes. */
function history(minutes: number): HistoryRecord[] {
  const records: HistoryRecord[] = [];
  for (const node of ['1', '2', '3', '4', '5'])
    for (const j of [0, 1])
      for (const f of [0.7, 1, 1.3])
        records.push({ action: 'VM_MIGRATE', workloadId: `prod/vm-${node}-${j}`, nodeId: node, durationMs: Math.round(minutes * f * MIN), at: 0 });
  for (const node of ['1', '2', '3', '4', '5'])
    for (const m of [2, 3, 4]) records.push({ action: 'NODE_RESTART', workloadId: node, nodeId: node, durationMs: m * MIN, at: 0 });
  return records;
}

/** A "real" backend: counts every request it gets. */
async function countingServer(): Promise<{ url: string; requests: () => number; close: () => Promise<void> }> {
  let count = 0;
  const server: Server = createServer((_, res) => {
    count++;
    res.end('{}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, requests: () => count, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

let real: Awaited<ReturnType<typeof countingServer>> | undefined;
afterEach(async () => {
  await real?.close();
  real = undefined;
});

// Whole rollouts, a sample after the other (the worker compiles the TypeScript itself): generous on a loaded machine.
describe('rehearsal samples on the fake backend (issue 33)', { timeout: 120_000 }, () => {
  it('every sample pauses on node 3 for the VM that cannot move, resumes once scoped to it, and gives up when it pauses there again', async () => {
    const samples = await runSamples(await request(history(1)));
    expect(samples).toHaveLength(3);
    for (const s of samples) {
      expect(s.outcome).toBe('GAVE_UP');
      expect(s.pauses.map((p) => [p.reason, p.nodeId, p.workload])).toEqual([
        ['PRECONDITION_FAILED', '3', 'prod/pinned'],
        ['PRECONDITION_FAILED', '3', 'prod/pinned'],
      ]);
      expect(s.pauses[0]!.message).toContain('HostDeviceNotLiveMigratable');
      expect(s.pauses[0]!.key).toBe('PRECONDITION_FAILED:3:prod/pinned');
      // Nodes 1 and 2 done one after the other; node 3 refused at its start, 4 and 5 never started.
      expect(s.nodes.map((n) => [n.nodeId, n.wave, n.startedAtMs !== null, n.safeToRestart, n.leftOnNode])).toEqual([
        ['1', 1, true, true, []],
        ['2', 2, true, true, []],
        ['3', 3, true, false, ['prod/pinned']],
        ['4', 4, false, null, []],
        ['5', 5, false, null, []],
      ]);
      expect(s.nodes[1]!.startedAtMs).toBe(s.nodes[0]!.finishedAtMs);
      expect(s.pauses[0]!.atMs).toBe(s.nodes[1]!.finishedAtMs);
      expect(s.peakNodesOut).toBe(1);
      expect(s.vmsLeftStopped).toEqual([]);
      // Drawn: each VM's migration from its own history (pinned's and batch's from their node's), stops and starts by default, and the two restarts.
      expect(s.durationSources).toEqual({ WORKLOAD: 10 + 2, NODE: 2, CLUSTER: 0, DEFAULT: 24 });
      // In virtual time: 2 nodes, each 2 migrations (at once) of 0.7–1.3 min and a restart of 2–4 min.
      expect(s.durationMs).toBeGreaterThanOrEqual(2 * (0.7 + 2) * MIN);
      expect(s.durationMs).toBeLessThanOrEqual(2 * (2 * 1.3 + 4 + 1) * MIN);
    }
  });

  it('seeded: the same seed gives the same sample; other seeds other durations', async () => {
    const req = await request(history(1), { samples: 2 });
    const [a, b] = await runSamples(req);
    const [again] = await runSamples({ ...req, samples: 1 });
    expect(again).toEqual(a);
    expect(b!.seed).toBe(8);
    expect(b!.durationMs).not.toBe(a!.durationMs);
  });

  it('history shapes the prediction: 10-minute migrations make a longer rollout than 1-minute ones', async () => {
    const short = await runSamples(await request(history(1), { samples: 2 }));
    const long = await runSamples(await request(history(10), { samples: 2 }));
    // Nodes 1 and 2, one after the other, each with two migrations at once of 9 more minutes (0.7–1.3 × 9); the restarts (2–4 min) may differ by 2 min each.
    for (const [s, l] of short.map((s, i) => [s, long[i]!] as const)) expect(l.durationMs - s.durationMs).toBeGreaterThan(2 * 0.7 * 9 * MIN - 2 * 2 * MIN);
  });

  it('restart CONFIRM: each node is restarted and confirmed once back; without the pinned VM the rollout succeeds, nothing paused', async () => {
    const [s] = await runSamples(await request(history(1), { samples: 1, input: { nodes: ['1', '2', '5'], action: 'MAINTENANCE', restart: 'CONFIRM' } }));
    expect(s!.outcome).toBe('SUCCEEDED');
    expect(s!.pauses).toEqual([]);
    // Strategy Shutdown: stopped for the maintenance and not started again.
    expect(s!.vmsLeftStopped).toEqual(['prod/batch']);
    expect(s!.nodes.map((n) => [n.nodeId, n.finishedAtMs !== null, n.safeToRestart])).toEqual([
      ['1', true, true],
      ['2', true, true],
      ['5', true, true],
    ]);
    // Three restarts of 2–4 min, one node at a time, each confirmed when it is back.
    expect(s!.durationMs).toBeGreaterThanOrEqual(3 * (0.7 + 2) * MIN);
    expect(s!.durationMs).toBe(s!.nodes[2]!.finishedAtMs);
  });

  it('without history, durations are the backend’s defaults and said to be', async () => {
    const [s] = await runSamples(await request([], { samples: 1 }));
    expect(s!.durationSources).toMatchObject({ WORKLOAD: 0, NODE: 0, CLUSTER: 0 });
    expect(s!.durationSources.DEFAULT).toBeGreaterThan(0);
    expect(s!.pauses[0]).toMatchObject({ nodeId: '3', workload: 'prod/pinned' });
  });

  it('never a real backend: a loader that leaves the live address in the options is refused, naming the option, before any request', async () => {
    real = await countingServer();
    const req = await request(history(1), { samples: 1 });
    const leaky = async () => {
      const loader: typeof loadFake = async (snapshot, live, context) => ({
        ...(await loadFake(snapshot, live, context)),
        options: { ...((await loadFake(snapshot, live, context)).options as object), statePath: `${real!.url}/state` },
      });
      return loader;
    };
    const error = await runSamples(req, undefined, { loader: leaky }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RehearsalRefusedError);
    expect((error as RehearsalRefusedError).option).toBe('plugins[0].options.statePath');
    expect((error as Error).message).toContain(real.url.replace('http://', ''));
    expect(real.requests()).toBe(0);
  });

  it('never a real backend: a whole rehearsal beside a listening "real" server sends it nothing', async () => {
    real = await countingServer();
    const samples = await runSamples(await request(history(1), { samples: 1 }));
    expect(samples[0]!.pauses).toHaveLength(2);
    expect(real.requests()).toBe(0);
  });

  it('runs in a worker thread: the gateway’s event loop keeps answering while the samples run', async () => {
    real = await countingServer();
    const progress: number[] = [];
    let answered = 0;
    const samples = await runRehearsalInWorker(await request(history(1), { samples: 2 }), {
      onProgress: (done) => {
        progress.push(done);
        // The main thread serves a request while the worker still has a sample to run.
        if (done === 1) void fetch(real!.url).then(() => answered++);
      },
    });
    expect(progress).toEqual([1, 2]);
    expect(samples.map((s) => s.seed)).toEqual([7, 8]);
    expect(samples[0]!.pauses[0]).toMatchObject({ nodeId: '3', workload: 'prod/pinned' });
    await expect.poll(() => answered).toBe(1);
  });
});
