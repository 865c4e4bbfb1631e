/**
 * The values of the enums the client verbs take, as schema.graphql spells them
 * (test/cli/documents.test.ts checks each list against the schema), and the maintenance
 * strategy labels (vm:V3). Constants only: help and completion read them without loading
 * anything else.
 */
export const ENUMS = {
  SchedulingPolicy: ['ACTIVE', 'PAUSE', 'PAUSE_FOR_RESTART', 'DRAINING', 'FILLING', 'DELETING'],
  NodeAvailability: ['ACTIVE', 'WARMING_UP', 'OFFLINE'],
  OperationState: ['RUNNING', 'PAUSED', 'CANCELLING', 'SUCCEEDED', 'FAILED', 'CANCELLED'],
  RolloutAction: ['MAINTENANCE', 'DRAIN_FILL'],
  RolloutRestart: ['WAIT_FOR_REATTACH', 'NONE', 'CONFIRM'],
  RolloutOrder: ['GIVEN', 'BY_ID', 'ZONE_BY_ZONE'],
  ShardSchedulingPolicy: ['ACTIVE', 'ESSENTIAL', 'PAUSE', 'STOP'],
} as const;

/**
 * The label values of harvesterhci.io/maintain-mode-strategy. `lockkeeper vms` prints them
 * as the MaintenanceStrategy enum (SHUTDOWN_AND_RESTART_AFTER_ENABLE); either spelling, in
 * any case, is taken.
 */
export const VM_STRATEGY_LABELS = ['Migrate', 'ShutdownAndRestartAfterEnable', 'ShutdownAndRestartAfterDisable', 'Shutdown'] as const;
