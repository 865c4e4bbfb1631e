import type { ClusterBackend } from '../../cluster/backend.ts';
import type { VmMaintenanceTracking } from '../../cluster/types.ts';
import type { VmTrackingRepository } from '../../store/vm-tracking-repository.ts';

/**
 * Restart tracking lives on the VM itself (Kubernetes: Harvester's annotations, so its
 * own tools agree) and, as a copy, in our database, so that a VM whose backend record
 * was lost or edited by hand is still known. Recording writes the database first: a
 * crash between the two leaves a copy that the next record or clear repairs. Clearing writes
 * the VM first: a crash between leaves a copy of a VM nothing tracks, which the node's next
 * disable forgets (`forgetStaleCopies`).
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

  /**
   * The copies of tracking to `nodeName` whose VM holds none (or is gone): a clear cut off
   * between its two writes (a kill after the VM's), which no later clear of that VM would
   * repair, since nothing tracks the VM any more. Called by the node's disable (vm:T2).
   */
  async forgetStaleCopies(nodeName: string, vms: readonly { id: string; tracking: VmMaintenanceTracking | null }[]): Promise<string[]> {
    const tracked = new Map(vms.map((vm) => [vm.id, vm.tracking]));
    const stale = [...(await this.all())].filter(([vmId, copy]) => copy.nodeName === nodeName && !tracked.get(vmId)).map(([vmId]) => vmId);
    for (const vmId of stale) await this.copies.clear(vmId);
    return stale;
  }

  /** The database copy, for VMs whose backend record lost its tracking. */
  all(): Promise<Map<string, VmMaintenanceTracking>> {
    return this.copies.all();
  }
}
