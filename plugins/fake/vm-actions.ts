import type { ActionKind } from '../../src/cluster/backend.ts';
import { BackendError } from '../../src/cluster/errors.ts';
import type { ClusterNode, ClusterVm, RunStrategy, VmMaintenanceTracking } from '../../src/cluster/types.ts';
import type { Move } from './moves.ts';
import { latencyOf, moveKey, vmChanged, vmLoad, type Runtime } from './runtime.ts';
import { canTake, pickNode } from './scheduling.ts';
import { applyStrategyLabel } from './strategy-label.ts';

const vmSubject = (id: string) => ({ kind: 'vm' as const, id });

/**
 * One move per VM at a time: the same request again joins the move in flight (a gateway
 * that resumes after a crash may repeat itself); a different one is refused with Conflict
 * rather than guessing which should win.
 */
function joinOrRefuse(move: Move | undefined, kind: ActionKind, vmId: string): Promise<void> | undefined {
  if (!move) return undefined;
  if (move.kind === kind) return move.promise;
  throw new BackendError('Conflict', `VM ${vmId} is busy: a ${move.kind} is in progress`, vmSubject(vmId));
}

function unavailableAtCompletion(nodeId: string, what: string): BackendError {
  return new BackendError('Unavailable', `node ${nodeId} went offline during ${what}`, { kind: 'node', id: nodeId });
}

function migrationTarget(rt: Runtime, vm: ClusterVm, fromNodeId: string, toNodeId: string | undefined): ClusterNode {
  if (toNodeId === undefined) {
    const picked = pickNode(rt.state.nodes.values(), vm, (n) => vmLoad(rt, n), fromNodeId);
    if (!picked) throw new BackendError('Conflict', `no schedulable node satisfies the placement of VM ${vm.id}`, vmSubject(vm.id));
    return picked;
  }
  if (toNodeId === fromNodeId) throw new BackendError('Conflict', `VM ${vm.id} cannot migrate to the node it leaves`, vmSubject(vm.id));
  const target = rt.state.requireOnline(toNodeId);
  if (!canTake(target, vm)) {
    throw new BackendError(
      'Conflict',
      `node ${toNodeId} cannot take VM ${vm.id} (not ready, cordoned or not matching its node selector/affinity)`,
      vmSubject(vm.id),
    );
  }
  return target;
}

/*
 * What a move does once its latency has run. Called by the move itself, and by a reload of
 * the state file for a move that was in flight when the process died (moves-after-crash.ts),
 * where the VM is as it was before the move: so each sets every field the move changes.
 */

/** Returns false when the target went offline meanwhile: the VM keeps running at the source. */
export function finishMigration(rt: Runtime, vm: ClusterVm, targetNodeId: string): boolean {
  vm.status = 'Running';
  const arrived = rt.state.nodes.get(targetNodeId)?.availability !== 'OFFLINE';
  if (arrived) vm.nodeId = targetNodeId;
  vmChanged(rt, vm);
  return arrived;
}

export function finishStop(rt: Runtime, vm: ClusterVm): void {
  Object.assign(vm, { runStrategy: 'Halted', status: 'Stopped', nodeId: null });
  vmChanged(rt, vm);
}

/** Returns false when the target went offline meanwhile: the VM is back as it was (stopped, its old run strategy). */
export function finishStart(rt: Runtime, vm: ClusterVm, targetNodeId: string, runStrategy: RunStrategy, previousRunStrategy: RunStrategy): boolean {
  const arrived = rt.state.nodes.get(targetNodeId)?.availability !== 'OFFLINE';
  Object.assign(vm, arrived ? { runStrategy, status: 'Running', nodeId: targetNodeId } : { runStrategy: previousRunStrategy, status: 'Stopped', nodeId: null });
  vmChanged(rt, vm);
  return arrived;
}

export async function migrateVm(rt: Runtime, id: string, options: { fromNodeId: string; toNodeId?: string }): Promise<void> {
  const vm = rt.state.vm(id);
  if (vm.nodeId !== options.fromNodeId) return;
  if (options.toNodeId !== undefined) rt.state.node(options.toNodeId);
  const key = moveKey('vm', id);
  const joined = joinOrRefuse(rt.moves.get(key), 'migrate', id);
  if (joined) return joined;
  rt.state.requireOnline(options.fromNodeId);
  if (!vm.liveMigratable) {
    throw new BackendError('Rejected', `VM ${id} is not live-migratable: ${vm.liveMigratableReason ?? 'unknown reason'}`, vmSubject(id));
  }
  const target = migrationTarget(rt, vm, options.fromNodeId, options.toNodeId);
  rt.faults.maybeFail('migrate', vmSubject(id));
  const beforeMove = { status: vm.status };
  vm.status = 'Migrating';
  vmChanged(rt, vm);
  return rt.moves.start(key, {
    kind: 'migrate',
    beforeMove,
    latencyMs: latencyOf(rt, 'migrate', id),
    targetNodeId: target.id,
    stuckId: id,
    result: { kind: 'migrate', vmId: id, targetNodeId: target.id },
    complete() {
      if (!finishMigration(rt, vm, target.id)) throw unavailableAtCompletion(target.id, `the migration of VM ${id}`);
    },
  });
}

export async function stopVm(rt: Runtime, id: string): Promise<void> {
  const vm = rt.state.vm(id);
  const key = moveKey('vm', id);
  if (vm.runStrategy === 'Halted' && vm.status === 'Stopped') return;
  const joined = joinOrRefuse(rt.moves.get(key), 'stop', id);
  if (joined) return joined;
  if (vm.nodeId !== null) rt.state.requireOnline(vm.nodeId);
  rt.faults.maybeFail('stop', vmSubject(id));
  const beforeMove = { runStrategy: vm.runStrategy, status: vm.status, nodeId: vm.nodeId };
  vm.runStrategy = 'Halted';
  if (vm.status === 'Stopped') {
    // Nothing runs, so only the run strategy changes and there is nothing to wait for.
    vmChanged(rt, vm);
    return;
  }
  vm.status = 'Stopping';
  vmChanged(rt, vm);
  return rt.moves.start(key, {
    kind: 'stop',
    beforeMove,
    latencyMs: latencyOf(rt, 'stop', id),
    stuckId: id,
    result: { kind: 'stop', vmId: id },
    complete: () => finishStop(rt, vm),
  });
}

export async function startVm(rt: Runtime, id: string, options: { runStrategy: RunStrategy; nodeId?: string }): Promise<void> {
  if (options.runStrategy === 'Halted') throw new BackendError('Rejected', 'startVm needs a run strategy other than Halted', vmSubject(id));
  const vm = rt.state.vm(id);
  const requested = options.nodeId === undefined ? undefined : rt.state.node(options.nodeId);
  const key = moveKey('vm', id);
  const inFlight = rt.moves.get(key);
  if (inFlight?.kind === 'start') return inFlight.promise;
  if (vm.status === 'Running' || vm.status === 'Migrating') {
    if (vm.runStrategy !== options.runStrategy) {
      vm.runStrategy = options.runStrategy;
      vmChanged(rt, vm);
    }
    return;
  }
  joinOrRefuse(inFlight, 'start', id);
  const target = requested && canTake(requested, vm) ? requested : pickNode(rt.state.nodes.values(), vm, (n) => vmLoad(rt, n));
  // Checked before anything changes, so a refused start leaves the VM exactly as it was.
  if (!target) throw new BackendError('Conflict', `no schedulable node satisfies the placement of VM ${id}`, vmSubject(id));
  rt.faults.maybeFail('start', vmSubject(id));
  const previousRunStrategy = vm.runStrategy;
  const beforeMove = { runStrategy: vm.runStrategy, status: vm.status, nodeId: vm.nodeId };
  vm.runStrategy = options.runStrategy;
  vm.status = 'Starting';
  vm.nodeId = target.id;
  vmChanged(rt, vm);
  return rt.moves.start(key, {
    kind: 'start',
    beforeMove,
    latencyMs: latencyOf(rt, 'start', id),
    targetNodeId: target.id,
    stuckId: id,
    result: { kind: 'start', vmId: id, targetNodeId: target.id, runStrategy: options.runStrategy },
    complete() {
      if (!finishStart(rt, vm, target.id, options.runStrategy, previousRunStrategy)) throw unavailableAtCompletion(target.id, `the start of VM ${id}`);
    },
  });
}

export async function setVmMaintenanceStrategyLabel(rt: Runtime, id: string, value: string | null): Promise<void> {
  const vm = rt.state.vm(id);
  if (vm.maintenanceStrategyLabel === value) return;
  applyStrategyLabel(vm, value);
  vmChanged(rt, vm);
}

const sameTracking = (a: VmMaintenanceTracking | null, b: VmMaintenanceTracking | null) =>
  a === b || (!!a && !!b && a.nodeName === b.nodeName && a.strategy === b.strategy && a.savedRunStrategy === b.savedRunStrategy);

export async function setVmTracking(rt: Runtime, id: string, tracking: VmMaintenanceTracking | null): Promise<void> {
  const vm = rt.state.vm(id);
  if (sameTracking(vm.tracking, tracking)) return;
  vm.tracking = tracking && { nodeName: tracking.nodeName, strategy: tracking.strategy, savedRunStrategy: tracking.savedRunStrategy };
  vmChanged(rt, vm);
}
