import type { ClusterBackend } from '../../cluster/backend.ts';
import type { OperationSettings } from '../../config/schema.ts';
import type { CoordinatorDeps, OperationCoordinator } from './coordinator.ts';

/** What the engine of each kind is built with. */
export interface EngineDeps extends CoordinatorDeps {
  backend: ClusterBackend;
  settings: OperationSettings;
  /** The coordinator the engine registers with and runs under. */
  operations: OperationCoordinator;
}
