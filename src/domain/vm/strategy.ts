/** Per-VM maintenance strategies (vm:V1–V3). Pure: no I/O. */
import { InvalidInputError } from '../errors.ts';
import { matchesLabels } from '../labels.ts';

export const MAINTENANCE_STRATEGIES = ['Migrate', 'ShutdownAndRestartAfterEnable', 'ShutdownAndRestartAfterDisable', 'Shutdown'] as const;
export type MaintenanceStrategy = (typeof MAINTENANCE_STRATEGIES)[number];

export function isMaintenanceStrategy(value: string): value is MaintenanceStrategy {
  return (MAINTENANCE_STRATEGIES as readonly string[]).includes(value);
}

export interface EffectiveStrategy {
  strategy: MaintenanceStrategy;
  /** False when the label holds something other than the four exact values (vm:V2). */
  labelValid: boolean;
  /** True when the VM carries a label at all (vm:F1 distinguishes labelled VMs). */
  labelled: boolean;
}

/**
 * The strategy a VM's raw label means. Unset means Migrate; an invalid value also means
 * Migrate and is reported as invalid so the caller can warn (vm:V2: it never blocks).
 */
export function effectiveStrategy(raw: string | null): EffectiveStrategy {
  if (raw === null) return { strategy: 'Migrate', labelValid: true, labelled: false };
  if (isMaintenanceStrategy(raw)) return { strategy: raw, labelValid: true, labelled: true };
  return { strategy: 'Migrate', labelValid: false, labelled: true };
}

/** The strategies whose stop is tracked and undone later (vm:T1). */
const RESTART_STRATEGIES = ['ShutdownAndRestartAfterEnable', 'ShutdownAndRestartAfterDisable'] as const;
export type RestartStrategy = (typeof RESTART_STRATEGIES)[number];

/** Takes a raw string because a recorded tracking strategy is unvalidated data (vm:T3). */
export function isRestartStrategy(value: string): value is RestartStrategy {
  return (RESTART_STRATEGIES as readonly string[]).includes(value);
}

/**
 * vm:V1: what a caller may set. Only the four exact, case-sensitive values; null removes
 * the label (which means Migrate). Anything else is refused with a typed error naming
 * the field and the value, in Harvester's words.
 */
export function parseStrategyInput(value: string | null): MaintenanceStrategy | null {
  if (value === null) return null;
  if (isMaintenanceStrategy(value)) return value;
  throw new InvalidInputError('strategy', value, invalidStrategyMessage(value));
}

/** Harvester's words for a bad value, here and in the admission webhook (vm:V1, k8s:A2, k8s:A6). */
export const invalidStrategyMessage = (value: string): string => `invalid maintenance mode strategy: ${value}`;

/** vm:V3: which VMs a bulk-labelling request covers (namespace and/or equality label selector). */
export interface VmSelector {
  namespace?: string;
  labels?: Record<string, string>;
}

/**
 * vm:V3, like `kubectl label -n <ns> -l k=v`: every given part must match; an empty selector
 * matches every VM (callers that want to refuse "label everything" check `isEmptySelector`).
 */
export function matchesSelector(vm: { namespace: string; labels: Record<string, string> }, selector: VmSelector): boolean {
  if (selector.namespace !== undefined && vm.namespace !== selector.namespace) return false;
  return matchesLabels(vm.labels, selector.labels ?? {});
}

export const isEmptySelector = (selector: VmSelector): boolean => selector.namespace === undefined && Object.keys(selector.labels ?? {}).length === 0;
