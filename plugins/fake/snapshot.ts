import type { LatencySettings } from '../../src/cluster/backend.ts';
import type { BackendSnapshot } from '../../src/cluster/rehearsal.ts';
import { moveKey, type Runtime } from './runtime.ts';
import type { TopologySpec } from './topology.ts';

/** What the fake's snapshot holds (BackendSnapshot.data): its cluster as an inline topology, and its timings. */
export interface FakeSnapshotData {
  /** Valid as the `topology` option: rehearsal/loaders/fake.ts builds the rehearsal's cluster from it. */
  topology: TopologySpec;
  latenciesMs: LatencySettings;
  restartDelayMs: number;
  heartbeatIntervalMs: number;
}

/**
 * Issue 33: the simulated cluster as it is now, as an inline topology. A VM in the middle of
 * a move is taken as it was before it (the move's outcome is not known yet); a secondary keeps
 * the lag it has now. Reads only.
 */
export function snapshotOf(rt: Runtime, timings: { restartDelayMs: number; heartbeatIntervalMs: number }): BackendSnapshot {
  const { state } = rt;
  const lag = new Map(rt.lag.save().map((s) => [`${s.shardId}\n${s.nodeId}`, s]));
  const topology: TopologySpec = {
    nodes: [...state.nodes.values()].map((n) => ({
      id: n.id,
      name: n.name,
      zone: n.zone,
      roles: [...n.roles],
      availability: n.availability,
      cordoned: n.cordoned,
      labels: { ...n.labels },
    })),
    vms: [...state.vms.values()].map((current) => {
      const vm = { ...current, ...rt.moves.get(moveKey('vm', current.id))?.beforeMove };
      return {
        namespace: vm.namespace,
        name: vm.name,
        nodeId: vm.nodeId,
        runStrategy: vm.runStrategy,
        status: vm.status,
        maintenanceStrategyLabel: vm.maintenanceStrategyLabel,
        labels: { ...vm.labels },
        volumes: vm.volumes.map((v) => ({ name: v.name, replicas: v.replicas.map((r) => ({ nodeId: r.nodeId, healthy: r.healthy })) })),
        liveMigratable: vm.liveMigratable,
        liveMigratableReason: vm.liveMigratableReason,
        nodeSelector: { ...vm.nodeSelector },
        requiredNodeAffinity: vm.requiredNodeAffinity.map((t) => ({ matchExpressions: t.matchExpressions.map((e) => ({ ...e, values: [...e.values] })) })),
        tracking: vm.tracking && { ...vm.tracking },
      };
    }),
    shards: [...state.shards.values()].map((s) => ({
      tenantId: s.tenantId,
      shardNumber: s.shardNumber,
      shardCount: s.shardCount,
      attachedNodeId: s.attachedNodeId,
      preferredZone: s.preferredZone,
      policy: s.policy,
      sizeBytes: state.shardSizes.get(s.id) ?? 0,
      secondaries: s.secondaryNodeIds.map((nodeId) => {
        const download = lag.get(`${s.id}\n${nodeId}`);
        return {
          nodeId,
          lagBytes: download ? Math.max(0, download.bytesTotal - download.bytesDownloaded) : 0,
          ...(download && { downloadBytesPerSecond: download.bytesPerSecond }),
          heatmapKnown: download ? download.heatmapAgeMs !== null : true,
        };
      }),
    })),
  };
  const data: FakeSnapshotData = { topology, latenciesMs: { ...rt.latencies }, ...timings };
  return { plugin: 'fake', takenAt: rt.clock.now(), data };
}
