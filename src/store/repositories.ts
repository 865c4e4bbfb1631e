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

export function createRepositories(prisma: PrismaClient, sql: HotPathSql = sqliteHotPath): Repositories {
  const events = new EventLog(prisma, sql);
  return {
    operations: new OperationRepository(prisma, sql),
    events,
    policies: new PolicyStore(prisma, events),
    maintenanceStates: new MaintenanceStateStore(prisma, events),
    vmTracking: new VmTrackingRepository(prisma),
    commit: async (writes) => {
      await prisma.$transaction(writes);
    },
  };
}
