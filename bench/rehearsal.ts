/**
 * Issue 33 point 4: how well a rehearsal predicts the rollout that follows it, and what a sample
 * costs (bench/rehearsal-harness.ts has the method). Case "fake-16": 16 nodes in 2 zones with 4
 * VMs each on the fake simulated cluster, on a virtual clock. Every VM has its own typical
 * migration time and every node its own restart time; each run draws around them (log-normal,
 * seeded), so no two runs are alike.
 *
 * 1. History: K real rollouts (MAINTENANCE, one node at a time) on one database; the history is
 *    what readHistory reads from its steps and events, nothing else.
 * 2. A blocker planted after them: a VM that cannot be live-migrated on node 16 (the last).
 * 3. The rehearsal: a snapshot of that cluster, N seeded samples through runSamples, aggregated.
 * 4. Ten real rollouts of the same snapshot with other seeds (same latency distribution), driven
 *    by the same operator the samples play (restart each handed-over node, resume a pause once
 *    scoped to its node, give up on a second pause there), measured: duration and pauses.
 * 5. Goals: actual inside p10–p90 in ≥ 7 of 10; p50 within ±10 % of the actual median; every
 *    pause in ≥ half the real runs predicted with p ≥ 0.5, every pause predicted with p ≥ 0.5
 *    seen in a real run. Drift (real runs 20 % slower than the history): error reported, no goal.
 *    Cost: CPU of one sample over the CPU of one real run of the same moves, goal ≤ 2×.
 */
import { createSimulatedCluster, type FakeSnapshotData, type TopologySpec } from '../plugins/fake/index.ts';
import type { BackendSnapshot } from '../src/cluster/rehearsal.ts';
import { VirtualClock } from '../src/cluster/virtual-clock.ts';
import { DEFAULT_CONFIG } from '../src/config/defaults.ts';
import { createPrng } from '../src/domain/prng.ts';
import type { RolloutInput } from '../src/operations/rollouts/engine.ts';
import type { Benchmark, BenchReport } from './benchmark.ts';
import { hyperconvergedCase } from './rehearsal-hyperconverged.ts';
import { k8sCase } from './rehearsal-k8s.ts';
import { pageserverCase } from './rehearsal-pageserver.ts';
import {
  ACCURACY_HEADER,
  type AccuracyCase,
  type CaseResult,
  DRIFT,
  mark,
  measureCase,
  MIGRATE_MS,
  MIGRATE_SIGMA,
  min,
  type Nature,
  natureKey,
  REAL_RUNS,
  RESTART_MS,
  RESTART_SIGMA,
} from './rehearsal-harness.ts';

const NODES = 16;
const VMS_PER_NODE = 4;
/** Earlier real runs the history is read from: the rehearsal is measured with the first 5 of them and with all 10. */
const HISTORY_SIZES = [5, 10] as const;
const SAMPLES = 20;
const BLOCKER = { node: String(NODES), vm: 'prod/pinned' };
const INPUT: RolloutInput = { nodes: Array.from({ length: NODES }, (_, i) => String(i + 1)), action: 'MAINTENANCE', maxUnavailable: 1 };

function topology(): TopologySpec {
  const nodes = Array.from({ length: NODES }, (_, i) => ({ id: String(i + 1), zone: i < NODES / 2 ? 'zone-a' : 'zone-b', roles: ['worker'] }));
  const vms = nodes.flatMap((n) =>
    Array.from({ length: VMS_PER_NODE }, (_, j) => ({ namespace: 'prod', name: `vm-${n.id}-${j}`, nodeId: n.id, maintenanceStrategyLabel: 'Migrate' })),
  );
  return { nodes, vms, shards: [] };
}

/** The cluster's nature: every VM's and node's typical duration, fixed across runs (seed 1). */
function nature(): Nature {
  const random = createPrng(1);
  const between = ([lo, hi]: readonly [number, number]) => lo + random() * (hi - lo);
  const typicalMs = new Map<string, number>();
  for (const v of topology().vms ?? []) typicalMs.set(natureKey('VM_MIGRATE', `${v.namespace}/${v.name}`), between(MIGRATE_MS));
  typicalMs.set(natureKey('VM_MIGRATE', BLOCKER.vm), between(MIGRATE_MS));
  for (let i = 1; i <= NODES; i++) typicalMs.set(natureKey('NODE_RESTART', String(i)), between(RESTART_MS));
  return { typicalMs, sigma: { VM_MIGRATE: MIGRATE_SIGMA, NODE_RESTART: RESTART_SIGMA } };
}

/** The snapshot before the history runs: the fake's own, taken from a simulated cluster of the topology. */
async function initialSnapshots(): Promise<BackendSnapshot[]> {
  const cluster = createSimulatedCluster({
    topology: topology(),
    clock: new VirtualClock(Date.UTC(2026, 0, 1)),
    latenciesMs: { migrate: 60_000, stop: 10_000, start: 10_000, cordon: 100, cutOver: 1_000 },
    restartDelayMs: 1_000,
    heartbeatIntervalMs: 1_000,
  });
  try {
    return await cluster.snapshot();
  } finally {
    await cluster.close();
  }
}

/** The blocker, planted after the history: a VM on the last node that cannot be live-migrated. */
function plantBlocker(snapshots: BackendSnapshot[]): BackendSnapshot[] {
  return snapshots.map((s) => {
    const data = s.data as FakeSnapshotData;
    const vm = {
      namespace: 'prod',
      name: 'pinned',
      nodeId: BLOCKER.node,
      maintenanceStrategyLabel: 'Migrate',
      liveMigratable: false,
      liveMigratableReason: 'HostDeviceNotLiveMigratable',
    };
    return { ...s, data: { ...data, topology: { ...data.topology, vms: [...(data.topology.vms ?? []), vm] } } as never };
  });
}

async function fakeCase(): Promise<AccuracyCase> {
  return {
    name: 'fake-16',
    describe:
      `Case fake-16: ${NODES} nodes in 2 zones, ${VMS_PER_NODE} VMs each (live migration), rollout MAINTENANCE with maxUnavailable 1 over every node. ` +
      `Each VM has its own typical migration time (${min(MIGRATE_MS[0])}–${min(MIGRATE_MS[1])}) and each node its own restart (${min(RESTART_MS[0])}–${min(RESTART_MS[1])}); ` +
      `every run draws log-normally around them (σ ${MIGRATE_SIGMA} and ${RESTART_SIGMA}, seeded). Planted after the history: ${BLOCKER.vm} on node ${BLOCKER.node} (the last), not live-migratable.`,
    request: {
      config: { plugins: [{ name: 'fake', options: {} }], operations: DEFAULT_CONFIG.operations },
      snapshots: await initialSnapshots(),
      history: [],
      input: INPUT,
      samples: SAMPLES,
      seed: 7,
    },
    nature: nature(),
    historySizes: HISTORY_SIZES,
    plant: plantBlocker,
    realRuns: REAL_RUNS,
    drift: DRIFT,
    samples: SAMPLES,
  };
}

/** The cost paragraph of a case: one sample's CPU against one real run's, and the samples' wall time. */
function costLine(name: string, r: CaseResult, samples: number): string {
  return `${name} (one real run ${r.realCpuMs.toFixed(0)} ms CPU): ${r.cost
    .map(
      (c) =>
        `history of ${c.size} runs: one sample ${c.sampleCpuMs.toFixed(0)} ms CPU = ${c.ratio.toFixed(2)}× (goal ≤ 2×: ${mark(c.ratio <= 2)}); ${samples} samples ${(c.wallMs / 1000).toFixed(1)} s wall`,
    )
    .join('; ')}`;
}

/**
 * The cases, each a module of its own (bench/rehearsal-<case>.ts). `LK_REHEARSAL_CASES=a,b`
 * measures only those (while one case is worked on); the recorded section has them all.
 */
const CASES: Record<string, () => Promise<AccuracyCase>> = {
  'fake-16': fakeCase,
  'k8s-16': k8sCase,
  'pageserver-16': pageserverCase,
  'hyperconverged-8': hyperconvergedCase,
};

export const rehearsal: Benchmark = {
  name: 'rehearsal',
  title: `Rehearsal accuracy and cost (issue 33): ${Object.keys(CASES).join(', ')}; history from earlier real runs, ${SAMPLES} samples against ${REAL_RUNS} real runs`,
  async run(_options, progress): Promise<BenchReport> {
    const only = process.env.LK_REHEARSAL_CASES?.split(',').filter(Boolean);
    const results: { c: AccuracyCase; r: CaseResult }[] = [];
    for (const [name, make] of Object.entries(CASES)) {
      if (only && !only.includes(name)) continue;
      const c = await make();
      results.push({ c, r: await measureCase(c, progress) });
    }
    const markdown = [
      'Method (bench/rehearsal-harness.ts): for each case, earlier real runs on one database, each starting from the cluster as the previous one left it, give the history (read back with readHistory, nothing else); ' +
        "the blockers are planted after them; the rehearsal is measured with the first k runs' records for each k given; then real runs of the planted cluster with other seeds (and a drift case, 20 % slower, no goal). " +
        "A real run is the rollout by the real engines against the strict simulators stood up from the snapshot, with that run's true durations (log-normal around each workload's typical value), driven by the samples' own operator: " +
        'restarts each node handed over, resumes a pause once scoped to its node, gives up on a second pause there; a failed node where the rollout does not pause counts as a pause.',
      '',
      ...results.map(({ c }) => c.describe),
      '',
      ...ACCURACY_HEADER,
      ...results.flatMap(({ r }) => r.rows),
      '',
      ...results.flatMap(({ r }) => r.notes),
      '',
      `Cost (CPU of the process, process.cpuUsage, around all samples / samples, against the mean CPU of the real runs of the same moves on the same simulators): ${results.map(({ c, r }) => costLine(c.name, r, c.samples)).join('; ')}.`,
    ].join('\n');
    return {
      markdown,
      summary: `rehearsal: ${results.map(({ r }) => r.summary).join('; ')}; sample CPU ${results.map(({ c, r }) => `${c.name} ${r.cost.map((x) => x.ratio.toFixed(2)).join(' / ')}×`).join(', ')} a real run`,
    };
  },
};
