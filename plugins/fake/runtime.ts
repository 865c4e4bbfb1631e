import type { LatencySettings } from '../../src/cluster/backend.ts';
import type { Clock } from '../../src/cluster/clock.ts';
import type { ClusterNode, ClusterShard, ClusterVm } from '../../src/cluster/types.ts';
import type { ClusterState } from './cluster-state.ts';
import type { EventHub } from './event-hub.ts';
import type { FaultInjector } from './faults.ts';
import type { MoveTracker } from './moves.ts';
import type { SecondaryLagTable } from './secondary-lag.ts';

/** What the action and simulation modules share: one simulated cluster's moving parts. */
export interface Runtime {
  readonly clock: Clock;
  readonly state: ClusterState;
  readonly hub: EventHub;
  readonly faults: FaultInjector;
  readonly moves: MoveTracker;
  readonly lag: SecondaryLagTable;
  latencies: LatencySettings;
  /** The `workloadLatenciesMs` option: latencies of one VM or shard, by its id, over `latencies`. */
  readonly workloadLatencies: Readonly<Record<string, Partial<LatencySettings>>>;
  readonly restartDelayMs: number;
  readonly heartbeatIntervalMs: number;
  /**
   * Marks the state as changed for the state file (`statePath`); a no-op without one.
   * Everything that emits an event is covered by the hub; call this for changes that emit
   * nothing (secondary lag, latencies, faults, restart bookkeeping).
   */
  readonly changed: () => void;
}

export const nodeChanged = (rt: Runtime, node: ClusterNode) => rt.hub.emit({ type: 'nodeChanged', node });
export const vmChanged = (rt: Runtime, vm: ClusterVm) => rt.hub.emit({ type: 'vmChanged', vm });
export const shardChanged = (rt: Runtime, shard: ClusterShard) => rt.hub.emit({ type: 'shardChanged', shard });

/** How long `kind` takes for the VM or shard `id` (issue 33: a rehearsal draws each workload's own). */
export const latencyOf = (rt: Runtime, kind: 'migrate' | 'stop' | 'start' | 'cutOver', id: string): number =>
  rt.workloadLatencies[id]?.[kind] ?? rt.latencies[kind];

/** Move keys: one namespace per subject kind, as node, VM and shard ids may collide. */
export const moveKey = (kind: 'node' | 'vm' | 'shard', id: string) => `${kind}:${id}`;

/** VMs on a node plus those heading there, so concurrent migrations spread out. */
export function vmLoad(rt: Runtime, nodeId: string): number {
  let load = 0;
  for (const vm of rt.state.vms.values()) if (vm.nodeId === nodeId) load++;
  for (const [key, move] of rt.moves.entries()) {
    if (key.startsWith('vm:') && move.kind === 'migrate' && move.targetNodeId === nodeId) load++;
  }
  return load;
}
