import { EventHub } from './event-hub.ts';
import { finishCordon } from './node-actions.ts';
import type { Runtime } from './runtime.ts';
import { finishCutOver } from './shard-actions.ts';
import type { SavedMove } from './state-file.ts';
import { finishMigration, finishStart, finishStop } from './vm-actions.ts';

/**
 * A real migration or cut-over does not stop when the gateway that asked for it dies: it
 * finishes in the cluster once its time has run, and the gateway that comes back must find
 * out whether it did. The simulated cluster dies with the gateway's process, so a reload
 * decides for each move that was in flight: one whose latency has run by now (the time it
 * had run at the last save plus the time the clock moved on since) finished, with the
 * result it would have had then; one killed earlier never happened and its subject is
 * where it was before (the state file already records it so). A move held by the `stuck`
 * fault had not finished either. Runs before anyone watches and, like the restarts that
 * finished meanwhile, emits nothing (a hub nobody watches); the state file is written next.
 */
export function settleMovesAfterCrash(loaded: Runtime, moves: readonly SavedMove[], sinceSaveMs: number): void {
  const rt: Runtime = { ...loaded, hub: new EventHub() };
  for (const move of moves) {
    const stuck = stuckId(move);
    if (move.elapsedMs + sinceSaveMs < move.latencyMs || (stuck !== undefined && rt.faults.get().stuck.includes(stuck))) continue;
    finish(rt, move);
  }
}

/** The id the `stuck` fault names for this move (VMs and shards only, as in MoveSpec.stuckId). */
function stuckId({ result }: SavedMove): string | undefined {
  switch (result.kind) {
    case 'migrate':
    case 'stop':
    case 'start':
      return result.vmId;
    case 'cutOver':
      return result.shardId;
    case 'cordon':
      return undefined;
  }
}

/** Subjects deleted since (a removed node, say) are skipped: nothing is left to finish. */
function finish(rt: Runtime, { result }: SavedMove): void {
  const { state } = rt;
  switch (result.kind) {
    case 'migrate': {
      const vm = state.vms.get(result.vmId);
      if (vm) finishMigration(rt, vm, result.targetNodeId);
      return;
    }
    case 'stop': {
      const vm = state.vms.get(result.vmId);
      if (vm) finishStop(rt, vm);
      return;
    }
    case 'start': {
      const vm = state.vms.get(result.vmId);
      if (vm) finishStart(rt, vm, result.targetNodeId, result.runStrategy, vm.runStrategy);
      return;
    }
    case 'cordon': {
      const node = state.nodes.get(result.nodeId);
      if (node) finishCordon(rt, node, result.cordoned);
      return;
    }
    case 'cutOver': {
      const shard = state.shards.get(result.shardId);
      if (shard && shard.attachedNodeId === result.fromNodeId) finishCutOver(rt, shard, result.fromNodeId, result.toNodeId);
      return;
    }
  }
}
