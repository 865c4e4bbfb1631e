import { BackendError } from '../../src/cluster/errors.ts';
import type { ClusterShard, SecondaryStatus } from '../../src/cluster/types.ts';
import { latencyOf, moveKey, shardChanged, type Runtime } from './runtime.ts';

const shardSubject = (id: string) => ({ kind: 'shard' as const, id });

function requireSecondary(shard: ClusterShard, nodeId: string): void {
  if (!shard.secondaryNodeIds.includes(nodeId)) {
    throw new BackendError('NotFound', `shard ${shard.id} has no secondary on node ${nodeId}`, shardSubject(shard.id));
  }
}

/** Asking an OFFLINE pageserver fails, as a real request would: the caller sees "unknown lag". */
export function getSecondaryStatus(rt: Runtime, shardId: string, nodeId: string): SecondaryStatus {
  const shard = rt.state.shard(shardId);
  rt.state.requireOnline(nodeId);
  requireSecondary(shard, nodeId);
  return rt.lag.status(shardId, nodeId) ?? { bytesTotal: 0, bytesDownloaded: 0, heatmapMtime: null };
}

export async function setSecondaryLag(rt: Runtime, shardId: string, nodeId: string, lagBytes: number, bytesPerSecond?: number): Promise<void> {
  const shard = rt.state.shard(shardId);
  rt.state.node(nodeId);
  requireSecondary(shard, nodeId);
  if (!(lagBytes >= 0) || (bytesPerSecond !== undefined && !(bytesPerSecond >= 0))) {
    throw new BackendError('Rejected', 'lag and download rate must be non-negative', shardSubject(shardId));
  }
  rt.lag.setLag(shardId, nodeId, lagBytes, bytesPerSecond);
  rt.changed();
}

/** Unknown = the secondary has no heatmap, so its lag cannot be told (storage:D4). */
export async function setSecondaryHeatmapKnown(rt: Runtime, shardId: string, nodeId: string, known: boolean): Promise<void> {
  const shard = rt.state.shard(shardId);
  rt.state.node(nodeId);
  requireSecondary(shard, nodeId);
  rt.lag.setHeatmapKnown(shardId, nodeId, known);
  rt.changed();
}

/**
 * What a cut-over does once its latency has run (also called by a reload for one in flight
 * at a crash, see moves-after-crash.ts). Returns false when the destination went offline:
 * it must be reachable to attach; the old location needs nothing, it keeps its data.
 */
export function finishCutOver(rt: Runtime, shard: ClusterShard, fromNodeId: string, toNodeId: string): boolean {
  if (rt.state.nodes.get(toNodeId)?.availability === 'OFFLINE') return false;
  shard.attachedNodeId = toNodeId;
  shard.secondaryNodeIds = [...shard.secondaryNodeIds.filter((n) => n !== toNodeId), fromNodeId];
  rt.lag.delete(shard.id, toNodeId);
  rt.lag.setWarm(shard.id, fromNodeId, rt.state.shardSizes.get(shard.id) ?? 0);
  shardChanged(rt, shard);
  return true;
}

/** Throws at once when the cut-over is refused; otherwise the move's promise (undefined when there is nothing to do). */
export function cutOverShard(rt: Runtime, id: string, options: { fromNodeId: string; toNodeId: string }): Promise<void> | void {
  const shard = rt.state.shard(id);
  const { fromNodeId, toNodeId } = options;
  rt.state.node(fromNodeId);
  rt.state.node(toNodeId);
  const key = moveKey('shard', id);
  const inFlight = rt.moves.get(key);
  if (inFlight) {
    if (inFlight.targetNodeId === toNodeId) return inFlight.promise;
    throw new BackendError('Conflict', `shard ${id} is already being cut over to node ${inFlight.targetNodeId}`, shardSubject(id));
  }
  if (shard.attachedNodeId === toNodeId) return;
  if (shard.attachedNodeId !== fromNodeId) throw new BackendError('Conflict', `shard ${id} is not attached to node ${fromNodeId}`, shardSubject(id));
  if (!shard.secondaryNodeIds.includes(toNodeId)) throw new BackendError('Conflict', `shard ${id} has no secondary on node ${toNodeId}`, shardSubject(id));
  rt.state.requireOnline(fromNodeId);
  rt.state.requireOnline(toNodeId);
  rt.faults.maybeFail('cutOver', shardSubject(id));
  return rt.moves.start(key, {
    kind: 'cutOver',
    latencyMs: latencyOf(rt, 'cutOver', id),
    targetNodeId: toNodeId,
    stuckId: id,
    result: { kind: 'cutOver', shardId: id, fromNodeId, toNodeId },
    complete() {
      if (!finishCutOver(rt, shard, fromNodeId, toNodeId)) {
        throw new BackendError('Unavailable', `node ${toNodeId} went offline during the cut-over of shard ${id}`, { kind: 'node', id: toNodeId });
      }
    },
  });
}
