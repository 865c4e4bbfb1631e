/**
 * The node maintenance phase machine (vm:M1–M6), as data: a table of
 * allowed transitions and one guard that consults it. `null` is "not in maintenance".
 */
import { ConflictError } from '../errors.ts';
import type { MaintenancePhase } from './types.ts';

export type PhaseState = MaintenancePhase | null;

export const PHASE_EVENTS = [
  /** Maintenance was asked for (vm:P2: only from not-in-maintenance). */
  'enableRequested',
  /** Pre-checks and non-migratable detection passed (vm:M1). */
  'validated',
  /** A pre-check refused the request: no trace is left on the node (vm:M1, Harvester #8985). */
  'rejected',
  /** Every stop, the cordon and every migration have been issued (vm:M2). */
  'drained',
  /** The node has no running VM left and the after-enable restarts are done (vm:M4). */
  'evacuated',
  /** The drain deadline expired or an unexpected error stopped the run (vm:M5). */
  'failed',
  /** Disable: back to not-in-maintenance from any phase (vm:D1). */
  'disabled',
  /** clearMaintenanceError: ERROR only, back to not-in-maintenance (vm:M5). */
  'errorCleared',
] as const;
export type PhaseEvent = (typeof PHASE_EVENTS)[number];

export interface PhaseTransition {
  from: PhaseState;
  event: PhaseEvent;
  to: PhaseState;
}

const IN_MAINTENANCE: readonly MaintenancePhase[] = ['VALIDATING', 'DRAINING', 'EVACUATING', 'COMPLETED', 'ERROR'];
/**
 * Phases that can fail. COMPLETED cannot: the work is done and the deadline only guards the
 * drain, so there is nothing left that could time out; a later problem on a completed node
 * is not a maintenance failure. ERROR → ERROR is not a transition either.
 */
const FALLIBLE: readonly MaintenancePhase[] = ['VALIDATING', 'DRAINING', 'EVACUATING'];

export const PHASE_TRANSITIONS: readonly PhaseTransition[] = [
  { from: null, event: 'enableRequested', to: 'VALIDATING' },
  { from: 'VALIDATING', event: 'validated', to: 'DRAINING' },
  { from: 'VALIDATING', event: 'rejected', to: null },
  { from: 'DRAINING', event: 'drained', to: 'EVACUATING' },
  { from: 'EVACUATING', event: 'evacuated', to: 'COMPLETED' },
  ...FALLIBLE.map((from) => ({ from, event: 'failed' as const, to: 'ERROR' as const })),
  ...IN_MAINTENANCE.map((from) => ({ from, event: 'disabled' as const, to: null })),
  { from: 'ERROR', event: 'errorCleared', to: null },
];

/** A transition the table does not allow; a Conflict, so vm:D3 (disable when not in maintenance) is typed. */
export class PhaseTransitionError extends ConflictError {
  constructor(
    readonly from: PhaseState,
    readonly event: PhaseEvent,
  ) {
    super(`maintenance phase ${from ?? 'NONE (not in maintenance)'} does not accept ${event}`);
  }
}

export function canTransition(from: PhaseState, event: PhaseEvent): boolean {
  return PHASE_TRANSITIONS.some((t) => t.from === from && t.event === event);
}

export function nextPhase(from: PhaseState, event: PhaseEvent): PhaseState {
  const transition = PHASE_TRANSITIONS.find((t) => t.from === from && t.event === event);
  if (!transition) throw new PhaseTransitionError(from, event);
  return transition.to;
}
