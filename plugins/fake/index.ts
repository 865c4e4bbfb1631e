import { definePlugin } from '../../src/cluster/plugin.ts';
import { clusterFromOptions } from './create.ts';
import { fakeOptionsSchema, type FakeOptions } from './options.ts';

/** The default backend: an in-memory simulated cluster (docs/architecture.md §1). */
const fakePlugin = definePlugin<FakeOptions>({
  name: 'fake',
  optionsSchema: fakeOptionsSchema,
  async create(options, context) {
    return clusterFromOptions(options, {
      clock: context.clock,
      baseDir: context.configDir,
      onListenerError: (error) => context.log.warn({ err: error }, 'a cluster event listener threw'),
    });
  },
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
export { demoTopology } from './demo-topology.ts';
export { generateTopology, type GenerateTopologyOptions } from './generate-topology.ts';
