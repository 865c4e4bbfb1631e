import { resolve } from 'node:path';
import { systemClock, type Clock } from '../../src/cluster/clock.ts';
import { demoTopology } from './demo-topology.ts';
import { generateTopology } from './generate-topology.ts';
import { DEFAULT_LATENCIES_MS, fakeOptionsSchema, type FakeOptions, type FakeOptionsInput } from './options.ts';
import { SimulatedCluster } from './simulated-cluster.ts';
import { emptyTopology, topologySchema, type Topology } from './topology.ts';

export interface CreateSimulatedClusterOptions extends FakeOptionsInput {
  /** Defaults to the system clock; tests pass a VirtualClock. */
  clock?: Clock;
  onListenerError?: (error: unknown) => void;
}

function resolveTopology(topology: FakeOptions['topology']): Topology {
  if (topology === 'demo') return topologySchema.parse(demoTopology());
  if (topology === 'empty') return topologySchema.parse(emptyTopology());
  if ('generate' in topology) return topologySchema.parse(generateTopology(topology.generate));
  return topology;
}

/**
 * Builds from options already validated by `fakeOptionsSchema` (the plugin path). A
 * relative `statePath` is resolved against `baseDir`.
 */
export function clusterFromOptions(options: FakeOptions, env: { clock: Clock; baseDir: string; onListenerError?: (error: unknown) => void }): SimulatedCluster {
  const { clock, onListenerError } = env;
  const slow = (ms: number) => Math.round(ms * options.slowdown);
  const latencies = { ...DEFAULT_LATENCIES_MS, ...options.latenciesMs };
  return new SimulatedCluster({
    topology: resolveTopology(options.topology),
    clock,
    latencies: Object.fromEntries(Object.entries(latencies).map(([k, v]) => [k, slow(v)])) as typeof latencies,
    restartDelayMs: slow(options.restartDelayMs),
    heartbeatIntervalMs: options.heartbeatIntervalMs,
    secondaryDownloadBytesPerSecond: options.secondaryDownloadBytesPerSecond,
    seed: options.seed,
    latencySpike: options.latencySpike,
    workloadLatencies: options.workloadLatenciesMs,
    onListenerError,
    ...(options.statePath !== undefined && { statePath: resolve(env.baseDir, options.statePath) }),
  });
}

/**
 * A simulated cluster straight from code, without the plugin registry: the options are the
 * plugin's (validated the same way, so mistakes throw a ZodError naming the field) plus a clock.
 * A relative `statePath` is resolved against the working directory.
 */
export function createSimulatedCluster(options: CreateSimulatedClusterOptions = {}): SimulatedCluster {
  const { clock = systemClock, onListenerError, ...pluginOptions } = options;
  return clusterFromOptions(fakeOptionsSchema.parse(pluginOptions), { clock, baseDir: process.cwd(), onListenerError });
}
