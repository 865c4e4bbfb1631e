import { BackendError } from '../../src/cluster/errors.ts';
import type { FailoverControl } from '../../src/cluster/shard-control.ts';
import type { NodeAvailability } from '../../src/cluster/types.ts';
import type { NodeLifecycle } from './node-lifecycle.ts';
import { moveKey, nodeChanged, shardChanged, type Runtime } from './runtime.ts';

/**
 * What the gateway's FAILOVER needs of the simulated cluster (neon:H5, neon:E6): an
 * outage (`setNodeOnline(false)`) or an operator's OFFLINE declares the node lost at once
 * (`nodeLost`; the simulation has no heartbeat grace), while a `restartNode` — back within
 * `restartDelayMs`, like a pageserver restarting within Neon's offline interval — does not;
 * a failover attaches a shard to another node after the cut-over latency (`latenciesMs.cutOver`:
 * a new generation and an attach, as a cut-over's last step), the lost node staying a secondary.
 * `attaches` counts the attaches in flight and their high-water mark: the gateway's
 * concurrency limit measured where the requests arrive.
 */
export function createFailoverControl(rt: Runtime, lifecycle: NodeLifecycle): FailoverControl & { readonly attaches: AttachCounter } {
  const heartbeats = new Map<string, () => void>();
  const attaches: AttachCounter = { inFlight: 0, highWater: 0 };
  const check = (id: string, fromNodeId: string, toNodeId: string) => {
    const shard = rt.state.shard(id);
    rt.state.node(toNodeId);
    if (shard.attachedNodeId === toNodeId) return null;
    if (shard.attachedNodeId !== fromNodeId) {
      throw new BackendError('Conflict', `shard ${id} is attached to node ${shard.attachedNodeId}, not ${fromNodeId}`, { kind: 'shard', id });
    }
    rt.state.requireOnline(toNodeId);
    return shard;
  };
  return {
    attaches,
    async failOverShard(id, { fromNodeId, toNodeId }) {
      if (!check(id, fromNodeId, toNodeId)) return;
      attaches.inFlight++;
      attaches.highWater = Math.max(attaches.highWater, attaches.inFlight);
      try {
        if (rt.latencies.cutOver > 0) await new Promise<void>((resolve) => rt.clock.setTimer(rt.latencies.cutOver, resolve));
      } finally {
        attaches.inFlight--;
      }
      // The world may have changed during the attach (another failover, the target lost).
      const shard = check(id, fromNodeId, toNodeId);
      if (!shard) return;
      // A cut-over in flight from the lost node cannot finish now.
      rt.moves
        .get(moveKey('shard', id))
        ?.abort(new BackendError('Unavailable', `node ${fromNodeId} was lost; shard ${id} failed over`, { kind: 'node', id: fromNodeId }));
      shard.attachedNodeId = toNodeId;
      const keep = rt.state.nodes.has(fromNodeId) ? [fromNodeId] : [];
      shard.secondaryNodeIds = [...shard.secondaryNodeIds.filter((n) => n !== toNodeId), ...keep].sort();
      rt.lag.delete(id, toNodeId);
      shardChanged(rt, shard);
    },
    async setNodeAvailability(nodeId: string, availability: NodeAvailability) {
      const node = rt.state.node(nodeId);
      heartbeats.get(nodeId)?.();
      if (availability === 'ACTIVE') return lifecycle.setNodeOnline(nodeId, true);
      if (node.availability !== availability) {
        node.availability = availability;
        nodeChanged(rt, node);
        if (availability === 'OFFLINE') rt.hub.emit({ type: 'nodeLost', nodeId });
      }
      // neon:H8: the node still answers, so its next heartbeat brings it back.
      heartbeats.set(
        nodeId,
        rt.clock.setTimer(rt.heartbeatIntervalMs, () => {
          heartbeats.delete(nodeId);
          if (node.availability === 'ACTIVE' || !rt.state.nodes.has(nodeId)) return;
          node.availability = 'ACTIVE';
          nodeChanged(rt, node);
        }),
      );
    },
  };
}

/** `simulation.setNodeOnline`: an outage of a node that is not restarting declares it lost. */
export async function setNodeOnlineDeclaringLoss(rt: Runtime, lifecycle: NodeLifecycle, nodeId: string, online: boolean): Promise<void> {
  const before = rt.state.nodes.get(nodeId)?.availability;
  const restarting = lifecycle.save().restarts.some((r) => r.nodeId === nodeId);
  await lifecycle.setNodeOnline(nodeId, online);
  if (!online && before !== undefined && before !== 'OFFLINE' && !restarting) rt.hub.emit({ type: 'nodeLost', nodeId });
}

/** Failover attaches in flight in the simulated cluster, and the most there ever were at once. */
export interface AttachCounter {
  inFlight: number;
  highWater: number;
}
