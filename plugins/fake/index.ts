import { join } from 'node:path';
import { definePlugin, type PluginContext } from '../../src/cluster/plugin.ts';
import { clusterFromOptions } from './create.ts';
import { fakeOptionsSchema, type FakeOptions } from './options.ts';

/** The file the demo cluster keeps its state in. */
const DEMO_STATE_FILE = 'demo-cluster.json';

/**
 * The demo cluster (topology `demo`, no `statePath` of its own) outlives the gateway: its
 * state is kept next to the gateway's database, so a restarted gateway resumes against the
 * same cluster. An explicit `statePath` wins; other topologies stay in memory.
 */
function demoStateFile(options: FakeOptions, context: PluginContext): string | null {
  if (options.topology !== 'demo' || options.statePath !== undefined || !context.dataDir) return null;
  return join(context.dataDir, DEMO_STATE_FILE);
}

/** The default backend: an in-memory simulated cluster (docs/architecture.md §1). */
const fakePlugin = definePlugin<FakeOptions>({
  name: 'fake',
  optionsSchema: fakeOptionsSchema,
  // The simulated cluster lives in this process: another replica would simulate another one (ha:B3).
  inProcess: true,
  async create(options, context) {
    const demoState = demoStateFile(options, context);
    if (demoState) context.log.info({ statePath: demoState }, `demo cluster state: ${demoState} (lockkeeper serve --reset-demo starts over)`);
    return clusterFromOptions(demoState ? { ...options, statePath: demoState } : options, {
      clock: context.clock,
      baseDir: context.configDir,
      onListenerError: (error) => context.log.warn({ err: error }, 'a cluster event listener threw'),
    });
  },
  demoStateFile,
});

export default fakePlugin;

export { createSimulatedCluster, type CreateSimulatedClusterOptions } from './create.ts';
export { SimulatedCluster, type SimulatedClusterConfig } from './simulated-cluster.ts';
export { DEFAULT_LATENCIES_MS, fakeOptionsSchema, type FakeOptions, type FakeOptionsInput } from './options.ts';
export {
  emptyTopology,
  shardIdOf,
  topologySchema,
  type NodeSpec,
  type SecondarySpec,
  type ShardSpec,
  type Topology,
  type TopologySpec,
  type VmSpec,
} from './topology.ts';
export { StateFileError } from './state-file.ts';
export type { FakeSnapshotData } from './snapshot.ts';
export { demoTopology } from './demo-topology.ts';
export { generateTopology, type GenerateTopologyOptions } from './generate-topology.ts';
