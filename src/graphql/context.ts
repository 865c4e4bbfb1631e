import type { ClusterBackend } from '../cluster/backend.ts';
import type { Clock } from '../cluster/clock.ts';
import type { EventBus } from '../events/bus.ts';
import type { OperationEngine } from '../operations/engine.ts';
import type { MaintenanceEngine } from '../operations/maintenance/engine.ts';
import type { AuditLog } from '../store/audit-log.ts';
import { createLoaders, type Loaders } from './loaders.ts';

/** What the server shares with every request. */
export interface AppServices {
  backend: ClusterBackend;
  bus: EventBus;
  operations: OperationEngine;
  maintenance: MaintenanceEngine;
  audit: AuditLog;
  clock: Clock;
}

export interface GraphQLContext extends AppServices {
  loaders: Loaders;
  /** Who is calling; recorded in the audit log. Until tokens exist every caller is anonymous. */
  actor: string;
}

export function createContext(services: AppServices): GraphQLContext {
  return { ...services, loaders: createLoaders(services.backend), actor: 'anonymous' };
}

/** Subscriptions live long: give each event fresh loaders so no field shows a stale read. */
export function refreshLoaders(ctx: GraphQLContext): void {
  ctx.loaders = createLoaders(ctx.backend);
}
