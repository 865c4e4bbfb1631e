import { isBackendError } from '../../cluster/errors.ts';
import { retry } from '../../cluster/retry.ts';
import type { ClusterBackend } from '../../cluster/backend.ts';
import type { NodeMaintenanceMark } from '../../cluster/node-maintenance.ts';
import type { ClusterVm, RunStrategy } from '../../cluster/types.ts';
import type { PodDrainOptions } from '../../domain/pods/drain.ts';
import {
  countsOf,
  nodeOf,
  type OperationCounts,
  type OperationOutcome,
  type OperationSnapshot,
  type StepRecord,
  type WaitingOn,
} from '../../domain/operations.ts';
import { reasonsLeftBy } from '../../domain/remaining.ts';
import type { MaintenancePhase } from '../../domain/vm/types.ts';
import { shardStepEvent, StorageRun } from '../storage/run.ts';
import type { JournalWriter } from '../core/journal.ts';
import type { LiveRun } from '../core/live-runs.ts';
import { StepRun, type FinishedStepState, type StepRunHost } from '../core/step-run.ts';
import type { OperationSettings } from '../../config/schema.ts';
import type { MigrationLimiter } from './migration-limiter.ts';
import { PodDrainPhase } from './pod-drain-phase.ts';
import { isDepartureStep, isStopStep, VM_STEP } from './steps.ts';
import { evictVm } from './vm-eviction.ts';
import type { TrackingStore } from './tracking-store.ts';

/**
 * A run ends SUCCEEDED when the node reached COMPLETED and FAILED when it went to ERROR;
 * either way the node stays in maintenance.
 */
export interface MaintenanceHost extends StepRunHost<MaintenanceRun> {
  backend: ClusterBackend;
  settings: OperationSettings;
  limiter: MigrationLimiter;
  tracking: TrackingStore;
  nodeName(nodeId: string): string;
  setPhase(run: MaintenanceRun, phase: MaintenancePhase): Promise<void>;
  /** Starts the drain of the node's shards inside this operation (hyperconverged nodes). */
  startShardDrain(
    run: MaintenanceRun,
    steps: StepRecord[],
    journal: JournalWriter,
    onEnd: (outcome: OperationOutcome, failure: string | null) => void,
  ): LiveRun;
}

/** What a run was started with besides its steps (kept in the operation's params, so a resumed run has it). */
export interface MaintenanceRunOptions {
  force: boolean;
  /** k8s:K4: the pod drain's options; null: no pod drain (the backend runs no pods). */
  podDrain: PodDrainOptions | null;
}

const WAITING_SAMPLE = 20;
const RECHECK_MS = 15_000;

const every = (ms: number) => (ms < 1000 ? `${ms} ms` : `${Math.round(ms / 1000)} s`);
const isRunning = (vm: ClusterVm) => vm.status !== 'Stopped';

/**
 * One node's maintenance after validation: DRAINING (record tracking and stop the
 * shutdown-class VMs in namespace/name order, cordon, start the migrations within the
 * limits), EVACUATING (wait until no running VM is left, saying on what), then restart
 * the RestartAfterEnable VMs elsewhere and COMPLETED (vm:M2–M4). A deadline moves it to
 * ERROR with every VM still on the node and its blocker (vm:M5).
 */
export class MaintenanceRun extends StepRun<MaintenanceRun> {
  protected readonly steps: StepRecord[];
  private readonly shardSteps: StepRecord[];
  private shardRun: LiveRun | null = null;
  /** How the shard drain ended; null while it runs. */
  private shardEnd: { outcome: OperationOutcome; failure: string | null } | null = null;
  /** Set while a backend call waits to be retried (shown in waitingOn). */
  protected retryNote: string | null = null;
  /**
   * Every action has been issued: stops sent, node cordoned, migrations queued (vm:M2 → vm:M3).
   * A queued migration counts as issued even while it waits for a slot, as a KubeVirt
   * migration object waits in its Pending phase.
   */
  private issuedAll: boolean;
  protected blockers = new Map<string, string>();
  /** STOP_AND_RESTART VMs that are stopped and wait for the node to empty (vm:M4). */
  private readonly stoppedForRestart = new Set<string>();
  /** The node's other pods, once the VMs are gone (k8s:K9). */
  private podDrain: PodDrainPhase | null = null;

  constructor(
    protected override readonly host: MaintenanceHost,
    snapshot: OperationSnapshot,
    steps: StepRecord[],
    readonly deadlineAt: number,
    public phase: MaintenancePhase,
    protected readonly options: MaintenanceRunOptions = { force: false, podDrain: null },
  ) {
    super(host, snapshot);
    this.steps = steps.filter((s) => s.workloadKind === 'vm').sort((a, b) => a.seq - b.seq);
    this.shardSteps = steps.filter((s) => s.workloadKind === 'shard');
    this.counts = countsOf(this.steps);
    if (!this.shardSteps.some((s) => s.state === 'PLANNED' || s.state === 'MOVING')) this.shardEnd = { outcome: 'SUCCEEDED', failure: null };
    this.issuedAll = phase !== 'DRAINING';
  }

  override get nodeId(): string {
    return nodeOf(this.snapshot);
  }

  /** The steps under way now (VM actions and shard cut-overs), e.g. when the maintenance is disabled. */
  inFlight(): StepRecord[] {
    const shards = this.shardRun instanceof StorageRun ? this.shardRun.inFlightSteps() : this.shardSteps.filter((s) => s.state === 'MOVING');
    return [...this.steps.filter((s) => s.state === 'MOVING' && !this.awaitingRestart(s)), ...shards];
  }

  /**
   * disable with `force: true` (issue 17): the VM actions and shard cut-overs in flight are
   * recorded ABANDONED with their last known state, and the run stops now. Returns them.
   */
  abandonAll(): StepRecord[] {
    const part = this.shardRun instanceof StorageRun ? this.shardRun : null;
    const shards = part ? part.abandonInFlight(part.inFlightSteps(), (s) => part.lastKnown(s)) : [];
    const vms = this.steps.filter((s) => s.state === 'MOVING' && !this.awaitingRestart(s));
    return [...this.abandonInFlight(vms, (s) => this.lastKnownOf(s)), ...shards];
  }

  private lastKnownOf(step: StepRecord): string {
    const since = step.startedAt === null ? '' : ` since ${new Date(step.startedAt).toISOString()}`;
    const to = step.toNodeId ? ` to node ${step.toNodeId}` : '';
    return `${step.action.toLowerCase()} of VM ${step.workloadId}${to} in flight${since}, not confirmed by the backend`;
  }

  /** Why its skipped and failed steps left their VMs and shards, and its pod drain its pods (domain/remaining.ts). */
  leftBecause(): Map<string, string> {
    const shards = this.shardRun instanceof StorageRun ? this.shardRun.leftBecause() : reasonsLeftBy(this.shardSteps);
    return new Map([...reasonsLeftBy(this.steps), ...shards, ...(this.podDrain?.leftBecause() ?? [])]);
  }

  protected override onHalt(): void {
    this.shardRun?.halt();
  }

  protected async run(): Promise<void> {
    const { host } = this;
    const cancelDeadline = host.clock.setTimer(Math.max(0, this.deadlineAt - host.clock.now()), () => this.nudge());
    try {
      this.startShardDrain();
      if (this.phase === 'DRAINING') {
        // k8s:H3: the request goes on the node first, as Harvester's API writes it, before any stop.
        await this.markNode('REQUESTED');
        if (this.halted) return;
        // vm:M2 (a): stops first, in namespace/name order; tracking is recorded before each stop.
        // MOVING too: a run resumed in DRAINING finds the steps a killed gateway had begun (vm:M6).
        for (const step of this.steps) if (isOpen(step) && isStopStep(step)) this.launch(step, () => this.stopOne(step));
        // vm:M2 (b): cordon, so nothing new lands here and restarts go elsewhere.
        await this.retrying('cordon', () => host.backend.cordonNode(this.nodeId));
        if (this.halted) return;
        // vm:M2 (c): live-migrate the rest, within the cluster and per-node limits.
        for (const step of this.steps) if (isOpen(step) && step.action === VM_STEP.MIGRATE) this.launch(step, () => this.migrateOne(step));
        // k8s:E5: eviction strategies None (evict the launcher pod) and External (left alone), after the cordon.
        for (const step of this.steps) if (isOpen(step) && isDepartureStep(step)) this.launchDeparture(step);
        this.issuedAll = true;
      } else {
        for (const step of this.steps) {
          if (!isOpen(step)) continue;
          if (isDepartureStep(step)) this.launchDeparture(step);
          else this.launch(step, () => (step.action === VM_STEP.MIGRATE ? this.migrateOne(step) : this.stopOne(step)));
        }
      }
      for (;;) {
        const woken = this.nextWakeUp();
        if (this.halted) return;
        if (this.phase === 'DRAINING' && this.issuedAll) await this.enterPhase('EVACUATING');
        const onNode = await this.runningOnNode();
        if (this.halted) return;
        if (onNode !== null) this.settleDepartures(onNode);
        if (onNode === null) {
          if (host.clock.now() >= this.deadlineAt) {
            await this.end('FAILED', `DEADLINE_EXCEEDED: ${this.retryNote}`);
            return;
          }
          // The backend did not answer: the operation pauses and says so (retryNote), then looks again.
          this.showWaiting([]);
          await this.waitAtMost(woken, Math.max(1, host.settings.migrationRetryDelayMs));
          continue;
        }
        const actionsDone = this.steps.every((s) => s.state !== 'PLANNED' && (s.state !== 'MOVING' || this.awaitingRestart(s)));
        const shardFailure = this.shardDrainFailure();
        if (shardFailure) {
          await this.end('FAILED', shardFailure);
          return;
        }
        if (actionsDone && onNode.length === 0 && this.shardEnd) {
          // k8s:K9: the node's other pods go once no VM runs there; COMPLETED waits for them.
          const drained = await this.drainPods();
          if (this.halted) return;
          if (drained !== null) {
            await this.end('FAILED', drained);
            return;
          }
          // k8s:H3: migrations, evictions and the pod drain are done: `running`, then `completed` at COMPLETED.
          await this.markNode('RUNNING');
          await this.restartAfterEnable();
          if (this.halted) return;
          await this.markNode('COMPLETED');
          if (this.halted) return;
          await this.end('SUCCEEDED', null);
          return;
        }
        this.showWaiting(onNode);
        if (host.clock.now() >= this.deadlineAt) {
          const list = onNode.map((vm) => `${vm.id} (${this.blockers.get(vm.id) ?? this.describe(vm)})`).join(', ');
          host.log.warn(
            { node: this.nodeId, operation: this.snapshot.id, vms: onNode.map((v) => v.id) },
            `maintenance of node ${this.nodeId} missed its deadline; still on the node: ${list}`,
          );
          await this.end('FAILED', `DEADLINE_EXCEEDED: still on the node: ${list || 'none'}`);
          return;
        }
        // Look again now and then even without events: a backend whose watch is down sends none.
        await this.waitAtMost(woken, RECHECK_MS);
      }
    } catch (e) {
      // A refusal the run cannot get past (e.g. the cordon is forbidden): ERROR, with why.
      if (this.halted) return;
      const message = e instanceof Error ? e.message : String(e);
      host.log.error({ err: e, node: this.nodeId, operation: this.snapshot.id }, `maintenance of node ${this.nodeId} failed: ${message}`);
      await this.end('FAILED', `FAILED: ${message}`);
    } finally {
      cancelDeadline();
    }
  }

  /**
   * Shards go by the storage drain rules, alongside the VMs, under this operation (a
   * hyperconverged node); also when Harvester's controllers handle the VMs and pods (k8s:H9),
   * which know nothing of shards.
   */
  protected startShardDrain(): void {
    if (this.shardEnd) return;
    const { host } = this;
    const journal: JournalWriter = {
      step: (id, step) => host.journal.step(id, step),
      event: (e) => host.journal.event(e),
      operation: () => this.publishCounts(),
    };
    this.shardRun = host.startShardDrain(
      this,
      this.shardSteps.map((s) => (s.state === 'MOVING' ? { ...s, state: 'PLANNED' as const, startedAt: null } : s)),
      journal,
      (outcome, failure) => {
        this.shardEnd = { outcome, failure };
        this.publishCounts();
        this.nudge();
      },
    );
  }

  /** Whether the node's shards have all moved (or it had none). */
  protected get shardsDone(): boolean {
    return this.shardEnd?.outcome === 'SUCCEEDED';
  }

  /** Why the maintenance fails because of its shard drain, or null. */
  protected shardDrainFailure(): string | null {
    if (!this.shardEnd || this.shardEnd.outcome === 'SUCCEEDED') return null;
    return `SHARD_DRAIN_${this.shardEnd.outcome}${this.shardEnd.failure ? `: ${this.shardEnd.failure}` : ''}`;
  }

  /** k8s:H3: Harvester's node state, on backends that keep it. */
  protected async markNode(mark: NodeMaintenanceMark): Promise<void> {
    const marks = this.host.backend.nodeMaintenance;
    if (!marks) return;
    await this.retrying(`mark node ${this.nodeId} ${mark.toLowerCase()}`, () => marks.markMaintenance(this.nodeId, mark, { forced: this.options.force }));
  }

  /** k8s:K5–K8 on backends that run pods; null when done, else why the maintenance fails. */
  private async drainPods(): Promise<string | null> {
    const backend = this.host.backend.podDrain;
    const options = this.options.podDrain;
    if (!backend || !options) return null;
    const { host } = this;
    this.podDrain = new PodDrainPhase({
      backend,
      clock: host.clock,
      log: host.log,
      nodeId: this.nodeId,
      deadlineAt: this.deadlineAt,
      options,
      halted: () => this.halted,
      progress: () => this.showWaiting([]),
      event: (type, payload) => host.journal.event({ type, nodeId: this.nodeId, operationId: this.snapshot.id, at: host.clock.now(), payload }),
    });
    const outcome = await this.retrying(`drain the pods of node ${this.nodeId}`, () => this.podDrain!.run());
    switch (outcome.kind) {
      case 'DONE':
      case 'HALTED':
        this.podDrain = null;
        return null;
      case 'REFUSED':
        return `POD_DRAIN_REFUSED: ${outcome.message}`;
      case 'FAILED':
        return `POD_EVICTION_FAILED: ${outcome.message}`;
      case 'DEADLINE':
        host.log.warn({ node: this.nodeId, operation: this.snapshot.id }, `maintenance of node ${this.nodeId} missed its deadline; ${outcome.message}`);
        return `DEADLINE_EXCEEDED: ${outcome.message}`;
    }
  }

  /** k8s:E5: EVICT steps evict the launcher pod; WAIT_EXTERNAL steps only wait. Both end when the VM has left (settleDepartures). */
  private launchDeparture(step: StepRecord): void {
    if (step.state === 'PLANNED') this.startStep(step);
    if (step.action !== VM_STEP.EVICT) return;
    const backend = this.host.backend.podDrain;
    if (!backend) return this.finishStep(step, 'FAILED', 'REJECTED', 'the backend cannot evict pods');
    this.launch(step, () =>
      evictVm(
        { backend, clock: this.host.clock, deadlineAt: this.deadlineAt, halted: () => this.halted, grace: this.options.podDrain?.gracePeriodSeconds ?? -1 },
        step.workloadId,
        (note) => {
          if (note) this.blockers.set(step.workloadId, note);
          else this.blockers.delete(step.workloadId);
          this.nudge();
        },
      ).then((failure) => {
        if (failure) this.finishStep(step, 'FAILED', 'EVICTION_FAILED', failure);
      }),
    );
  }

  /** EVICT and WAIT_EXTERNAL steps whose VM is no longer running on the node are done. */
  private settleDepartures(onNode: ClusterVm[]): void {
    const still = new Set(onNode.map((vm) => vm.id));
    for (const step of this.steps) {
      if (step.state !== 'MOVING' || !isDepartureStep(step) || still.has(step.workloadId)) continue;
      this.blockers.delete(step.workloadId);
      this.finishStep(step, 'MOVED', step.reason, null);
    }
  }

  protected async enterPhase(phase: MaintenancePhase): Promise<void> {
    this.phase = phase;
    await this.host.setPhase(this, phase);
  }

  /** A STOP_AND_RESTART VM that is stopped and waits for the node to empty (vm:M4). */
  /** Stopped until the node's maintenance ends, or left to an external controller: waiting is their job. */
  protected override stallExempt(step: StepRecord): boolean {
    return this.awaitingRestart(step) || step.action === VM_STEP.WAIT_EXTERNAL;
  }

  private awaitingRestart(step: StepRecord): boolean {
    return step.state === 'MOVING' && this.stoppedForRestart.has(step.workloadId);
  }

  private async stopOne(step: StepRecord): Promise<void> {
    const { backend, tracking, clock, log } = this.host;
    const vm = await this.retrying(`read ${step.workloadId}`, () => backend.getVm(step.workloadId));
    if (!vm) return this.finishStep(step, 'SKIPPED', 'VM_GONE', 'the VM was deleted during maintenance');
    this.startStep(step);
    const restartsLater = step.reason === 'AFTER_ENABLE' || step.reason === 'AFTER_DISABLE';
    if (vm.nodeId !== null && vm.nodeId !== this.nodeId && step.action === VM_STEP.STOP_AND_RESTART && vm.runStrategy !== 'Halted') {
      // Resumed after its restart elsewhere had already happened (the cluster finished a start the
      // killed gateway never saw end): the restart is done, so its tracking goes (vm:T2), not again.
      await this.retrying(`clear tracking of ${vm.id}`, () => tracking.clear(vm.id));
      return this.finishStep(step, 'MOVED', step.reason, null);
    }
    if (vm.runStrategy !== 'Halted' && restartsLater) {
      // vm:T1: record before stopping; the strategy in force now decides the restart (vm:T3).
      const record = { nodeName: this.host.nodeName(this.nodeId), strategy: strategyOf(step), savedRunStrategy: vm.runStrategy };
      await this.retrying(`record tracking of ${vm.id}`, () => tracking.record(vm.id, record, clock.now()));
    }
    log.info({ operation: this.snapshot.id, vm: vm.id, node: this.nodeId }, `stopping VM ${vm.id} for maintenance (${strategyOf(step)})`);
    try {
      await this.retrying(`stop ${vm.id}`, () => backend.stopVm(vm.id));
    } catch (e) {
      // Deleted meanwhile: gone, not a failure that blocks the node.
      if (isBackendError(e, 'NotFound')) return this.finishStep(step, 'SKIPPED', 'VM_GONE', 'the VM was deleted during maintenance');
      throw e;
    }
    if (step.action === VM_STEP.STOP_AND_RESTART) {
      this.stoppedForRestart.add(step.workloadId);
      return;
    }
    // Stopped, not moved: it stays off (Shutdown, force) or restarts on disable.
    this.finishStep(step, 'STOPPED', step.reason, null);
  }

  private async migrateOne(step: StepRecord): Promise<void> {
    const { backend, clock, limiter, settings, log } = this.host;
    for (;;) {
      if (this.halted) return;
      const vm = await this.retrying(`read ${step.workloadId}`, () => backend.getVm(step.workloadId));
      if (!vm) return this.finishStep(step, 'SKIPPED', 'VM_GONE', 'the VM was deleted during maintenance');
      if (vm.nodeId !== this.nodeId || !isRunning(vm)) {
        if (step.state === 'PLANNED') this.startStep(step);
        return this.finishStep(step, 'MOVED', null, null);
      }
      const release = await limiter.acquire(this.nodeId);
      if (this.halted) return release();
      if (step.state === 'PLANNED') this.startStep(step);
      try {
        log.info({ operation: this.snapshot.id, vm: vm.id, node: this.nodeId, to: step.toNodeId }, `migrating VM ${vm.id} to node ${step.toNodeId}`);
        await backend.migrateVm(vm.id, { fromNodeId: this.nodeId, ...(step.toNodeId && { toNodeId: step.toNodeId }) });
        this.blockers.delete(vm.id);
        return this.finishStep(step, 'MOVED', null, null);
      } catch (e) {
        const message = e instanceof Error ? e.message : String(e);
        if (isBackendError(e) && e.retryable && clock.now() < this.deadlineAt) {
          this.blockers.set(vm.id, `migration failed (${message}); retrying`);
          this.update(step, { error: message });
          await clock.sleep(settings.migrationRetryDelayMs);
          continue;
        }
        this.blockers.set(vm.id, `migration failed: ${message}`);
        return this.finishStep(step, 'FAILED', isBackendError(e) ? e.code.toUpperCase() : 'ERROR', message);
      } finally {
        release();
      }
    }
  }

  /** vm:M4: the node is empty; RestartAfterEnable VMs start again, elsewhere (the node is cordoned). */
  private async restartAfterEnable(): Promise<void> {
    const { backend, tracking, log } = this.host;
    const waiting = this.steps.filter((s) => this.awaitingRestart(s));
    await Promise.all(
      waiting.map(async (step) => {
        const vm = await this.retrying(`read ${step.workloadId}`, () => backend.getVm(step.workloadId));
        if (!vm) return this.finishStep(step, 'SKIPPED', 'VM_GONE', 'the VM was deleted during maintenance');
        const runStrategy: RunStrategy = vm.tracking?.savedRunStrategy ?? 'RerunOnFailure';
        if (vm.runStrategy === 'Halted') {
          log.info({ operation: this.snapshot.id, vm: vm.id }, `restarting VM ${vm.id} shut down for maintenance (run strategy ${runStrategy})`);
          try {
            await this.retrying(`start ${vm.id}`, () => backend.startVm(vm.id, { runStrategy, ...(step.toNodeId && { nodeId: step.toNodeId }) }));
          } catch (e) {
            if (isBackendError(e, 'NotFound')) return this.finishStep(step, 'SKIPPED', 'VM_GONE', 'the VM was deleted during maintenance');
            return this.finishStep(step, 'FAILED', 'RESTART_FAILED', e instanceof Error ? e.message : String(e));
          }
        }
        // vm:T2: tracking goes once the VM runs again (or was started by hand meanwhile).
        await this.retrying(`clear tracking of ${vm.id}`, () => tracking.clear(vm.id));
        this.finishStep(step, 'MOVED', step.reason, null);
      }),
    );
  }

  /** The VMs still running on the node; null while the backend cannot be read (retryable error). */
  protected async runningOnNode(): Promise<ClusterVm[] | null> {
    try {
      const vms = (await this.host.backend.listVms({ nodeId: this.nodeId })).filter(isRunning);
      if (this.retryNote?.startsWith('reading')) this.retryNote = null;
      return vms;
    } catch (e) {
      if (!isBackendError(e) || !e.retryable) throw e;
      this.retryNote = `reading the VMs on node ${this.nodeId} failed (${e.message}); retrying every ${every(this.host.settings.migrationRetryDelayMs)}`;
      this.host.log.warn({ node: this.nodeId, err: e }, this.retryNote);
      return null;
    }
  }

  /** Transient backend errors are retried until the deadline; anything else is thrown. */
  protected async retrying<T>(what: string, action: () => Promise<T>): Promise<T> {
    const { clock, settings, log } = this.host;
    return retry(
      async (attempt) => {
        if (attempt > 1) this.retryNote = null;
        return action();
      },
      {
        clock,
        maxAttempts: Infinity,
        delayMs: () => Math.max(1, settings.migrationRetryDelayMs),
        retryable: (e) => isBackendError(e) && e.retryable && clock.now() < this.deadlineAt && !this.halted,
        onRetry: (e) => {
          const message = e instanceof Error ? e.message : String(e);
          log.warn({ node: this.nodeId, err: e }, `${what} failed, retrying: ${message}`);
          // Say so in the progress: the operation is paused on the backend, not stuck.
          this.retryNote = `${what} failed (${message}); retrying every ${every(settings.migrationRetryDelayMs)}`;
          this.nudge();
        },
      },
    );
  }

  protected describe(vm: ClusterVm): string {
    const step = this.steps.find((s) => s.workloadId === vm.id);
    if (!step) return 'not part of the plan (started on the node after maintenance began)';
    if (step.action === VM_STEP.WAIT_EXTERNAL) return 'eviction strategy External: waiting for an external controller to move it (Lockkeeper leaves it alone)';
    // k8s:C9 (c): a migration someone else started is waited on, never cancelled: say whose it is.
    if (vm.foreignMigration) return `migrating by ${vm.foreignMigration}, which Lockkeeper did not create (it waits for it and never cancels it)`;
    if (vm.status === 'Migrating') return 'migrating';
    if (vm.status === 'Stopping') return 'stopping';
    if (step.action === VM_STEP.EVICT) return 'eviction strategy None: launcher pod evicted, waiting for it to go';
    if (step.state === 'PLANNED') return step.action === VM_STEP.MIGRATE ? 'waiting for a migration slot' : 'waiting to stop';
    if (step.state === 'FAILED') return `stuck: ${step.error ?? step.reason}`;
    return step.action === VM_STEP.MIGRATE ? 'migrating' : 'stopping';
  }

  /** VM and shard counts together: the operation's counts. */
  protected override totalCounts(): OperationCounts {
    const shards = this.shardRun?.snapshot.counts ?? countsOf(this.shardSteps);
    return addCounts(this.counts, shards);
  }

  protected stepEvent(step: StepRecord, state: FinishedStepState, reason: string | null, error: string | null) {
    return vmStepEvent(step, state, reason, error);
  }

  protected showWaiting(onNode: ClusterVm[]): void {
    const reasons = onNode.slice(0, WAITING_SAMPLE).map((vm) => `${vm.id}: ${this.blockers.get(vm.id) ?? this.describe(vm)}`);
    const shardsLeft = this.shardEnd ? 0 : (this.shardRun?.snapshot.counts.planned ?? 0) + (this.shardRun?.snapshot.counts.moving ?? 0);
    const shardNote = shardsLeft ? `; ${shardsLeft} shard cut-over(s) to go` : '';
    const retry = this.retryNote ? `; ${this.retryNote}` : '';
    const pods = onNode.length || shardsLeft ? null : (this.podDrain?.waiting() ?? null);
    const waiting: WaitingOn = {
      kind: onNode.length ? 'VMS_ON_NODE' : shardsLeft ? 'SHARDS' : pods ? 'PODS_ON_NODE' : 'RESTARTS',
      description:
        (onNode.length
          ? `${onNode.length} VM(s) still running on node ${this.nodeId}: ${reasons.join('; ')}${shardNote}`
          : shardsLeft
            ? `${shardsLeft} shard cut-over(s) to go`
            : pods
              ? pods.description
              : 'waiting for stops to finish') + retry,
      nodeId: this.nodeId,
      workloadIds: pods ? pods.podIds.slice(0, WAITING_SAMPLE) : onNode.slice(0, WAITING_SAMPLE).map((vm) => vm.id),
      since: this.snapshot.startedAt,
    };
    this.setWaiting(waiting);
  }
}

function addCounts(a: OperationCounts, b: OperationCounts): OperationCounts {
  const merge = (x: Record<string, number>, y: Record<string, number>) => {
    const out = { ...x };
    for (const [k, v] of Object.entries(y)) out[k] = (out[k] ?? 0) + v;
    return out;
  };
  return {
    planned: a.planned + b.planned,
    moving: a.moving + b.moving,
    moved: a.moved + b.moved,
    stopped: a.stopped + b.stopped,
    skipped: a.skipped + b.skipped,
    failed: a.failed + b.failed,
    abandoned: a.abandoned + b.abandoned,
    skippedByReason: merge(a.skippedByReason, b.skippedByReason),
    failedByReason: merge(a.failedByReason, b.failedByReason),
  };
}

/** Not finished: PLANNED, or MOVING (begun, perhaps by a gateway that was killed since). */
const isOpen = (step: StepRecord) => step.state === 'PLANNED' || step.state === 'MOVING';

/** The strategy a STOP step carries out, as recorded in tracking (vm:T1). */
function strategyOf(step: StepRecord): string {
  if (step.reason === 'AFTER_ENABLE') return 'ShutdownAndRestartAfterEnable';
  if (step.reason === 'AFTER_DISABLE') return 'ShutdownAndRestartAfterDisable';
  return 'Shutdown';
}

/**
 * A maintenance's step on the event log: a VM's as `VM_<ACTION>_<STATE>` (or `VM_STOPPED`), a
 * shard's as its drain names it (the embedded drain's run writes those; the admission too, for the plan's skips).
 */
export function maintenanceStepEvent(step: StepRecord, state: FinishedStepState, reason: string | null, error: string | null) {
  return step.workloadKind === 'shard' ? shardStepEvent(step, state, reason, error) : vmStepEvent(step, state, reason, error);
}

function vmStepEvent(step: StepRecord, state: FinishedStepState, reason: string | null, error: string | null) {
  const type = state === 'STOPPED' ? 'VM_STOPPED' : `VM_${step.action}_${state}`;
  return { type, payload: { vm: step.workloadId, to: step.toNodeId, reason, error } };
}
