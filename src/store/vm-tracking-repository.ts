import type { VmMaintenanceTracking } from '../cluster/types.ts';
import type { PrismaClient } from './index.ts';
import type { PendingWrite } from './pending-write.ts';

/** Our copy of each VM's restart tracking (the backend keeps the original on the VM). */
export class VmTrackingRepository {
  constructor(
    private readonly prisma: PrismaClient,
    /** Commits writes in one transaction (Repositories.commit: fenced on PostgreSQL). */
    private readonly commit: (writes: PendingWrite[]) => Promise<void> = async (writes) => {
      await prisma.$transaction(writes);
    },
  ) {}

  async record(vmId: string, tracking: VmMaintenanceTracking, at: number): Promise<void> {
    const data = { nodeName: tracking.nodeName, strategy: tracking.strategy, savedRunStrategy: tracking.savedRunStrategy, recordedAt: new Date(at) };
    await this.commit([this.prisma.vmTracking.upsert({ where: { vmId }, create: { vmId, ...data }, update: data })]);
  }

  async clear(vmId: string): Promise<void> {
    await this.commit([this.prisma.vmTracking.deleteMany({ where: { vmId } })]);
  }

  async all(): Promise<Map<string, VmMaintenanceTracking>> {
    const rows = await this.prisma.vmTracking.findMany();
    return new Map(
      rows.map((r) => [
        r.vmId,
        { nodeName: r.nodeName, strategy: r.strategy, savedRunStrategy: r.savedRunStrategy as VmMaintenanceTracking['savedRunStrategy'] },
      ]),
    );
  }
}
