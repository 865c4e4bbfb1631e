/** Storage-node scheduling policy and its transition table (storage-drain-fill.md §1–§2, summarised in docs/rules.md). Pure. */

export const SCHEDULING_POLICIES = ['ACTIVE', 'PAUSE', 'PAUSE_FOR_RESTART', 'DRAINING', 'FILLING', 'DELETING'] as const;
export type SchedulingPolicy = (typeof SCHEDULING_POLICIES)[number];

export type Availability = 'ACTIVE' | 'WARMING_UP' | 'OFFLINE';

/** Nothing new is placed on a node that may not schedule. */
export function maySchedule(node: { availability: Availability; policy: SchedulingPolicy }): boolean {
  if (node.availability !== 'ACTIVE') return false;
  return node.policy === 'ACTIVE' || node.policy === 'FILLING';
}

export type PolicyEvent =
  | { type: 'drainAccepted' }
  | { type: 'drainFinished' }
  | { type: 'drainCancelled' }
  | { type: 'drainFailed' }
  | { type: 'fillAccepted' }
  | { type: 'fillFinished' }
  | { type: 'fillCancelled' }
  | { type: 'fillFailed' }
  | { type: 'reattached' }
  | { type: 'deleteAccepted' }
  /** A cancelled delete returns the node to the policy it started from (neon:L4). */
  | { type: 'deleteCancelled'; policy: SchedulingPolicy }
  | { type: 'configure'; policy: SchedulingPolicy };

type Row = { from: readonly SchedulingPolicy[] | 'any'; event: PolicyEvent['type']; to: SchedulingPolicy | 'same' | 'asked' };

/**
 * The policy table of storage-drain-fill.md §2, as data. Two rows are ours: a drain or fill that fails for a
 * reason other than the node's own state (deadline, every move failing) returns the
 * node to ACTIVE, as Neon's controller does, so a failed operation never leaves a node
 * unschedulable without anyone deciding so. A drain that fails with NODE_STATE_CHANGED
 * makes no transition at all (storage:D7: the policy is left as it is).
 */
const POLICY_TRANSITIONS: readonly Row[] = [
  { from: ['ACTIVE'], event: 'drainAccepted', to: 'DRAINING' },
  { from: ['DRAINING'], event: 'drainFinished', to: 'PAUSE_FOR_RESTART' },
  { from: ['DRAINING'], event: 'drainCancelled', to: 'ACTIVE' },
  { from: ['DRAINING'], event: 'drainFailed', to: 'ACTIVE' },
  { from: ['ACTIVE'], event: 'fillAccepted', to: 'FILLING' },
  { from: ['FILLING'], event: 'fillFinished', to: 'ACTIVE' },
  { from: ['FILLING'], event: 'fillCancelled', to: 'ACTIVE' },
  { from: ['FILLING'], event: 'fillFailed', to: 'ACTIVE' },
  { from: ['PAUSE_FOR_RESTART', 'DRAINING', 'FILLING'], event: 'reattached', to: 'ACTIVE' },
  // An operator's pause survives restarts (neon #9907); so do the other policies.
  { from: ['PAUSE', 'ACTIVE'], event: 'reattached', to: 'same' },
  // neon:L3: an interrupted delete must not re-admit shards (Neon's memory says Active, its database Pause).
  { from: ['DELETING'], event: 'reattached', to: 'PAUSE' },
  { from: ['ACTIVE', 'PAUSE'], event: 'deleteAccepted', to: 'DELETING' },
  { from: ['DELETING'], event: 'deleteCancelled', to: 'asked' },
  { from: 'any', event: 'configure', to: 'asked' },
];

export class PolicyTransitionError extends Error {
  override readonly name = 'PolicyTransitionError';
  constructor(
    readonly from: SchedulingPolicy,
    readonly event: PolicyEvent['type'],
  ) {
    super(`no policy transition from ${from} on ${event}`);
  }
}

/** The policy after `event`, or PolicyTransitionError for a pair the table does not list. */
export function nextPolicy(from: SchedulingPolicy, event: PolicyEvent): SchedulingPolicy {
  const row = POLICY_TRANSITIONS.find((r) => r.event === event.type && (r.from === 'any' || r.from.includes(from)));
  if (!row) throw new PolicyTransitionError(from, event.type);
  if (row.to === 'same') return from;
  if (row.to === 'asked') return (event as { policy: SchedulingPolicy }).policy;
  return row.to;
}

/** Neon's spelling of each policy in its REST API. */
export const NEON_POLICY_NAMES: Record<SchedulingPolicy, string> = {
  ACTIVE: 'Active',
  PAUSE: 'Pause',
  PAUSE_FOR_RESTART: 'PauseForRestart',
  DRAINING: 'Draining',
  FILLING: 'Filling',
  DELETING: 'Deleting',
};

export const NEON_AVAILABILITY_NAMES: Record<Availability, string> = {
  ACTIVE: 'Active',
  WARMING_UP: 'WarmingUp',
  OFFLINE: 'Offline',
};
