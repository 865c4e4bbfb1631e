import { EventLog } from './event-log.ts';
import type { HotPathSql } from './hot-path-sql.ts';
import type { PrismaClient } from './index.ts';
import { MaintenanceStateStore } from './maintenance-state-store.ts';
import { OperationRepository } from './operation-repository.ts';
import type { PendingWrite } from './pending-write.ts';
import { PolicyStore } from './policy-store.ts';
import { sqliteHotPath } from './sqlite-hot-path.ts';
import { VmTrackingRepository } from './vm-tracking-repository.ts';

/** What background operations read and write, over one database. */
export interface Repositories {
  operations: OperationRepository;
  events: EventLog;
  policies: PolicyStore;
  maintenanceStates: MaintenanceStateStore;
  vmTracking: VmTrackingRepository;
  /** Commits writes built by any of them in one transaction, in order. */
  commit(writes: PendingWrite[]): Promise<void>;
}

/**
 * What opens every transaction of the leader's operations (ha:L3, ha:L7): on PostgreSQL with
 * several replicas, the fence statement that fails the transaction unless this replica's
 * epoch still leads; nothing on SQLite, where one process owns the file.
 */
export interface Fence {
  /** The statements to run first; throws when this replica may not write at all (a stand-by). */
  statements(): PendingWrite[];
  /** A fenced transaction failed (perhaps refused by the fence). */
  failed(error: unknown): void;
}

const NO_FENCE: Fence = { statements: () => [], failed: () => {} };

export function createRepositories(
  prisma: PrismaClient,
  sql: HotPathSql = sqliteHotPath,
  fence: Fence = NO_FENCE,
  /** Called after every commit: the readers of the event log on this replica look again (ha:E1). */
  committed: () => void = () => {},
): Repositories {
  const events = new EventLog(prisma, sql);
  const commit = async (writes: PendingWrite[]) => {
    const notify = sql.notifyEvents ? [prisma.$executeRaw(sql.notifyEvents)] : [];
    try {
      await prisma.$transaction([...fence.statements(), ...writes, ...notify]);
    } catch (e) {
      fence.failed(e);
      throw e;
    }
    committed();
  };
  return {
    operations: new OperationRepository(prisma, sql),
    events,
    policies: new PolicyStore(prisma, events, commit),
    maintenanceStates: new MaintenanceStateStore(prisma, events),
    vmTracking: new VmTrackingRepository(prisma, commit),
    commit,
  };
}
