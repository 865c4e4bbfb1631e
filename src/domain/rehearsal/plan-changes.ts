/**
 * When a rehearsal is stale (issue 33): `startRollout(…, rehearsal)` compares what the plan
 * rested on at the rehearsal with what it rests on now, and refuses on a change that changes
 * the plan, naming it. Pure: the gateway fills both bases from its plan views.
 */
import { compareNatural, compareNodeIds } from '../compare.ts';
import type { RolloutNodeView, RolloutSelector, RolloutSettings } from '../rollouts.ts';

/** What a rollout's plan rests on: its settings and waves, and every node of the cluster. */
export interface PlanBasis {
  /** RolloutPlanView.settings. */
  settings: RolloutSettings;
  /** The input's selector, when the nodes were chosen by one: its label keys are the labels that count. */
  selector?: RolloutSelector | null;
  /** RolloutPlanView.order and .waves. */
  order: string[];
  waves: string[][];
  /** Every node of the cluster, the rollout's and the others (they count for the budget and quorum, rollout:O2, rollout:O5). */
  nodes: PlanBasisNode[];
}

/** A node as the rollout sees it (RolloutNodeView's zone, roles, labels, availability and cordon), with the plan's view of it. */
export interface PlanBasisNode extends Pick<RolloutNodeView, 'zone' | 'roles' | 'labels' | 'availability' | 'cordoned'> {
  nodeId: string;
  /** rollout:O5: why the node is out of service (`outOfService`), null when it serves. */
  outOfService?: string | null;
  /** Codes of why its node operation would be refused (MaintenancePlan.refusals, a shard or pod-drain refusal); empty: accepted. */
  refusals?: string[];
  /** MaintenancePlanView.vms (a node of a MAINTENANCE rollout). */
  vms?: PlanBasisVm[];
  /** MaintenancePlanView.pods, with the PDB over each (from the snapshot). */
  pods?: PlanBasisPod[];
  /** The shards attached there, as the drain plan's steps would treat them. */
  shards?: PlanBasisShard[];
}

export interface PlanBasisVm {
  id: string;
  /** VmPlanEntry.strategy (Migrate, Shutdown, …). */
  strategy: string;
  /** VmPlanEntry.nonMigratable's codes; empty: migratable. */
  nonMigratable: string[];
  /** VmPlanEntry.evictionStrategy. */
  evictionStrategy: string | null;
  /** VmPlanEntry.action.kind: MIGRATE, STOP, EVICT, EXTERNAL, NONE. */
  action: string;
  /** For a STOP: VmAction.restart (NEVER, AFTER_ENABLE, AFTER_DISABLE). */
  restart?: string | null;
}

export interface PlanBasisPod {
  /** namespace/name. */
  id: string;
  /** PodVerdict.action, with the cause of an ERROR: EVICT, SKIP, ERROR:EMPTY_DIR, … */
  verdict: string;
  /** namespace/name of the PodDisruptionBudget over it; null: none. */
  pdb: string | null;
}

export interface PlanBasisShard {
  id: string;
  /** PLANNED (it would move) or SKIPPED, as the drain plan's step. */
  state: string;
  /** Why it would be skipped. */
  reason: string | null;
}

/** The kinds of change, for the API's enum; docs/rehearsal.md has a row for each. */
export const PLAN_CHANGE_CODES = [
  'SETTINGS_CHANGED',
  'WAVES_CHANGED',
  'NODE_ADDED',
  'NODE_REMOVED',
  'NODE_STATE_CHANGED',
  'NODE_CHANGED',
  'NODE_REFUSAL_CHANGED',
  'WORKLOAD_ADDED',
  'WORKLOAD_REMOVED',
  'WORKLOAD_MOVED',
  'WORKLOAD_CHANGED',
] as const;
type PlanChangeCode = (typeof PLAN_CHANGE_CODES)[number];

export interface PlanChange {
  code: PlanChangeCode;
  nodeId: string | null;
  workload: string | null;
  /** The node, the workload, and what it was and is, in words. */
  message: string;
}

/**
 * What changed between the rehearsal's basis and now, in a stable order: settings, waves, then
 * node by node (natural order). What is not compared, because it does not change the plan:
 * labels no selector names (placement shows in the VMs' migratability and actions instead), a
 * zone when neither the order nor the selector uses zones, where a VM or shard would go (targets
 * are picked again when each move starts), shard LSNs, lag or generation, anything not in the basis.
 */
export function planChanges(before: PlanBasis, after: PlanBasis): PlanChange[] {
  const changes: PlanChange[] = [];
  const add = (code: PlanChangeCode, nodeId: string | null, workload: string | null, message: string) => changes.push({ code, nodeId, workload, message });

  for (const key of Object.keys({ ...before.settings, ...after.settings }).sort() as (keyof RolloutSettings)[]) {
    const was = before.settings[key];
    const now = after.settings[key];
    if (!same(was, now)) add('SETTINGS_CHANGED', null, null, `${key} is now ${show(now)} (was ${show(was)})`);
  }
  if (!same(before.selector ?? null, after.selector ?? null))
    add('SETTINGS_CHANGED', null, null, `the selector is now ${show(after.selector ?? null)} (was ${show(before.selector ?? null)})`);
  if (!same(before.waves, after.waves) || !same(before.order, after.order)) {
    add('WAVES_CHANGED', null, null, `the waves are now ${wavesText(after.waves)} (were ${wavesText(before.waves)})`);
  }

  const usesZones = [before, after].some((b) => b.settings.order === 'ZONE_BY_ZONE' || Boolean(b.selector?.zones?.length));
  const labelKeys = [...new Set([before, after].flatMap((b) => Object.keys(b.selector?.labels ?? {})))].sort();
  const beforeNodes = byKey(before.nodes, (n) => n.nodeId);
  const afterNodes = byKey(after.nodes, (n) => n.nodeId);
  const where = (basis: Map<string, PlanBasisNode>, pick: (n: PlanBasisNode) => { id: string }[] | undefined) => {
    const at = new Map<string, string>();
    for (const n of basis.values()) for (const w of pick(n) ?? []) at.set(w.id, n.nodeId);
    return at;
  };
  const vmWas = where(beforeNodes, (n) => n.vms);
  const vmNow = where(afterNodes, (n) => n.vms);

  for (const nodeId of [...new Set([...beforeNodes.keys(), ...afterNodes.keys()])].sort(compareNodeIds)) {
    const was = beforeNodes.get(nodeId);
    const now = afterNodes.get(nodeId);
    if (!was) {
      add('NODE_ADDED', nodeId, null, `${nodeId} joined the cluster (${now!.availability}${now!.cordoned ? ', cordoned' : ''})`);
      continue;
    }
    if (!now) {
      add('NODE_REMOVED', nodeId, null, `${nodeId} left the cluster`);
      continue;
    }
    const state = (n: PlanBasisNode) => [n.availability, n.cordoned ? 'cordoned' : 'schedulable', ...(n.outOfService ? [n.outOfService] : [])].join(', ');
    if (state(was) !== state(now)) add('NODE_STATE_CHANGED', nodeId, null, `${nodeId} is now ${state(now)} (was ${state(was)})`);
    const node: string[] = [];
    if (!same([...was.roles].sort(), [...now.roles].sort())) node.push(`roles are now ${list(now.roles)} (were ${list(was.roles)})`);
    if (usesZones && was.zone !== now.zone) node.push(`zone is now ${now.zone ?? 'none'} (was ${was.zone ?? 'none'})`);
    for (const key of labelKeys) {
      if (was.labels[key] !== now.labels[key]) node.push(`label ${key} is now ${now.labels[key] ?? 'unset'} (was ${was.labels[key] ?? 'unset'})`);
    }
    if (node.length) add('NODE_CHANGED', nodeId, null, `${nodeId}: ${node.join('; ')}`);
    const refusals = (n: PlanBasisNode) => [...new Set(n.refusals ?? [])].sort();
    if (!same(refusals(was), refusals(now))) {
      const text = (r: string[]) => (r.length ? `refused (${r.join(', ')})` : 'accepted');
      add('NODE_REFUSAL_CHANGED', nodeId, null, `${nodeId}: its operation would now be ${text(refusals(now))} (was ${text(refusals(was))})`);
    }
    workloadChanges(nodeId, 'VM', was.vms, now.vms, vmDiff, add, { was: vmWas, now: vmNow });
    workloadChanges(nodeId, 'pod', was.pods, now.pods, podDiff, add);
    workloadChanges(nodeId, 'shard', was.shards, now.shards, shardDiff, add);
  }
  return changes;
}

/** One line for an error or a CLI: every change when there are few, the first three and a count otherwise. */
export function describeChanges(changes: readonly PlanChange[]): string {
  if (!changes.length) return 'the plan has not changed since the rehearsal';
  const shown = changes.slice(0, 3).map((c) => c.message);
  const more = changes.length - shown.length;
  return `the plan changed since the rehearsal (${changes.length} change${changes.length === 1 ? '' : 's'}): ${shown.join('; ')}${more ? `; and ${more} more` : ''}`;
}

type Add = (code: PlanChangeCode, nodeId: string | null, workload: string | null, message: string) => void;

function workloadChanges<W extends { id: string }>(
  nodeId: string,
  kind: string,
  was: readonly W[] | undefined,
  now: readonly W[] | undefined,
  diff: (was: W, now: W) => string[],
  add: Add,
  moves?: { was: Map<string, string>; now: Map<string, string> },
): void {
  const before = byKey(was ?? [], (w) => w.id);
  const after = byKey(now ?? [], (w) => w.id);
  for (const id of [...new Set([...before.keys(), ...after.keys()])].sort(compareNatural)) {
    const w = before.get(id);
    const n = after.get(id);
    if (!w) {
      const from = moves?.was.get(id);
      if (from !== undefined) add('WORKLOAD_MOVED', nodeId, id, `${nodeId}: ${kind} ${id} is now here (was on ${from})`);
      else add('WORKLOAD_ADDED', nodeId, id, `${nodeId}: ${kind} ${id} is new there`);
    } else if (!n) {
      // A move is named once, where the workload is now.
      if (!moves?.now.has(id)) add('WORKLOAD_REMOVED', nodeId, id, `${nodeId}: ${kind} ${id} is gone from there`);
    } else {
      const parts = diff(w, n);
      if (parts.length) add('WORKLOAD_CHANGED', nodeId, id, `${nodeId}: ${kind} ${id} ${parts.join('; ')}`);
    }
  }
}

const VM_ACTIONS: Record<string, string> = {
  MIGRATE: 'live-migrated',
  STOP: 'stopped',
  EVICT: 'evicted (eviction strategy None)',
  EXTERNAL: 'left to an external controller',
  NONE: 'left alone',
};
const vmAction = (vm: PlanBasisVm) => `${VM_ACTIONS[vm.action] ?? vm.action}${vm.action === 'STOP' && vm.restart ? ` (restart ${vm.restart})` : ''}`;

function vmDiff(was: PlanBasisVm, now: PlanBasisVm): string[] {
  const parts: string[] = [];
  const reasons = (vm: PlanBasisVm) => [...new Set(vm.nonMigratable)].sort();
  if (!same(reasons(was), reasons(now))) {
    if (!reasons(now).length) parts.push(`is now migratable (was not: ${list(reasons(was))})`);
    else if (!reasons(was).length) parts.push(`is no longer migratable (${list(reasons(now))}; was migratable, strategy ${was.strategy})`);
    else parts.push(`is not migratable for other reasons: ${list(reasons(now))} (was ${list(reasons(was))})`);
  }
  if (was.strategy !== now.strategy) parts.push(`has maintenance strategy ${now.strategy} (was ${was.strategy})`);
  if (was.evictionStrategy !== now.evictionStrategy)
    parts.push(`has eviction strategy ${now.evictionStrategy ?? 'unset'} (was ${was.evictionStrategy ?? 'unset'})`);
  if (vmAction(was) !== vmAction(now)) parts.push(`would be ${vmAction(now)} (was ${vmAction(was)})`);
  return parts;
}

function podDiff(was: PlanBasisPod, now: PlanBasisPod): string[] {
  const parts: string[] = [];
  if (was.verdict !== now.verdict) parts.push(`would be ${podVerdict(now.verdict)} (was ${podVerdict(was.verdict)})`);
  if (was.pdb !== now.pdb) parts.push(`is covered by ${pdb(now.pdb)} (was ${pdb(was.pdb)})`);
  return parts;
}

const podVerdict = (v: string) =>
  v === 'EVICT' ? 'evicted' : v === 'SKIP' ? 'skipped' : v.startsWith('ERROR') ? `a blocker${v.includes(':') ? ` (${v.slice(6)})` : ''}` : v;
const pdb = (name: string | null) => (name ? `PodDisruptionBudget ${name}` : 'no PodDisruptionBudget');

function shardDiff(was: PlanBasisShard, now: PlanBasisShard): string[] {
  const text = (s: PlanBasisShard) => (s.state === 'SKIPPED' ? `skipped (${s.reason ?? 'no reason'})` : s.state === 'PLANNED' ? 'moved' : s.state);
  return text(was) === text(now) ? [] : [`would be ${text(now)} (was ${text(was)})`];
}

function byKey<T>(items: readonly T[], key: (t: T) => string): Map<string, T> {
  return new Map(items.map((t) => [key(t), t]));
}

/** JSON with object keys sorted, so that two bases filled in different key orders compare equal. */
const canonical = (v: unknown): string =>
  JSON.stringify(v, (_key, value: unknown) =>
    value && typeof value === 'object' && !Array.isArray(value) ? Object.fromEntries(Object.entries(value).sort(([a], [b]) => a.localeCompare(b))) : value,
  );
const same = (a: unknown, b: unknown): boolean => canonical(a) === canonical(b);
const show = (v: unknown): string => (typeof v === 'string' ? v : canonical(v));
const list = (items: readonly string[]) => (items.length ? items.join(', ') : 'none');
const wavesText = (waves: readonly (readonly string[])[]) => (waves.length ? waves.map((w, i) => `${i + 1}: ${w.join(', ')}`).join(' | ') : 'none');
