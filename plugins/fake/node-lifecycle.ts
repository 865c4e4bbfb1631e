import { BackendError } from '../../src/cluster/errors.ts';
import type { ClusterNode, ClusterShard, ClusterVm, RunStrategy } from '../../src/cluster/types.ts';
import { compareNodeIds } from '../../src/domain/compare.ts';
import { nodeChanged, shardChanged, vmChanged, type Runtime } from './runtime.ts';
import type { StateFile } from './state-file.ts';

/**
 * Run strategies under which KubeVirt starts a VM again by itself after its node came
 * back; `Manual` and `Once` wait for someone, `Halted` stays off.
 */
const RESTARTS_BY_ITSELF: ReadonlySet<RunStrategy> = new Set(['Always', 'RerunOnFailure']);

function parseMoveKey(key: string): { kind: string; id: string } {
  const i = key.indexOf(':');
  return { kind: key.slice(0, i), id: key.slice(i + 1) };
}

/**
 * Aborts every move touching the node (they reject Unavailable) and stops the VMs on it;
 * VMs that were migrating towards it stay where they were. Returns the VMs it stopped.
 */
function interruptWorkloads(rt: Runtime, nodeId: string, what: string): ClusterVm[] {
  const error = new BackendError('Unavailable', `node ${nodeId} ${what}`, { kind: 'node', id: nodeId });
  for (const [key, move] of [...rt.moves.entries()]) {
    const { kind, id } = parseMoveKey(key);
    const vm = kind === 'vm' ? rt.state.vms.get(id) : undefined;
    const shard = kind === 'shard' ? rt.state.shards.get(id) : undefined;
    const here = kind === 'node' ? id === nodeId : (vm?.nodeId ?? shard?.attachedNodeId) === nodeId;
    if (!here && move.targetNodeId !== nodeId) continue;
    move.abort(error);
    if (vm && vm.nodeId !== nodeId) {
      vm.status = 'Running';
      vmChanged(rt, vm);
    }
  }
  const stopped: ClusterVm[] = [];
  for (const vm of rt.state.vms.values()) {
    if (vm.nodeId !== nodeId) continue;
    vm.status = 'Stopped';
    vm.nodeId = null;
    vmChanged(rt, vm);
    stopped.push(vm);
  }
  return stopped;
}

/** The node came up again: a new boot (ClusterNode.bootId). */
function nextBoot(node: ClusterNode): void {
  node.bootId = String(Number(node.bootId ?? '0') + 1);
}

/** Promotion on node removal keeps the shard in its preferred zone when a secondary there allows it. */
function promoteSecondary(rt: Runtime, shard: ClusterShard): string {
  const inZone = (n: string) => (rt.state.nodes.get(n)?.zone === shard.preferredZone ? 0 : 1);
  return [...shard.secondaryNodeIds].sort((a, b) => inZone(a) - inZone(b) || compareNodeIds(a, b))[0]!;
}

/** Node restarts, outages and removal: the `simulation` half of the fake that has state. */
export class NodeLifecycle {
  /** Nodes between going down for a restart and re-attaching, with the VMs to start again. */
  private readonly restarting = new Map<string, string[]>();
  /** The pending re-attach or heartbeat of each node. */
  private readonly timers = new Map<string, () => void>();

  constructor(private readonly rt: Runtime) {}

  async restartNode(nodeId: string): Promise<void> {
    const node = this.rt.state.node(nodeId);
    if (this.restarting.has(nodeId)) return;
    this.cancelTimer(nodeId);
    if (node.availability !== 'OFFLINE') {
      node.availability = 'OFFLINE';
      nodeChanged(this.rt, node);
    }
    const stopped = interruptWorkloads(this.rt, nodeId, 'restarted');
    this.restarting.set(
      nodeId,
      stopped.filter((vm) => RESTARTS_BY_ITSELF.has(vm.runStrategy)).map((vm) => vm.id),
    );
    this.schedule(nodeId, this.rt.restartDelayMs, () => this.reattach(nodeId));
    // A node already OFFLINE emits nothing above, but the pending restart is state too.
    this.rt.changed();
  }

  async setNodeOnline(nodeId: string, online: boolean): Promise<void> {
    const node = this.rt.state.node(nodeId);
    if (online) {
      // A restart held offline completes now; a plain outage ends without a re-attach.
      if (this.restarting.has(nodeId)) return this.reattach(nodeId);
      if (node.availability !== 'OFFLINE') return;
      node.availability = 'ACTIVE';
    } else {
      this.cancelTimer(nodeId);
      // Holding a restarting node down changes no record, but the state file must know.
      this.rt.changed();
      if (node.availability === 'OFFLINE') return;
      node.availability = 'OFFLINE';
    }
    nodeChanged(this.rt, node);
  }

  async removeNode(nodeId: string): Promise<void> {
    this.rt.state.node(nodeId);
    const orphan = [...this.rt.state.shards.values()].find((s) => s.attachedNodeId === nodeId && s.secondaryNodeIds.length === 0);
    if (orphan)
      throw new BackendError('Conflict', `node ${nodeId} holds shard ${orphan.id}, which has no secondary to take over`, { kind: 'node', id: nodeId });
    this.cancelTimer(nodeId);
    this.restarting.delete(nodeId);
    interruptWorkloads(this.rt, nodeId, 'was removed');
    for (const vm of this.rt.state.vms.values()) {
      const lost = vm.volumes.flatMap((v) => v.replicas).filter((r) => r.nodeId === nodeId && r.healthy);
      if (lost.length === 0) continue;
      for (const r of lost) r.healthy = false;
      vmChanged(this.rt, vm);
    }
    for (const shard of this.rt.state.shards.values()) this.forgetLocation(shard, nodeId);
    this.rt.state.nodes.delete(nodeId);
    this.rt.hub.emit({ type: 'nodeRemoved', nodeId });
  }

  /** Restarts and heartbeats in progress, for the state file. */
  save(): Pick<StateFile, 'restarts' | 'warmingUp'> {
    const restarts = [...this.restarting].map(([nodeId, vmIds]) => ({ nodeId, vmIds: [...vmIds], heldDown: !this.timers.has(nodeId) }));
    const warmingUp = [...this.timers.keys()].filter((id) => !this.restarting.has(id));
    return { restarts, warmingUp };
  }

  /**
   * After a reload, time has passed for the nodes too: a restart that was under way has
   * finished (ACTIVE, its VMs running again as after a re-attach), a pending heartbeat has
   * arrived (ACTIVE). A restart held down by setNodeOnline(false) is still held down.
   * Runs before anyone watches, so it emits nothing.
   */
  restore(saved: Pick<StateFile, 'restarts' | 'warmingUp'>): void {
    for (const { nodeId, vmIds, heldDown } of saved.restarts) {
      const node = this.rt.state.nodes.get(nodeId);
      if (!node) continue;
      if (heldDown) {
        this.restarting.set(nodeId, [...vmIds]);
        continue;
      }
      this.rerunVms(nodeId, vmIds);
      node.availability = 'ACTIVE';
      nextBoot(node);
    }
    for (const nodeId of saved.warmingUp) {
      const node = this.rt.state.nodes.get(nodeId);
      if (node) node.availability = 'ACTIVE';
    }
  }

  close(): void {
    for (const nodeId of [...this.timers.keys()]) this.cancelTimer(nodeId);
  }

  private forgetLocation(shard: ClusterShard, nodeId: string): void {
    if (shard.attachedNodeId === nodeId) {
      shard.attachedNodeId = promoteSecondary(this.rt, shard);
      this.rt.lag.delete(shard.id, shard.attachedNodeId);
    } else if (!shard.secondaryNodeIds.includes(nodeId)) {
      return;
    }
    shard.secondaryNodeIds = shard.secondaryNodeIds.filter((n) => n !== nodeId && n !== shard.attachedNodeId);
    this.rt.lag.delete(shard.id, nodeId);
    shardChanged(this.rt, shard);
  }

  private reattach(nodeId: string): void {
    const node = this.rt.state.node(nodeId);
    const vmIds = this.restarting.get(nodeId) ?? [];
    this.restarting.delete(nodeId);
    this.cancelTimer(nodeId);
    node.availability = 'WARMING_UP';
    nextBoot(node);
    nodeChanged(this.rt, node);
    this.rt.hub.emit({ type: 'nodeReattached', nodeId });
    for (const vm of this.rerunVms(nodeId, vmIds)) vmChanged(this.rt, vm);
    this.schedule(nodeId, this.rt.heartbeatIntervalMs, () => {
      node.availability = 'ACTIVE';
      nodeChanged(this.rt, node);
    });
  }

  /** VMs of a restart that KubeVirt starts again by themselves on the node that came back. */
  private rerunVms(nodeId: string, vmIds: readonly string[]): ClusterVm[] {
    const rerun: ClusterVm[] = [];
    for (const id of vmIds) {
      const vm = this.rt.state.vms.get(id);
      // Someone may have started, halted or re-placed it while the node was down.
      if (!vm || vm.status !== 'Stopped' || !RESTARTS_BY_ITSELF.has(vm.runStrategy)) continue;
      vm.status = 'Running';
      vm.nodeId = nodeId;
      rerun.push(vm);
    }
    return rerun;
  }

  private schedule(nodeId: string, ms: number, fn: () => void): void {
    this.cancelTimer(nodeId);
    const cancel = this.rt.clock.setTimer(ms, () => {
      this.timers.delete(nodeId);
      fn();
    });
    this.timers.set(nodeId, cancel);
  }

  private cancelTimer(nodeId: string): void {
    this.timers.get(nodeId)?.();
    this.timers.delete(nodeId);
  }
}
