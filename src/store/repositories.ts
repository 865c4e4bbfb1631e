import type { OperationSnapshot, StepRecord } from '../domain/operations.ts';
import { admissionRefusalOf, type AdmissionCheck } from './admission-sql.ts';
import { EventLog, eventRow, type LoggedEvent } from './event-log.ts';
import type { HotPath } from './hot-path-sql.ts';
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
  /** Commits one group commit of the journal in one transaction (the hot path: steps, operations' progress, events in order), then `also`. */
  commitJournal(
    batch: { steps: { operationId: string; step: StepRecord }[]; operations: OperationSnapshot[]; events: LoggedEvent[] },
    also?: PendingWrite[],
  ): Promise<void>;
  /** Whether other replicas admit work on this database too (PostgreSQL): admissions go through `admit`, the leader adopts what they admitted. */
  readonly shared: boolean;
  /**
   * Commits an admission (a start, a cancel, a policy change asked for by an operator) by
   * any replica, leader or not (ha:R2, ha:R4): not fenced, but on a shared database checked
   * first by `check` under the lock all admissions share, and announced to the leader at
   * commit. A refusal of the database throws its typed error (ConflictError, …).
   */
  admit(writes: PendingWrite[], check: AdmissionCheck | null): Promise<void>;
  /** Shared database: moves a RUNNING operation to CANCELLING with its event and tells the leader; false when it was not RUNNING. */
  requestCancel(operationId: string, nodeId: string | null, at: number, payload: object): Promise<boolean>;
}

/**
 * What opens every transaction of the leader's operations (ha:L3, ha:L7): on PostgreSQL with
 * several replicas, the fence statement that fails the transaction unless this replica's
 * epoch still leads; nothing on SQLite, where one process owns the file.
 */
export interface Fence {
  /** The statements to run first; throws when this replica may not write at all (a stand-by). */
  statements(): PendingWrite[];
  /** A fenced transaction failed (perhaps refused by the fence); true when the fence refused it (the replica now stands by). */
  failed(error: unknown): boolean;
}

export const NO_FENCE: Fence = { statements: () => [], failed: () => false };

export function createRepositories(
  prisma: PrismaClient,
  /** The database's hot path (`Database.hotPath`). */
  hotPath: HotPath,
  fence: Fence = NO_FENCE,
  /** Called after every commit: the readers of the event log on this replica look again (ha:E1). */
  committed: () => void = () => {},
): Repositories {
  const events = new EventLog(prisma);
  // ha:E2: first thing after the fence or the admission check (the migration `event_order` says why).
  const orderEvents = () => (hotPath.orderEvents ? [prisma.$executeRaw(hotPath.orderEvents)] : []);
  const commit = async (writes: PendingWrite[], fenceStatements = fence.statements()) => {
    const notify = hotPath.notifyEvents ? [prisma.$executeRaw(hotPath.notifyEvents)] : [];
    try {
      await prisma.$transaction([...fenceStatements, ...orderEvents(), ...writes, ...notify]);
    } catch (e) {
      fence.failed(e);
      throw e;
    }
    committed();
  };
  const admission = hotPath.admission;
  const notify = () => (hotPath.notifyEvents ? [prisma.$executeRaw(hotPath.notifyEvents)] : []);
  const admit = async (writes: PendingWrite[], check: AdmissionCheck | null) => {
    if (!admission) return commit(writes);
    const guard = check ? [prisma.$executeRaw(admission.guard(check))] : [];
    try {
      await prisma.$transaction([...guard, ...orderEvents(), ...writes, ...notify(), prisma.$executeRaw(admission.announce(check?.nodeId ?? null))]);
    } catch (e) {
      throw admissionRefusalOf(e) ?? e;
    }
    committed();
  };
  const requestCancel = async (operationId: string, nodeId: string | null, at: number, payload: object) => {
    if (!admission) throw new Error('requestCancel needs a shared database');
    const order = orderEvents();
    const results = (await prisma.$transaction([
      ...order,
      prisma.$executeRaw(admission.requestCancel(operationId, { at: new Date(at).toISOString(), payload: JSON.stringify(payload) })),
      ...notify(),
      prisma.$executeRaw(admission.announce(nodeId)),
    ])) as number[];
    committed();
    return (results[order.length] ?? 0) > 0;
  };
  return {
    operations: new OperationRepository(prisma, hotPath),
    events,
    policies: new PolicyStore(prisma, events, commit),
    maintenanceStates: new MaintenanceStateStore(prisma, events),
    vmTracking: new VmTrackingRepository(prisma, commit),
    commit: (writes) => commit(writes),
    shared: admission !== undefined,
    admit,
    requestCancel,
    commitJournal: async (journal, also = []) => {
      const now = new Date();
      const batch = {
        steps: journal.steps.map(({ operationId, step }) => stepRow(operationId, step)),
        progress: journal.operations.map((op) => progressRow(op, now)),
        events: journal.events.map(eventRow),
      };
      // Asked first: a stand-by may not write at all (it throws).
      const fenceStatements = fence.statements();
      if (hotPath.commitDirect && !fenceStatements.length && !hotPath.notifyEvents && !also.length) {
        await hotPath.commitDirect(batch);
        committed();
        return;
      }
      await commit([...hotPath.journalStatements(batch).map((sql) => prisma.$executeRaw(sql)), ...also], fenceStatements);
    },
  };
}
