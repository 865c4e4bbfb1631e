import type { OperationSnapshot, StepRecord } from '../domain/operations.ts';
import { hotPathOf } from './database.ts';
import { EventLog, eventRow, type LoggedEvent } from './event-log.ts';
import type { PrismaClient } from './index.ts';
import { MaintenanceStateStore } from './maintenance-state-store.ts';
import { OperationRepository, progressRow, stepRow } from './operation-repository.ts';
import type { PendingWrite } from './pending-write.ts';
import { PolicyStore } from './policy-store.ts';
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
  /** Commits one group commit of the journal in one transaction (the hot path: steps, operations' progress, events in order). */
  commitJournal(batch: { steps: { operationId: string; step: StepRecord }[]; operations: OperationSnapshot[]; events: LoggedEvent[] }): Promise<void>;
}

export function createRepositories(prisma: PrismaClient): Repositories {
  const hotPath = hotPathOf(prisma);
  const events = new EventLog(prisma);
  return {
    operations: new OperationRepository(prisma, hotPath),
    events,
    policies: new PolicyStore(prisma, events),
    maintenanceStates: new MaintenanceStateStore(prisma, events),
    vmTracking: new VmTrackingRepository(prisma),
    commit: async (writes) => {
      await prisma.$transaction(writes);
    },
    commitJournal: (batch) => {
      const now = new Date();
      return hotPath.commit({
        steps: batch.steps.map(({ operationId, step }) => stepRow(operationId, step)),
        progress: batch.operations.map((op) => progressRow(op, now)),
        events: batch.events.map(eventRow),
      });
    },
  };
}
