/** Per-VM maintenance strategies (spec vm-maintenance §1). Pure: no I/O. */

export const MAINTENANCE_STRATEGIES = [
  'Migrate',
  'ShutdownAndRestartAfterEnable',
  'ShutdownAndRestartAfterDisable',
  'Shutdown',
] as const;
export type MaintenanceStrategy = (typeof MAINTENANCE_STRATEGIES)[number];

/** The Kubernetes label that carries the strategy (Harvester's name, so both tools agree). */
export const MAINTENANCE_STRATEGY_LABEL = 'harvesterhci.io/maintain-mode-strategy';

export function isMaintenanceStrategy(value: string): value is MaintenanceStrategy {
  return (MAINTENANCE_STRATEGIES as readonly string[]).includes(value);
}

export interface EffectiveStrategy {
  strategy: MaintenanceStrategy;
  /** False when the label holds something other than the four exact values (V2). */
  labelValid: boolean;
  /** True when the VM carries a label at all (F1 distinguishes labelled VMs). */
  labelled: boolean;
}

/**
 * The strategy a VM's raw label means. Unset means Migrate; an invalid value also means
 * Migrate and is reported as invalid so the caller can warn (V2: it never blocks).
 */
export function effectiveStrategy(raw: string | null): EffectiveStrategy {
  if (raw === null) return { strategy: 'Migrate', labelValid: true, labelled: false };
  if (isMaintenanceStrategy(raw)) return { strategy: raw, labelValid: true, labelled: true };
  return { strategy: 'Migrate', labelValid: false, labelled: true };
}
