import type { ClusterBackend } from '../cluster/backend.ts';
import { ANONYMOUS_ADMIN, type AuthService, type Identity } from '../auth/service.ts';
import type { Clock } from '../cluster/clock.ts';
import type { EventBus } from '../events/bus.ts';
import type { OperationCoordinator } from '../operations/core/coordinator.ts';
import type { RemainingReader } from '../operations/core/remaining-reader.ts';
import type { DeleteEngine } from '../operations/delete/engine.ts';
import type { FailoverEngine } from '../operations/failover/engine.ts';
import type { MaintenanceEngine } from '../operations/maintenance/engine.ts';
import type { ShardControls } from '../operations/shard-controls/service.ts';
import type { RolloutEngine } from '../operations/rollouts/engine.ts';
import type { StorageEngine } from '../operations/storage/engine.ts';
import type { RehearsalService } from '../rehearsal/service.ts';
import type { AuditLog } from '../store/audit-log.ts';
import type { EventLog } from '../store/event-log.ts';
import type { Leadership } from '../leadership/leadership.ts';
import type { EventWakeup } from '../events/event-wakeup.ts';
import type { DatabaseAvailability } from '../store/database-availability.ts';
import { createLoaders, type Loaders } from './loaders.ts';

/** What the server shares with every request. */
export interface AppServices {
  backend: ClusterBackend;
  bus: EventBus;
  /** Every operation, of any kind: reads and progress. */
  operations: OperationCoordinator;
  storage: StorageEngine;
  maintenance: MaintenanceEngine;
  rollouts: RolloutEngine;
  /** Rehearsals of rollouts (issue 33). */
  rehearsals: RehearsalService;
  /** Failover and commanded availability (neon:H5, neon:E6). */
  failover: FailoverEngine;
  /** Node deletes (neon:L4–L7). */
  deletes: DeleteEngine;
  /** Per-shard controls (neon:W1–W9). */
  shardControls: ShardControls;
  audit: AuditLog;
  events: EventLog;
  clock: Clock;
  auth: AuthService;
  /** What would lose service if a node restarted now (domain/remaining.ts). */
  remaining: RemainingReader;
  /** Which replica leads (ha:L1). */
  leadership: Leadership;
  /** Wakes event-log subscribers when events were committed, here or on another replica (ha:E1). */
  eventWakeup: EventWakeup;
  /** Whether the database answers; turns an outage into a typed UNAVAILABLE naming it (issue 27). */
  database?: DatabaseAvailability;
}

export interface GraphQLContext extends AppServices {
  loaders: Loaders;
  /** Who is calling and with which scope (src/auth); scope-auth checks fields against it. */
  identity: Identity;
  /** Recorded in the audit log: the token's name (`anonymous` when auth is off). */
  actor: string;
}

export function createContext(services: AppServices, identity: Identity = ANONYMOUS_ADMIN): GraphQLContext {
  return { ...services, loaders: createLoaders(services), identity, actor: identity.name };
}

/** Subscriptions live long: give each event fresh loaders so no field shows a stale read. */
export function refreshLoaders(ctx: GraphQLContext): void {
  ctx.loaders = createLoaders(ctx);
}
