import type { MaintenanceDelegate } from '../../cluster/node-maintenance.ts';
import type { ClusterVm } from '../../cluster/types.ts';
import type { OperationSnapshot, StepRecord } from '../../domain/operations.ts';
import { harvesterDrainImpossible } from '../../domain/vm/harvester.ts';
import type { MaintenancePhase } from '../../domain/vm/types.ts';
import { MaintenanceRun, type MaintenanceHost, type MaintenanceRunOptions } from './run.ts';

const RECHECK_MS = 5_000;

/**
 * k8s:H9 (Decision, delegate on Harvester clusters): Lockkeeper validated and planned; now
 * it only writes the request exactly as Harvester's API does (k8s:H2 step 1) and follows
 * Harvester's controllers (steps 2–6) from the node's annotations and the VMs: DRAINING
 * until `maintain-status: running`, EVACUATING until `completed`, ERROR when Harvester drops
 * the request, or at the deadline. It never halts, migrates or evicts itself.
 */
export class DelegatedMaintenanceRun extends MaintenanceRun {
  private lastMark: string | null = null;

  constructor(
    host: MaintenanceHost,
    snapshot: OperationSnapshot,
    steps: StepRecord[],
    deadlineAt: number,
    phase: MaintenancePhase,
    options: MaintenanceRunOptions,
    private readonly delegate: MaintenanceDelegate,
  ) {
    super(host, snapshot, steps, deadlineAt, phase, options);
  }

  protected override async run(): Promise<void> {
    const { host } = this;
    const cancelDeadline = host.clock.setTimer(Math.max(0, this.deadlineAt - host.clock.now()), () => this.nudge());
    try {
      this.startShardDrain();
      if (this.phase === 'DRAINING') await this.markNode('REQUESTED');
      for (;;) {
        const woken = this.nextWakeUp();
        if (this.halted) return;
        const view = await this.retrying(`read node ${this.nodeId}`, () => this.delegate.observe(this.nodeId));
        const onNode = await this.runningOnNode();
        if (this.halted) return;
        if (onNode) this.follow(onNode);
        this.lastMark = view.mark;
        if (view.mark === null) {
          const why = view.failure ?? (await this.explainRefusal());
          await this.end('FAILED', `HARVESTER_FAILED: Harvester's controller removed the maintenance request from node ${this.nodeId}: ${why}`);
          return;
        }
        if ((view.mark === 'RUNNING' || view.mark === 'COMPLETED') && this.phase === 'DRAINING') await this.enterPhase('EVACUATING');
        const shardFailure = this.shardDrainFailure();
        if (shardFailure) {
          await this.end('FAILED', shardFailure);
          return;
        }
        if (view.mark === 'COMPLETED') this.follow(onNode ?? [], true);
        // Harvester's `completed` covers VMs and pods; the node's shards are Lockkeeper's own to move first.
        if (view.mark === 'COMPLETED' && this.shardsDone) {
          await this.end('SUCCEEDED', null);
          return;
        }
        this.showWaiting(onNode ?? []);
        if (host.clock.now() >= this.deadlineAt) {
          const list = (onNode ?? []).map((vm) => vm.id).join(', ');
          await this.end(
            'FAILED',
            view.mark === 'COMPLETED'
              ? `DEADLINE_EXCEEDED: Harvester's controllers finished, the node's shards did not move in time`
              : `DEADLINE_EXCEEDED: Harvester's controllers did not finish (maintain-status ${view.mark === 'RUNNING' ? 'running' : 'not set'}); still on the node: ${list || 'none'}`,
          );
          return;
        }
        await this.waitAtMost(woken, RECHECK_MS);
      }
    } catch (e) {
      if (this.halted) return;
      const message = e instanceof Error ? e.message : String(e);
      await this.end('FAILED', `FAILED: ${message}`);
    } finally {
      cancelDeadline();
    }
  }

  /** Harvester records no reason on the node: Lockkeeper applies Harvester's own check (k8s:H8) to say what it most likely was. */
  private async explainRefusal(): Promise<string> {
    const nodes = await this.retrying('list nodes', () => this.host.backend.listNodes());
    const views = nodes.map((n) => ({ id: n.id, labels: n.labels, maintainStatus: n.maintenanceMark === 'RUNNING' || n.maintenanceMark === 'COMPLETED' }));
    return (
      harvesterDrainImpossible(this.nodeId, views) ??
      "it records no reason on the node (Harvester's checks: control-plane count, non-migratable VMs without force)"
    );
  }

  /** Steps follow what Harvester did: a VM no longer running on the node is done (`all`: every step, at `completed`). */
  private follow(onNode: ClusterVm[], all = false): void {
    const still = new Set(onNode.map((vm) => vm.id));
    for (const step of this.steps) {
      if (step.state !== 'PLANNED' && step.state !== 'MOVING') continue;
      if (step.state === 'PLANNED') this.startStep(step);
      if (all || !still.has(step.workloadId)) this.finishStep(step, 'MOVED', step.reason, null);
    }
  }

  protected override describe(vm: ClusterVm): string {
    const by = `${this.delegate.controller} (maintain-status ${this.lastMark === 'RUNNING' ? 'running' : this.lastMark === 'REQUESTED' ? 'not yet set: drain-requested' : 'unknown'})`;
    return `${super.describe(vm)}; handled by ${by}`;
  }
}
