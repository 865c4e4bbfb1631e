import type { MaintenancePhase } from '../domain/vm/types.ts';
import type { EventLog } from './event-log.ts';
import type { PrismaClient } from './index.ts';
import type { PendingWrite } from './pending-write.ts';

export interface MaintenanceState {
  phase: MaintenancePhase;
  deadline: number | null;
  force: boolean;
  reason: string | null;
}

function stateOf(r: {
  maintenancePhase: string | null;
  maintenanceDeadline: Date | null;
  maintenanceForce: boolean;
  maintenanceReason: string | null;
}): MaintenanceState {
  return {
    phase: r.maintenancePhase as MaintenancePhase,
    deadline: r.maintenanceDeadline?.getTime() ?? null,
    force: r.maintenanceForce,
    reason: r.maintenanceReason,
  };
}

/**
 * The maintenance phase of each node, persisted in NodeState (vm:M6). Like the storage
 * policy, the database is the truth and the map a cache written after commit.
 */
export class MaintenanceStateStore {
  private cache = new Map<string, MaintenanceState>();

  constructor(
    private readonly prisma: PrismaClient,
    private readonly events: EventLog,
  ) {}

  async load(): Promise<void> {
    const rows = await this.prisma.nodeState.findMany({ where: { maintenancePhase: { not: null } } });
    this.cache = new Map(rows.map((r) => [r.id, stateOf(r)]));
  }

  /** Reloads one node's state: another replica changed it (ha:R2). */
  async refresh(nodeId: string): Promise<void> {
    const row = await this.prisma.nodeState.findUnique({ where: { id: nodeId } });
    if (row?.maintenancePhase) this.cache.set(nodeId, stateOf(row));
    else this.cache.delete(nodeId);
  }

  get(nodeId: string): MaintenanceState | null {
    return this.cache.get(nodeId) ?? null;
  }

  phaseOf(nodeId: string): MaintenancePhase | null {
    return this.cache.get(nodeId)?.phase ?? null;
  }

  all(): Map<string, MaintenanceState> {
    return this.cache;
  }

  /** The writes that set (or with null clear) a node's maintenance state; commit them, then call `applied`. */
  writes(nodeId: string, state: MaintenanceState | null, event: { at: number; operationId: string | null; payload: object }): PendingWrite[] {
    const data = {
      maintenancePhase: state?.phase ?? null,
      maintenanceDeadline: state?.deadline != null ? new Date(state.deadline) : null,
      maintenanceForce: state?.force ?? false,
      maintenanceReason: state?.reason ?? null,
    };
    return [
      this.prisma.nodeState.upsert({ where: { id: nodeId }, create: { id: nodeId, ...data }, update: data }),
      this.events.append({
        at: event.at,
        type: 'MAINTENANCE_PHASE_CHANGED',
        nodeId,
        operationId: event.operationId,
        payload: { from: this.phaseOf(nodeId), to: state?.phase ?? null, ...event.payload },
      }),
    ];
  }

  applied(nodeId: string, state: MaintenanceState | null): void {
    if (state) this.cache.set(nodeId, state);
    else this.cache.delete(nodeId);
  }
}
