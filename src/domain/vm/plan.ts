/**
 * What enabling maintenance on a node would do to each VM (vm:M2–M4, vm:N1–N4, vm:T1, vm:F1–F3).
 * Pure: the same plan is shown as a dry run and followed by the run, so the targets it
 * predicts are the ones the run asks for.
 */
import { evictionMethod } from './eviction.ts';
import { describeReason, nonMigratableReasons } from './migratability.ts';
import { byNamespaceName } from './order.ts';
import { precheckMaintenance } from './prechecks.ts';
import { pickTargetNode, vmLoadByNode } from './scheduling.ts';
import { effectiveStrategy, type EffectiveStrategy } from './strategy.ts';
import type { MaintenancePlan, MaintNode, MaintVm, NonMigratableReason, PrecheckRefusal, VmAction, VmPlanEntry } from './types.ts';

export interface PlanInput {
  nodeId: string;
  force: boolean;
  nodes: readonly MaintNode[];
  /** Every VM of the cluster: the node's own, and the others for load and tracking. */
  vms: readonly MaintVm[];
}

const stopForever = (forced: boolean): VmAction => ({ kind: 'STOP', restart: 'NEVER', track: false, restartNodeId: null, forced });

const isHalted = (vm: MaintVm): boolean => vm.runStrategy === 'Halted' || vm.status === 'Stopped';

/** The action for a VM running on the node, before targets are predicted (MIGRATE gets its target later). */
function decideAction(nodeId: string, s: EffectiveStrategy, vm: MaintVm, reasons: NonMigratableReason[], force: boolean): VmAction | 'MIGRATE' {
  const migratable = reasons.length === 0;
  if (force && s.labelled) return stopForever(true); // vm:F1, whatever the label's value
  // k8s:E4: under force the non-migratable VMs are halted, whatever their eviction strategy (vm:F2).
  if (force && !migratable) return stopForever(true);
  if (s.strategy === 'Migrate') {
    // k8s:E5: a Migrate/unlabelled VM leaves by its eviction strategy.
    const method = evictionMethod(vm.evictionStrategy);
    if (method === 'EVICT') return { kind: 'EVICT' };
    if (method === 'EXTERNAL') return { kind: 'EXTERNAL' };
  }
  if (force) return 'MIGRATE'; // vm:F2 (migratable here)
  switch (s.strategy) {
    case 'ShutdownAndRestartAfterEnable':
      return { kind: 'STOP', restart: 'AFTER_ENABLE', track: true, restartNodeId: null, forced: false };
    case 'ShutdownAndRestartAfterDisable':
      return { kind: 'STOP', restart: 'AFTER_DISABLE', track: true, restartNodeId: nodeId, forced: false };
    case 'Shutdown':
      return stopForever(false);
    case 'Migrate':
      // vm:N4: what force would do; the entry blocks the request.
      return migratable ? 'MIGRATE' : stopForever(true);
  }
}

/** vm:V2: the warning for a VM whose label is none of the four values (in the plan, the log and the event). */
export function invalidLabelWarning(vmId: string, label: string | null): string {
  return `VM ${vmId} has an invalid maintenance strategy "${label}"; treated as Migrate`;
}

interface Draft {
  vm: MaintVm;
  entry: VmPlanEntry;
}

function draftEntry(vm: MaintVm, input: PlanInput, warnings: string[]): Draft {
  const s = effectiveStrategy(vm.maintenanceStrategyLabel);
  const base = { vmId: vm.id, strategy: s.strategy, labelled: s.labelled, labelValid: s.labelValid, evictionStrategy: vm.evictionStrategy ?? null };
  if (vm.nodeId !== input.nodeId) {
    return { vm, entry: { ...base, nonMigratable: [], action: { kind: 'NONE', why: 'NOT_RUNNING' }, blocksEnable: false } };
  }
  if (isHalted(vm)) {
    return { vm, entry: { ...base, nonMigratable: [], action: { kind: 'NONE', why: 'ALREADY_HALTED' }, blocksEnable: false } };
  }
  if (!s.labelValid) warnings.push(invalidLabelWarning(vm.id, vm.maintenanceStrategyLabel));
  const reasons = nonMigratableReasons(vm, input.nodeId, input.nodes);
  const decided = decideAction(input.nodeId, s, vm, reasons, input.force);
  // vm:N4: only a VM that would be migrated blocks (k8s:E5: EVICT and EXTERNAL need no migration).
  const blocksEnable = !input.force && s.strategy === 'Migrate' && reasons.length > 0 && evictionMethod(vm.evictionStrategy) === 'MIGRATE';
  // A placeholder target for MIGRATE; `predictTargets` fills it in.
  const action: VmAction = decided === 'MIGRATE' ? { kind: 'MIGRATE', targetNodeId: '' } : decided;
  return { vm, entry: { ...base, nonMigratable: reasons, action, blocksEnable } };
}

/**
 * Targets as the run will pick them: migrations first (M2c, namespace/name order), then the
 * after-enable restarts (vm:M4, once the node is empty); each counts as one more VM on its target.
 */
function predictTargets(drafts: Draft[], input: PlanInput, warnings: string[]): void {
  const load = vmLoadByNode(input.vms);
  const place = (vm: MaintVm) => {
    const target = pickTargetNode(vm, input.nodes, load, input.nodeId);
    if (target) load.set(target.id, (load.get(target.id) ?? 0) + 1);
    return target?.id ?? null;
  };
  for (const { vm, entry } of drafts) {
    if (entry.action.kind !== 'MIGRATE') continue;
    // Migratable means some other node can host it (vm:N3), so a target exists.
    entry.action = { kind: 'MIGRATE', targetNodeId: place(vm)! };
  }
  for (const { vm, entry } of drafts) {
    if (entry.action.kind !== 'STOP' || entry.action.restart !== 'AFTER_ENABLE') continue;
    const restartNodeId = place(vm);
    if (restartNodeId === null) warnings.push(`VM ${vm.id}: no other node can take it when it restarts after enable`);
    entry.action = { ...entry.action, restartNodeId };
  }
}

/** vm:N4: one refusal listing every blocking VM, grouped by reason code. */
function nonMigratableRefusal(entries: VmPlanEntry[]): PrecheckRefusal | null {
  const blocking = entries.filter((e) => e.blocksEnable);
  if (blocking.length === 0) return null;
  const byReason: Record<string, string[]> = {};
  for (const e of blocking) {
    for (const reason of e.nonMigratable) {
      const ids = (byReason[reason.code] ??= []);
      if (!ids.includes(e.vmId)) ids.push(e.vmId);
    }
  }
  const details = blocking.map((e) => `${e.vmId}: ${e.nonMigratable.map(describeReason).join(', ')}`).join('; ');
  return {
    code: 'NON_MIGRATABLE_VMS',
    byReason,
    message: `${blocking.length} VM(s) with strategy Migrate cannot be live-migrated (${details}); enabling with force would shut them down`,
  };
}

export function planMaintenance(input: PlanInput): MaintenancePlan {
  const { nodeId, force } = input;
  const refusals = precheckMaintenance(nodeId, input.nodes);
  const node = input.nodes.find((n) => n.id === nodeId);
  if (!node) return { nodeId, force, refusals, vms: [], warnings: [] };
  const covered = input.vms.filter((vm) => vm.nodeId === nodeId || (vm.nodeId === null && vm.tracking?.nodeName === node.name)).sort(byNamespaceName);
  const warnings: string[] = [];
  const drafts = covered.map((vm) => draftEntry(vm, input, warnings));
  predictTargets(drafts, input, warnings);
  const entries = drafts.map((d) => d.entry);
  const unset = drafts.filter((d) => d.entry.action.kind === 'MIGRATE' && d.vm.evictionStrategy === null).map((d) => d.vm.id);
  if (unset.length) {
    // k8s:E5 Decision: said, not silent.
    warnings.push(
      `${unset.length} VM(s) have no eviction strategy (none on the VMI or in the KubeVirt CR, so KubeVirt's default None would evict them); Lockkeeper live-migrates them as Migrate: ${unset.join(', ')}`,
    );
  }
  const blocking = nonMigratableRefusal(entries);
  if (blocking) refusals.push(blocking);
  return { nodeId, force, refusals, vms: entries, warnings };
}
