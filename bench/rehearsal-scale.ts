/**
 * Issue 33 point 4, cost at scale: the wall time of a rehearsal's 20 samples at 100 nodes,
 * 10 000 VMs and 100 000 shards. The cluster is the fake simulated cluster (plugins/fake,
 * `generateTopology`): 100 nodes in 2 zones, 100 VMs each (live migration), 100 000 unsharded
 * tenants attached round-robin, each with one secondary on the next node. No history: every
 * duration is the fake's own default (source DEFAULT). The rollout is a MAINTENANCE of every
 * node, `LK_REHEARSAL_SCALE_UNAVAILABLE` at a time (default 10: a patch night of 100 hosts is
 * not run one host at a time), through `rehearse` of the accuracy harness, so the samples run
 * as the gateway's worker runs them (one after the other, in this process).
 *
 * Reported: the wall time of all samples, the CPU per sample, the process's peak RSS, and the
 * predicted p10/p50/p90. `LK_REHEARSAL_SCALE_SAMPLES` (default 20) takes fewer samples, e.g.
 * while profiling one.
 */
import { createSimulatedCluster } from '../plugins/fake/index.ts';
import type { BackendSnapshot } from '../src/cluster/rehearsal.ts';
import { VirtualClock } from '../src/cluster/virtual-clock.ts';
import { DEFAULT_CONFIG } from '../src/config/defaults.ts';
import type { RolloutInput } from '../src/operations/rollouts/engine.ts';
import type { Benchmark, BenchReport } from './benchmark.ts';
import { min, rehearse } from './rehearsal-harness.ts';

const NODES = 100;
const VMS_PER_NODE = 100;
const SHARDS = 100_000;

function intFromEnv(name: string, fallback: number): number {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${name} must be a positive integer`);
  return value;
}

/** The fake's snapshot of the generated topology, as `rehearseRollout` would read it. */
async function scaleSnapshots(nodes = NODES, vmsPerNode = VMS_PER_NODE, shards = SHARDS): Promise<BackendSnapshot[]> {
  const cluster = createSimulatedCluster({
    topology: { generate: { nodes, zones: 2, vmsPerNode, tenants: shards, shardsPerTenant: 1, secondariesPerShard: 1, seed: 1 } },
    clock: new VirtualClock(Date.UTC(2026, 0, 1)),
  });
  try {
    // Through JSON, as the snapshot crosses to the worker thread.
    return JSON.parse(JSON.stringify(await cluster.snapshot())) as BackendSnapshot[];
  } finally {
    await cluster.close();
  }
}

const mib = (bytes: number) => `${(bytes / 1024 ** 2).toFixed(0)} MiB`;

export const rehearsalScale: Benchmark = {
  name: 'rehearsal-scale',
  title: `Rehearsal cost at scale (issue 33): samples of a MAINTENANCE rollout over ${NODES} nodes, ${NODES * VMS_PER_NODE} VMs and ${SHARDS} shards on the fake cluster`,
  async run(_options, progress): Promise<BenchReport> {
    const samples = intFromEnv('LK_REHEARSAL_SCALE_SAMPLES', 20);
    const maxUnavailable = intFromEnv('LK_REHEARSAL_SCALE_UNAVAILABLE', 10);
    const input: RolloutInput = { nodes: Array.from({ length: NODES }, (_, i) => String(i + 1)), action: 'MAINTENANCE', maxUnavailable };
    const built = performance.now();
    const taken = await scaleSnapshots();
    const snapshotMs = performance.now() - built;
    const size = Buffer.byteLength(JSON.stringify(taken));
    progress(`  snapshot: ${(snapshotMs / 1000).toFixed(1)} s, ${mib(size)} of JSON`);
    let peakRss = process.memoryUsage().rss;
    const watch = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 200);
    let m: Awaited<ReturnType<typeof rehearse>>;
    try {
      m = await rehearse({
        // As many node operations at once as the rollout takes nodes out, and KubeVirt's cluster-wide migration limit raised to match (2 a node).
        config: {
          plugins: [{ name: 'fake', options: {} }],
          operations: {
            ...DEFAULT_CONFIG.operations,
            maxConcurrentOperations: maxUnavailable,
            maxParallelMigrations: Math.max(DEFAULT_CONFIG.operations.maxParallelMigrations, 2 * maxUnavailable),
          },
        },
        snapshots: taken,
        history: [],
        input,
        samples,
        seed: 7,
      });
    } finally {
      clearInterval(watch);
    }
    peakRss = Math.max(peakRss, process.memoryUsage().rss);
    const r = m.report;
    const q = r.durationMs;
    const line =
      `${samples} samples: ${(m.wallMs / 1000).toFixed(1)} s wall (${(m.wallMs / samples / 1000).toFixed(1)} s a sample), ${(m.sampleCpu / 1e6).toFixed(1)} s CPU a sample, ` +
      `peak RSS ${mib(peakRss)}; predicted ${min(q.p10)} / ${min(q.p50)} / ${min(q.p90)}; outcomes ${JSON.stringify(r.outcomes)}; pauses ${r.pauses.length}; peak nodes out ${r.peakNodesOut}`;
    progress(`  ${line}`);
    const markdown = [
      `The fake simulated cluster (\`generateTopology\`): ${NODES} nodes in 2 zones, ${VMS_PER_NODE} VMs each (${NODES * VMS_PER_NODE}, live migration), ${SHARDS} unsharded tenants attached round-robin, each with a secondary on the next node. ` +
        `No history: every duration is the fake's default (sources ${JSON.stringify(r.durationSources)}). Rollout: MAINTENANCE of all ${NODES} nodes, maxUnavailable ${maxUnavailable} (operations.maxConcurrentOperations ${maxUnavailable}, maxParallelMigrations ${Math.max(DEFAULT_CONFIG.operations.maxParallelMigrations, 2 * maxUnavailable)}; other settings the defaults); ${samples} samples through \`rehearse\` (bench/rehearsal-harness.ts), one after the other in this process, as the gateway's worker runs them.`,
      '',
      `| Samples | Wall time | Wall per sample | CPU per sample | Peak RSS | Predicted p10 / p50 / p90 | Outcomes | Snapshot |`,
      `|---|---|---|---|---|---|---|---|`,
      `| ${samples} | ${(m.wallMs / 1000).toFixed(1)} s | ${(m.wallMs / samples / 1000).toFixed(1)} s | ${(m.sampleCpu / 1e6).toFixed(1)} s | ${mib(peakRss)} | ${min(q.p10)} / ${min(q.p50)} / ${min(q.p90)} | ${JSON.stringify(r.outcomes)} | ${mib(size)} JSON, read in ${(snapshotMs / 1000).toFixed(1)} s |`,
    ].join('\n');
    return { markdown, summary: `rehearsal-scale: ${line}` };
  },
};
