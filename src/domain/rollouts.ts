/**
 * Rollouts (spec rollouts §1–§3): which nodes, in which order and waves, what counts
 * against the disruption budget, and what a node's part of a rollout goes through. Pure.
 */
import { compareNatural, compareNodeIds } from './compare.ts';
import { matchesLabels } from './labels.ts';
import type { SchedulingPolicy } from './storage/policy.ts';
import type { MaintenancePhase } from './vm/types.ts';

export const ROLLOUT_ACTIONS = ['MAINTENANCE', 'DRAIN_FILL'] as const;
type RolloutAction = (typeof ROLLOUT_ACTIONS)[number];
export const ROLLOUT_RESTARTS = ['WAIT_FOR_REATTACH', 'NONE', 'CONFIRM'] as const;
type RolloutRestart = (typeof ROLLOUT_RESTARTS)[number];
export const ROLLOUT_ORDERS = ['GIVEN', 'BY_ID', 'ZONE_BY_ZONE'] as const;
export type RolloutOrder = (typeof ROLLOUT_ORDERS)[number];

/** What a rollout was asked to do, with every default in place (rollout:O1). */
export interface RolloutSettings {
  action: RolloutAction;
  restart: RolloutRestart;
  maxUnavailable: number;
  order: RolloutOrder;
  pauseOnFailure: boolean;
  settleSeconds: number;
  /**
   * rollout:O6 as narrowed by rollout:O12: given on startRollout, every node of the rollout
   * may restart with workloads that would lose service. What counts is each node's own
   * `unsafeRestartAllowed`; this records what the start asked.
   */
  allowUnsafeRestart: boolean;
  /** Passed to each node's operation. */
  force: boolean;
  deadlineSeconds: number | null;
}

export interface RolloutSelector {
  zones?: string[];
  roles?: string[];
  labels?: Record<string, string>;
}

/** A node as a rollout sees it. */
export interface RolloutNodeView {
  id: string;
  name: string;
  zone: string | null;
  roles: string[];
  labels: Record<string, string>;
  availability: 'ACTIVE' | 'WARMING_UP' | 'OFFLINE';
  cordoned: boolean;
  policy: SchedulingPolicy;
  maintenancePhase: MaintenancePhase | null;
  /** ClusterNode.bootId: changes when the node restarts. */
  bootId?: string | null;
}

/** Harvester counts these roles together for quorum (vm:P4). */
const CONTROL_PLANE_ROLES = ['control-plane', 'etcd', 'witness'];
const isControlPlane = (node: Pick<RolloutNodeView, 'roles'>): boolean => node.roles.some((r) => CONTROL_PLANE_ROLES.includes(r));

/** rollout:O1: a selector matches a node in one of its zones, with one of its roles, carrying all its labels. */
export function matchesSelector(node: Pick<RolloutNodeView, 'zone' | 'roles' | 'labels'>, selector: RolloutSelector): boolean {
  if (selector.zones?.length && (node.zone === null || !selector.zones.includes(node.zone))) return false;
  if (selector.roles?.length && !node.roles.some((r) => selector.roles!.includes(r))) return false;
  return matchesLabels(node.labels, selector.labels ?? {});
}

const zoneKey = (zone: string | null) => zone ?? '\uffff';

/** rollout:O1: the order nodes are taken out in. */
export function orderNodes<N extends Pick<RolloutNodeView, 'id' | 'zone'>>(nodes: readonly N[], order: RolloutOrder): N[] {
  if (order === 'GIVEN') return [...nodes];
  const byId = [...nodes].sort((a, b) => compareNodeIds(a.id, b.id));
  if (order === 'BY_ID') return byId;
  return byId.sort((a, b) => compareNatural(zoneKey(a.zone), zoneKey(b.zone)));
}

/**
 * The waves: up to `maxUnavailable` nodes out together, in order. Under ZONE_BY_ZONE a
 * wave never spans two zones; a wave never holds two control-plane nodes (vm:P4).
 */
export function planWaves<N extends Pick<RolloutNodeView, 'id' | 'zone' | 'roles'>>(
  ordered: readonly N[],
  settings: Pick<RolloutSettings, 'maxUnavailable' | 'order'>,
): string[][] {
  const waves: N[][] = [];
  let current: N[] = [];
  for (const node of ordered) {
    const zoneChange = settings.order === 'ZONE_BY_ZONE' && current.length > 0 && current[0]!.zone !== node.zone;
    const secondControlPlane = isControlPlane(node) && current.some(isControlPlane);
    if (current.length >= settings.maxUnavailable || zoneChange || secondControlPlane) {
      waves.push(current);
      current = [];
    }
    current.push(node);
  }
  if (current.length) waves.push(current);
  return waves.map((w) => w.map((n) => n.id));
}

/**
 * How many nodes the cluster can lose at once (rollout:O2, vm:P3, vm:P4): one node must
 * stay schedulable, and at most one control-plane node may be out while another remains.
 */
export function quorumLimit(cluster: readonly Pick<RolloutNodeView, 'roles'>[]): number {
  const controlPlane = cluster.filter(isControlPlane).length;
  const others = cluster.length - controlPlane;
  return Math.max(0, Math.min(cluster.length - 1, others + (controlPlane > 1 ? 1 : 0)));
}

/**
 * rollout:O5: why a node is out of service, whatever took it out; null when it serves.
 * Cordoned, in maintenance, draining, paused for restart, filling, deleting, or not ACTIVE.
 */
export function outOfService(node: Pick<RolloutNodeView, 'availability' | 'cordoned' | 'policy' | 'maintenancePhase'>): string | null {
  if (node.availability !== 'ACTIVE') return node.availability;
  if (node.maintenancePhase !== null) return `maintenance ${node.maintenancePhase}`;
  if (node.policy !== 'ACTIVE') return node.policy;
  if (node.cordoned) return 'cordoned';
  return null;
}

/**
 * rollout:O5: may the next wave go out now? Counts every node out of service, the
 * rollout's own included; re-checks that the cluster keeps a schedulable node and its
 * control-plane quorum with the wave out (vm:P3, vm:P4).
 */
export function waveAdmission(
  cluster: readonly RolloutNodeView[],
  wave: readonly string[],
  maxUnavailable: number,
): { ok: true } | { ok: false; kind: 'BUDGET' | 'QUORUM'; description: string; nodeIds: string[] } {
  const out = cluster.filter((n) => outOfService(n) !== null);
  const leaving = wave.filter((id) => !out.some((n) => n.id === id));
  if (out.length + leaving.length > maxUnavailable) {
    return {
      ok: false,
      kind: 'BUDGET',
      description: `budget of ${maxUnavailable} node(s) used by ${out.map((n) => `${n.name} (${outOfService(n)})`).join(', ')}`,
      nodeIds: out.map((n) => n.id),
    };
  }
  const remaining = cluster.filter((n) => !wave.includes(n.id) && outOfService(n) === null);
  if (remaining.length === 0) {
    return { ok: false, kind: 'QUORUM', description: `no schedulable node would be left with ${wave.join(', ')} out (vm:P3)`, nodeIds: [...wave] };
  }
  const controlPlaneOut = [...out, ...cluster.filter((n) => wave.includes(n.id))].filter(isControlPlane);
  const controlPlaneLeft = remaining.filter(isControlPlane);
  if (controlPlaneOut.length > 1 || (controlPlaneOut.length === 1 && controlPlaneLeft.length === 0)) {
    return {
      ok: false,
      kind: 'QUORUM',
      description: `control-plane quorum: ${controlPlaneOut.map((n) => n.name).join(', ')} would be out (vm:P4)`,
      nodeIds: controlPlaneOut.map((n) => n.id),
    };
  }
  return { ok: true };
}

/**
 * Where a node's part of a rollout is. In order for DRAIN_FILL: DRAINING, (SAFETY_CHECK),
 * WAITING_FOR_RESTART or WAITING_FOR_CONFIRM, RETURNING, FILLING, SETTLING, DONE; for
 * MAINTENANCE: ENTERING_MAINTENANCE, …, LEAVING_MAINTENANCE, (FILLING), SETTLING, DONE.
 */
export const ROLLOUT_NODE_PHASES = [
  'PENDING',
  'DRAINING',
  'ENTERING_MAINTENANCE',
  'UNSAFE_TO_RESTART',
  'WAITING_FOR_RESTART',
  'WAITING_FOR_CONFIRM',
  'RETURNING',
  'LEAVING_MAINTENANCE',
  'FILLING',
  'SETTLING',
  'DONE',
  'FAILED',
  'CANCELLING',
  'SKIPPED',
] as const;
export type RolloutNodePhase = (typeof ROLLOUT_NODE_PHASES)[number];

/** A node operation the rollout started for a node. */
export interface RolloutNodeOperation {
  kind: 'DRAIN' | 'FILL' | 'MAINTENANCE';
  id: string;
}

/** A node's part of a rollout, as persisted with its step (rollout:O4, rollout:O9). */
export interface RolloutNodeDetail {
  phase: RolloutNodePhase;
  wave: number;
  /** Every node operation started for this node, in order (rollout:O4). */
  operations: RolloutNodeOperation[];
  /**
   * A node operation about to be started, written before the start: after a crash, an
   * operation of that kind on the node created since then is this one (rollout:O9).
   */
  intent: { kind: RolloutNodeOperation['kind']; at: number } | null;
  /** When the phase began (for waiting-on lines). */
  since: number;
  /** The boot the node was in when it was handed over for its restart (rollout:O7). */
  bootBefore: string | null;
  /** When the backend reported the node re-attached after the hand-over (rollout:O7). */
  reattachedAt: number | null;
  /** CONFIRM: the operator said the restart is done. */
  confirmedAt: number | null;
  settleUntil: number | null;
  /** rollout:O6: the workloads that would lose service, and why. */
  blockers: { id: string; reasons: string[] }[];
  /** Why the node's part failed or was stopped. */
  failure: string | null;
  /** A cancel is bringing the node back into service without its restart (rollout:O8). */
  cancelled: boolean;
  /** rollout:O12: who allowed this node (and only this node) to restart unsafely, and why; null: the safety gate holds. */
  unsafeRestartAllowed: UnsafeRestartGrant | null;
}

/** An override of the safety gate for one node (rollout:O12). */
export interface UnsafeRestartGrant {
  by: string;
  reason: string | null;
  at: number;
}

export function newNodeDetail(wave: number, now: number, unsafeRestartAllowed: UnsafeRestartGrant | null = null): RolloutNodeDetail {
  return {
    phase: 'PENDING',
    wave,
    operations: [],
    intent: null,
    since: now,
    bootBefore: null,
    reattachedAt: null,
    confirmedAt: null,
    settleUntil: null,
    blockers: [],
    failure: null,
    cancelled: false,
    unsafeRestartAllowed,
  };
}

/**
 * A node step's detail as stored. Rollouts recorded before per-node overrides (rollout:O12)
 * have none: their override was the rollout's `allowUnsafeRestart`, which a resume could turn
 * on for every later node, and a rollout running across the upgrade keeps that recorded scope.
 */
export function readNodeDetail(
  stored: string | null | undefined,
  legacy: { settings: Pick<RolloutSettings, 'allowUnsafeRestart'>; actor: string | null; createdAt: number },
): RolloutNodeDetail {
  const detail = JSON.parse(stored ?? 'null') as Omit<RolloutNodeDetail, 'unsafeRestartAllowed'> & { unsafeRestartAllowed?: UnsafeRestartGrant | null };
  if (detail.unsafeRestartAllowed !== undefined) return detail as RolloutNodeDetail;
  const grant = legacy.settings.allowUnsafeRestart
    ? { by: legacy.actor ?? 'rollout', reason: 'allowUnsafeRestart recorded for the whole rollout before per-node overrides', at: legacy.createdAt }
    : null;
  return { ...detail, unsafeRestartAllowed: grant };
}

/**
 * rollout:O7: has the node restarted since it was handed over? A re-attach reported after
 * the hand-over, or a boot id that differs from the one recorded then.
 */
export function hasRestarted(detail: Pick<RolloutNodeDetail, 'bootBefore' | 'reattachedAt'>, bootNow: string | null | undefined): boolean {
  if (detail.reattachedAt !== null) return true;
  return detail.bootBefore !== null && bootNow != null && bootNow !== detail.bootBefore;
}
