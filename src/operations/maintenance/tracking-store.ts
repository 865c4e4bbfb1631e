import type { ClusterBackend } from '../../cluster/backend.ts';
import type { VmMaintenanceTracking } from '../../cluster/types.ts';
import type { VmTrackingRepository } from '../../store/vm-tracking-repository.ts';

/**
 * Restart tracking lives on the VM itself (Kubernetes: Harvester's annotations, so its
 * own tools agree) and, as a copy, in our database, so that a VM whose backend record
 * was lost or edited by hand is still known. Recording writes the database first: a
 * crash between the two leaves a copy that the next record or clear repairs.
 */
export class TrackingStore {
  constructor(
    private readonly copies: VmTrackingRepository,
    private readonly backend: ClusterBackend,
  ) {}

  async record(vmId: string, tracking: VmMaintenanceTracking, at: number): Promise<void> {
    await this.copies.record(vmId, tracking, at);
    await this.backend.setVmTracking(vmId, tracking);
  }

  async clear(vmId: string): Promise<void> {
    await this.backend.setVmTracking(vmId, null);
    await this.copies.clear(vmId);
  }

  /** The database copy, for VMs whose backend record lost its tracking. */
  all(): Promise<Map<string, VmMaintenanceTracking>> {
    return this.copies.all();
  }
}
