import type { ClusterBackend } from '../../cluster/backend.ts';
import type { VmMaintenanceTracking } from '../../cluster/types.ts';
import type { PrismaClient } from '../../store/index.ts';

/**
 * Restart tracking lives on the VM itself (Kubernetes: Harvester's annotations, so its
 * own tools agree) and, as a copy, in our database, so that a VM whose backend record
 * was lost or edited by hand is still known. Recording writes the database first: a
 * crash between the two leaves a copy that the next record or clear repairs.
 */
export class TrackingStore {
  constructor(
    private readonly prisma: PrismaClient,
    private readonly backend: ClusterBackend,
  ) {}

  async record(vmId: string, tracking: VmMaintenanceTracking, at: number): Promise<void> {
    const data = { nodeName: tracking.nodeName, strategy: tracking.strategy, savedRunStrategy: tracking.savedRunStrategy, recordedAt: new Date(at) };
    await this.prisma.vmTracking.upsert({ where: { vmId }, create: { vmId, ...data }, update: data });
    await this.backend.setVmTracking(vmId, tracking);
  }

  async clear(vmId: string): Promise<void> {
    await this.backend.setVmTracking(vmId, null);
    await this.prisma.vmTracking.deleteMany({ where: { vmId } });
  }

  /** The database copy, for VMs whose backend record lost its tracking. */
  async all(): Promise<Map<string, VmMaintenanceTracking>> {
    const rows = await this.prisma.vmTracking.findMany();
    return new Map(rows.map((r) => [r.vmId, { nodeName: r.nodeName, strategy: r.strategy, savedRunStrategy: r.savedRunStrategy as VmMaintenanceTracking['savedRunStrategy'] }]));
  }
}
