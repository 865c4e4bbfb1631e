/**
 * Harvester's node maintenance state (k8s:H1) for backends that keep one, and the
 * delegation to Harvester's own controllers (k8s:H9).
 */

/** k8s:H1/H3: what the node carries: the request (`drain-requested`, with `drain-forced`), `maintain-status: running`, `completed`. */
export type NodeMaintenanceMark = 'REQUESTED' | 'RUNNING' | 'COMPLETED';

/** A migration Lockkeeper cancelled (k8s:C9) and where its VM is now (k8s:C3: read, not assumed). */
export interface CancelledMigration {
  vmId: string;
  migration: string;
  /** The VM's node after the cancel; null when it no longer runs. */
  nodeId: string | null;
}

/** What Harvester's controllers show on the node (k8s:H9). */
export interface DelegatedMaintenanceView {
  mark: NodeMaintenanceMark | null;
  /** Harvester removed the request after failing: its reason, when it left one. */
  failure: string | null;
}

export interface NodeMaintenanceBackend {
  /**
   * k8s:H3: one update of the node's annotations: REQUESTED writes `drain-requested` (and
   * `drain-forced` when `forced`), RUNNING writes `maintain-status: running` and removes
   * both request annotations, COMPLETED writes `completed`. Idempotent.
   */
  markMaintenance(nodeId: string, mark: NodeMaintenanceMark, options: { forced: boolean }): Promise<void>;
  /** k8s:H4: one update: uncordon, the first `kubevirt.io/drain` taint and the three annotations removed. */
  clearMaintenance(nodeId: string): Promise<void>;
  /** k8s:C9: deletes Lockkeeper's own non-final migrations of VMs on the node, then reads where each VM is. */
  cancelMigrations(nodeId: string): Promise<CancelledMigration[]>;
  /**
   * k8s:H9: Harvester's controllers run in this cluster (or the config says so): Lockkeeper
   * only requests and follows; null when Lockkeeper acts itself.
   */
  readonly delegate: MaintenanceDelegate | null;
}

export interface MaintenanceDelegate {
  /** Who does the work, for /healthz and plans. */
  readonly controller: string;
  /** Why this mode: detected, or forced by the config. */
  readonly reason: string;
  /** The node as Harvester's controllers left it. */
  observe(nodeId: string): Promise<DelegatedMaintenanceView>;
}
