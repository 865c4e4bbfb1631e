import type { ClusterBackend, LatencySettings } from '../../src/cluster/backend.ts';
import type { RehearsedAction } from '../../src/domain/rehearsal/types.ts';
import { compareNatural } from '../../src/domain/compare.ts';
import { fakeOptionsSchema, shardIdOf, topologySchema, type FakeOptionsInput, type FakeSnapshotData } from '../../plugins/fake/index.ts';
import type { RehearsalLoader } from './types.ts';

/** The fake's latency kinds and the actions a rehearsal draws them as. */
const VM_ACTIONS: [keyof LatencySettings, RehearsedAction][] = [
  ['migrate', 'VM_MIGRATE'],
  ['stop', 'VM_STOP'],
  ['start', 'VM_START'],
];

/**
 * The fake plugin's rehearsal (issue 33): the snapshot's topology is the simulated cluster's,
 * on the sample's clock, each VM and shard with the latencies drawn for it from history
 * (`workloadLatenciesMs`), the sample's seed, and nothing kept on disk. The simulated cluster
 * lives in the worker's process: it listens nowhere (no `urls`).
 */
const loadFake: RehearsalLoader = async (snapshot, liveOptions, { clock, durations, seed, defaults = {} }) => {
  const data = snapshot.data as FakeSnapshotData;
  /** The drawn duration; without history and without a default of the request's, the cluster's own latency. */
  const draw = (action: RehearsedAction, kind: keyof LatencySettings, id: string, nodeId: string | null) => {
    const drawn = durations.draw(action, id, nodeId);
    return drawn.source === 'DEFAULT' && defaults[action] === undefined ? data.latenciesMs[kind] : drawn.ms;
  };
  const topology = topologySchema.parse(data.topology);
  // Timeouts and rates of the live entry stay; where the cluster is and how slow the demo is shown do not.
  const live = fakeOptionsSchema.parse(liveOptions ?? {});
  const workloadLatenciesMs: Record<string, Partial<LatencySettings>> = {};
  // Drawn in id order, so that a seed gives each workload the same durations.
  const vms = [...topology.vms].map((vm) => ({ ...vm, id: `${vm.namespace}/${vm.name}` })).sort((a, b) => compareNatural(a.id, b.id));
  for (const vm of vms) {
    workloadLatenciesMs[vm.id] = Object.fromEntries(VM_ACTIONS.map(([kind, action]) => [kind, draw(action, kind, vm.id, vm.nodeId)]));
  }
  const shards = topology.shards.map((s) => ({ id: shardIdOf(s), node: s.attachedNodeId })).sort((a, b) => compareNatural(a.id, b.id));
  for (const shard of shards) workloadLatenciesMs[shard.id] = { cutOver: draw('SHARD_CUT_OVER', 'cutOver', shard.id, shard.node) };

  const options: FakeOptionsInput = {
    topology: data.topology,
    latenciesMs: data.latenciesMs,
    workloadLatenciesMs,
    restartDelayMs: data.restartDelayMs,
    heartbeatIntervalMs: data.heartbeatIntervalMs,
    secondaryDownloadBytesPerSecond: live.secondaryDownloadBytesPerSecond,
    latencySpike: live.latencySpike,
    seed,
  };
  let backend: ClusterBackend | null = null;
  return {
    options,
    urls: [],
    defaults: { NODE_RESTART: data.restartDelayMs },
    attach(created) {
      backend = created;
    },
    async restartNode(nodeId, downMs) {
      const sim = backend?.simulation;
      if (!sim) throw new Error('the fake rehearsal loader restarts nodes through its backend: attach() it first');
      if (!topology.nodes.some((n) => n.id === nodeId)) return;
      // Down now, held down, and back (re-attached, then a heartbeat later ACTIVE) after downMs of the sample's clock.
      await sim.restartNode(nodeId);
      await sim.setNodeOnline(nodeId, false);
      // The sample may have ended (and closed the cluster) before the node was due back: nothing is left to tell.
      clock.setTimer(downMs, () => void sim.setNodeOnline(nodeId, true).catch(() => {}));
    },
    async stop() {
      backend = null;
    },
  };
};

export default loadFake;
