import { randomUUID } from 'node:crypto';
import { isBackendError } from '../../cluster/errors.ts';
import type { CancelledMigration } from '../../cluster/node-maintenance.ts';
import type { ClusterEvent, ClusterNode, ClusterVm } from '../../cluster/types.ts';
import type { PodDrainOptions, PodDrainPlan } from '../../domain/pods/drain.ts';
import { InvalidInputError, NotFoundError, OperationLimitReachedError, PreconditionFailedError } from '../../domain/errors.ts';
import { maintenanceDeadline } from '../../domain/vm/deadline.ts';
import { describeReason } from '../../domain/vm/migratability.ts';
import { nextPhase, type PhaseEvent } from '../../domain/vm/phase.ts';
import { planMaintenance } from '../../domain/vm/plan.ts';
import { refusalError } from '../../domain/vm/prechecks.ts';
import { vmLoadByNode } from '../../domain/vm/scheduling.ts';
import { isEmptySelector, matchesSelector, parseStrategyInput, type VmSelector } from '../../domain/vm/strategy.ts';
import { restartPlacement, restartRunStrategy, restartsOnDisable, shouldRestart, trackingToClear } from '../../domain/vm/tracking.ts';
import type { MaintenancePhase, MaintenancePlan, MaintNode } from '../../domain/vm/types.ts';
import { countsOf, newOperation, nodeOf, type OperationOutcome, type OperationSnapshot, type RequestMeta, type StepRecord } from '../../domain/operations.ts';
import type { MaintenanceState } from '../../store/maintenance-state-store.ts';
import type { PendingWrite } from '../../store/pending-write.ts';
import type { InterruptedOperation } from '../../store/operation-repository.ts';
import type { LiveRun } from '../core/live-runs.ts';
import type { EngineDeps } from '../core/engine-deps.ts';
import type { OperationKindEngine } from '../core/operation-kind.ts';
import { DelegatedMaintenanceRun } from './delegated-run.ts';
import { harvesterForceIgnoresLabels } from '../../domain/vm/harvester.ts';
import type { RemainingWorkload } from '../../domain/remaining.ts';
import { RemainingReader, warnRemaining } from '../core/remaining-reader.ts';
import { MigrationLimiter } from './migration-limiter.ts';
import { podDrainOptionsOf, podDrainPlanOf, podDrainRefusal } from './pod-drain-plan.ts';
import { maintenanceStepEvent, MaintenanceRun, type MaintenanceHost, type MaintenanceRunOptions } from './run.ts';
import { planSkipEvents } from '../core/plan-skip-events.ts';
import { stepsOf } from './steps.ts';
import { TrackingStore } from './tracking-store.ts';
import { stallBasisOf } from '../core/stall-basis.ts';
import { invalidLabelEvents, restartedElsewhereEvent } from './warning-events.ts';

const MAINTENANCE: readonly ['MAINTENANCE'] = ['MAINTENANCE'];

/** The plan with its shard part: the drain steps (storage:D1–D3; warmth is checked at cut-over time) or why a drain would be refused. */
export interface MaintenancePlanView extends MaintenancePlan {
  shards: StepRecord[];
  shardRefusal: Error | null;
  /** k8s:K1–K3: the node's other pods and their verdicts; null when the backend runs no pods. */
  pods: PodDrainPlan | null;
  podDrainOptions: PodDrainOptions | null;
  /** k8s:H9: who does the work: null = Lockkeeper itself. */
  delegate: { controller: string; reason: string } | null;
  /** The deadline enable would set, from its start (vm:M5, vm:M7). */
  deadlineMs: number;
}

export interface DisableResult {
  node: ClusterNode;
  /** The fill that brings a hyperconverged node's shards back, when one started. */
  fillOperationId: string | null;
  restarted: string[];
  trackingCleared: string[];
  /** k8s:C9: Lockkeeper's own migrations it cancelled, with where each VM is now (k8s:C3). */
  cancelledMigrations: CancelledMigration[];
  failures: { vmId: string; message: string }[];
  warnings: string[];
}

/**
 * VM maintenance mode (vm:M1–M6): the plan preview, enable with validation
 * that leaves no trace on refusal (vm:M1), runs that resume after a restart (vm:M6), disable,
 * clearing an error, strategies per VM, and clearing tracking of removed nodes (vm:R1).
 */
export class MaintenanceEngine implements OperationKindEngine {
  readonly kinds = MAINTENANCE;
  private readonly tracking: TrackingStore;
  private readonly limiter: MigrationLimiter;
  private readonly nodeNames = new Map<string, string>();
  private unwatch: (() => void) | null = null;
  private readonly host: MaintenanceHost;
  private readonly remaining: RemainingReader;

  constructor(private readonly deps: EngineDeps) {
    this.remaining = new RemainingReader(deps.backend, deps.store.operations, deps.settings, deps.clock);
    this.tracking = new TrackingStore(deps.store.vmTracking, deps.backend);
    this.limiter = new MigrationLimiter(() => ({ cluster: deps.settings.maxParallelMigrations, perNode: deps.settings.maxOutboundMigrationsPerNode }));
    this.host = {
      backend: deps.backend,
      clock: deps.clock,
      journal: deps.operations.journal,
      settings: deps.settings,
      observer: deps.observer,
      log: deps.log,
      stall: stallBasisOf(deps.backend, deps.settings),
      limiter: this.limiter,
      tracking: this.tracking,
      nodeName: (id) => this.nodeNames.get(id) ?? id,
      startShardDrain: (run, steps, journal, onEnd) => deps.operations.runPart('DRAIN', run.snapshot, steps, journal, onEnd),
      setPhase: (run, phase) => this.setPhase(run.nodeId, run.snapshot.id, phase === 'EVACUATING' ? 'drained' : 'evacuated'),
      finish: (run, outcome, error) => this.finishRun(run, outcome, error),
    };
    deps.operations.register(this);
  }

  private get core() {
    return this.deps.operations;
  }

  /** Where Lockkeeper itself runs (GATEWAY_ON_NODE refusal). */
  private get gateway() {
    return { nodeName: this.deps.settings.gatewayNodeName, volumeMovable: this.deps.settings.gatewayVolumeMovable };
  }

  private get states() {
    return this.deps.store.maintenanceStates;
  }

  /** Loads the nodes' maintenance states; without VMs in the backend nothing more (nothing resumes). */
  async prepare(): Promise<boolean> {
    await this.states.load();
    if (!this.deps.backend.capabilities.vms) return false;
    for (const n of await this.deps.backend.listNodes()) this.nodeNames.set(n.id, n.name);
    this.unwatch = this.deps.backend.watch((e) => this.onClusterEvent(e));
    return true;
  }

  /** Another replica admitted the maintenance (ha:R2): the node's phase is what that replica wrote. */
  async adopt(operation: InterruptedOperation): Promise<void> {
    const nodeId = nodeOf(operation.snapshot);
    if (!this.core.live.holder(nodeId)) await this.states.refresh(nodeId);
    this.resume(operation);
    await this.publishNode(nodeId);
  }

  resume({ snapshot: stored, steps, params }: InterruptedOperation): void {
    const state = this.states.get(nodeOf(stored));
    if (!state || (state.phase !== 'DRAINING' && state.phase !== 'EVACUATING')) return;
    const snapshot = { ...stored, counts: countsOf(steps) };
    this.deps.log.info(
      { operation: snapshot.id, node: snapshot.nodeId, phase: state.phase },
      `resuming maintenance of node ${snapshot.nodeId} in phase ${state.phase}`,
    );
    this.launch(snapshot, steps, state.deadline ?? this.deps.clock.now(), state.phase, {
      force: state.force,
      podDrain: this.deps.backend.podDrain ? ((params['podDrain'] as PodDrainOptions | undefined) ?? podDrainOptionsOf(this.deps.settings, undefined)) : null,
    });
  }

  stop(): void {
    this.unwatch?.();
  }

  /** The cluster's nodes as the maintenance rules see them, with their current phases. */
  maintNodes(nodes: readonly ClusterNode[]): MaintNode[] {
    return nodes.map((n) => ({
      id: n.id,
      name: n.name,
      ready: n.availability === 'ACTIVE',
      cordoned: n.cordoned,
      roles: n.roles,
      labels: n.labels,
      maintenancePhase: this.states.phaseOf(n.id),
      externalMaintenance: n.maintenanceMark ?? null,
      // Beside a VM backend, a pageserver it does not know (its only role `storage`) is no target for a VM:
      // a maintenance beside pageservers asked KubeVirt to migrate VMs to node "1" (ha:scenario-1).
      hostsVms: !(this.deps.backend.capabilities.vms && n.roles.length > 0 && n.roles.every((r) => r === 'storage')),
    }));
  }

  stateOf(nodeId: string): MaintenanceState | null {
    return this.states.get(nodeId);
  }

  activeOperation(nodeId: string): OperationSnapshot | null {
    return this.runOn(nodeId)?.snapshot ?? null;
  }

  /** What enable would do now, changing nothing (the `maintenancePlan` query): VMs and, on a hyperconverged node, shards. */
  async plan(nodeId: string, force: boolean, podDrain?: Partial<PodDrainOptions>, deadlineMs?: number): Promise<MaintenancePlanView> {
    const { nodes, vms } = await this.view();
    const plan = planMaintenance({ nodeId, force, nodes, vms, gateway: this.gateway, servesVms: this.deps.backend.capabilities.vms });
    const deadline = this.deadlineOf(plan, vms, deadlineMs);
    plan.warnings.push(...deadline.warnings);
    if (this.deps.backend.capabilities.replicaHealth === false) {
      plan.warnings.push('LastHealthyReplica (vm:N1) not checked: the backend cannot see volume replicas (e.g. Longhorn is not installed)');
    }
    const found = !plan.refusals.some((r) => r.code === 'NOT_FOUND');
    const shards = found ? await this.core.planPart('DRAIN', nodeId, this.deps.clock.now()) : null;
    const podDrainOptions = this.deps.backend.podDrain ? podDrainOptionsOf(this.deps.settings, podDrain) : null;
    const pods = found && podDrainOptions ? await podDrainPlanOf(this.deps.backend, nodeId, podDrainOptions, this.deps.clock.now()) : null;
    if (pods) plan.warnings.push(...pods.warnings);
    const delegate = this.delegateView();
    if (delegate && force) {
      const warning = harvesterForceIgnoresLabels(vms.filter((vm) => vm.nodeId === nodeId));
      if (warning) plan.warnings.push(warning);
    }
    return { ...plan, shards: shards?.steps ?? [], shardRefusal: shards?.refusal ?? null, pods, podDrainOptions, delegate, deadlineMs: deadline.deadlineMs };
  }

  /** vm:M7: the deadline of a maintenance, grown by default to what KubeVirt lets its migrations take, kept when given. */
  private deadlineOf(plan: MaintenancePlan, vms: readonly ClusterVm[], explicitMs: number | undefined) {
    const { settings } = this.deps;
    return maintenanceDeadline({
      plan,
      vms,
      defaultMs: settings.maintenanceDeadlineMs,
      ...(explicitMs !== undefined && { explicitMs }),
      outboundPerNode: settings.maxOutboundMigrationsPerNode,
      expectedStepMs: settings.expectedStepMs,
    });
  }

  /** The warnings a maintenance's enable answered with (kept in its params). */
  async warningsOf(operationId: string): Promise<string[]> {
    const params = await this.deps.store.operations.params(operationId);
    return Array.isArray(params?.warnings) ? (params.warnings as string[]) : [];
  }

  /** k8s:H9: whose controllers do the maintenance work on this cluster. */
  private delegateView(): { controller: string; reason: string } | null {
    const d = this.deps.backend.nodeMaintenance?.delegate;
    return d ? { controller: d.controller, reason: d.reason } : null;
  }

  async enable(
    nodeId: string,
    options: { force: boolean; deadlineMs?: number; podDrain?: Partial<PodDrainOptions> },
    meta: RequestMeta,
  ): Promise<OperationSnapshot> {
    return this.core.admission(async () => {
      const { store } = this.deps;
      // Shared database (ha:R2): decide from what every replica committed (no run of this replica holds the node then).
      if (store.shared && !this.core.live.holder(nodeId)) await Promise.all([this.states.refresh(nodeId), store.policies.load()]);
      const { nodes, vms } = await this.view();
      const plan = planMaintenance({ nodeId, force: options.force, nodes, vms, gateway: this.gateway, servesVms: this.deps.backend.capabilities.vms });
      const [refusal] = plan.refusals;
      if (refusal) throw this.refusal(nodeId, refusal, plan);
      // k8s:K3: pods the options forbid to evict refuse the request before anything is written.
      const podDrain = this.deps.backend.podDrain ? podDrainOptionsOf(this.deps.settings, options.podDrain) : null;
      const pods = podDrain ? await podDrainPlanOf(this.deps.backend, nodeId, podDrain, this.deps.clock.now()) : null;
      if (pods?.blockers.length) throw podDrainRefusal(nodeId, pods);
      if (pods) plan.warnings.push(...pods.warnings);
      const deadlineOf = this.deadlineOf(plan, vms, options.deadlineMs);
      plan.warnings.push(...deadlineOf.warnings);
      // Another operation on the node (a storage drain or fill is its own maintenance): one at a time.
      const running = this.core.live.holder(nodeId) ?? (await this.runningInDatabase(nodeId));
      if (running) {
        throw new PreconditionFailedError(
          'OPERATION_RUNNING',
          `node ${nodeId} has a ${running.kind.toLowerCase()} running (operation ${running.id})`,
          running.id,
        );
      }
      // Issue 11: a maintenance counts toward maxConcurrentOperations as a drain, fill or delete does.
      const limit = this.deps.settings.maxConcurrentOperations;
      const held = this.core.live.limitedNodes().length;
      if (held >= limit) {
        throw new OperationLimitReachedError(limit, `the cluster already runs ${held} node operation(s); the limit is ${limit}`);
      }
      for (const w of plan.warnings) this.deps.log.warn({ node: nodeId }, w);
      const now = this.deps.clock.now();
      const deadline = now + deadlineOf.deadlineMs;
      const id = randomUUID();
      // A hyperconverged node: its shards drain by the storage rules under this operation.
      const shards = await this.core.planPart('DRAIN', nodeId, now);
      if (shards?.refusal) throw shards.refusal;
      const vmSteps = stepsOf(plan);
      const steps = [...vmSteps, ...(shards?.steps ?? []).map((s) => ({ ...s, seq: s.seq + vmSteps.length }))];
      const claim = shards ? shards.claim(id) : null;
      const snapshot = newOperation({ id, kind: 'MAINTENANCE', nodeId, meta, steps, now });
      nextPhase(nextPhase(this.states.phaseOf(nodeId), 'enableRequested'), 'validated');
      const state: MaintenanceState = { phase: 'DRAINING', deadline, force: options.force, reason: meta.reason };
      await store.admit(
        [
          store.operations.create(snapshot, { force: options.force, deadline: new Date(deadline).toISOString(), warnings: plan.warnings, podDrain }),
          ...store.operations.writeSteps(steps.map((step) => ({ operationId: id, step }))),
          ...this.states.writes(nodeId, state, {
            at: now,
            operationId: id,
            payload: { cause: 'validated', actor: meta.actor, reason: meta.reason, force: options.force },
          }),
          ...(claim?.writes ?? []),
          ...invalidLabelEvents(plan, vms, { at: now, nodeId, operationId: id }).map((e) => store.events.append(e)),
          ...planSkipEvents(steps, maintenanceStepEvent, { at: now, nodeId, operationId: id }).map((e) => store.events.append(e)),
        ],
        { nodeId, conflictingKinds: null, limit: null, policy: claim ? store.policies.get(nodeId) : null, phase: this.states.phaseOf(nodeId) },
      );
      this.states.applied(nodeId, state);
      claim?.applied();
      this.deps.observer.operationStarted('MAINTENANCE');
      // Shards the plan already skips (storage:D2) are outcomes too.
      for (const s of steps) if (s.state === 'SKIPPED') this.deps.observer.stepFinished('MAINTENANCE', s, 'SKIPPED', s.reason, null);
      this.deps.log.info(
        { operation: id, node: nodeId, force: options.force, vms: steps.length },
        `maintenance of node ${nodeId} started (${steps.length} VM action(s))`,
      );
      if (this.core.leads) this.launch(snapshot, steps, deadline, 'DRAINING', { force: options.force, podDrain });
      else this.deps.log.info({ operation: id, node: nodeId }, `maintenance of node ${nodeId} admitted on this stand-by: the leader runs it`);
      await this.publishNode(nodeId);
      return snapshot;
    });
  }

  /** vm:D1–D3: out of maintenance from any phase; restarts what was tracked to restart on disable. */
  async disable(nodeId: string, meta: RequestMeta, options: { force?: boolean } = {}): Promise<DisableResult> {
    return this.core.exclusive(async () => {
      const node = await this.requireNode(nodeId);
      const state = this.states.get(nodeId);
      // After clearMaintenanceError (vm:M5) the node is out of maintenance but its tracking was kept:
      // disable is how those VMs are restarted, so it is accepted while any is tracked to this node (vm:D3 otherwise).
      if (!state && restartsOnDisable((await this.view()).vms, node.name).length === 0)
        throw new PreconditionFailedError('NOT_IN_MAINTENANCE', `node ${nodeId} is not in maintenance and no VM is tracked to restart on it`);
      const run = this.runOn(nodeId);
      // What was under way goes on in the cluster: say so, so nobody takes the end of the operation for the end of those moves.
      const inFlight = run instanceof MaintenanceRun ? run.inFlight() : [];
      // force (issue 17): what is in flight is recorded ABANDONED rather than left MOVING under an ended operation.
      const abandoned = options.force && run instanceof MaintenanceRun ? run.abandonAll() : [];
      if (run) {
        run.halt();
        await this.core.journal.flush();
        await this.endOperation(run, 'CANCELLED', 'DISABLED');
      }
      const cancelledMigrations = await this.cancelOwnMigrations(nodeId);
      // An unreachable node cannot be uncordoned now; that must not keep its VMs off (vm:T4).
      const uncordonWarning = await this.leaveNode(nodeId).then(
        () => null,
        (e: unknown) => {
          if (!isBackendError(e, 'Unavailable')) throw e;
          return `node ${nodeId} is unavailable and stays cordoned: uncordon it when it is back (${e.message})`;
        },
      );
      // Out of maintenance only once the restarts are done: a gateway killed among them leaves the
      // node in maintenance with its tracking, so disabling again restarts the rest (issue 16).
      const result = await this.restartOnDisable(node);
      if (state) await this.writeState(nodeId, null, run?.snapshot.id ?? null, 'disabled', meta);
      if (uncordonWarning) {
        this.deps.log.warn({ node: nodeId }, uncordonWarning);
        result.warnings.unshift(uncordonWarning);
      }
      if (inFlight.length) {
        const list = inFlight.map((s) => `${s.workloadKind} ${s.workloadId} (${s.action.toLowerCase()} to node ${s.toNodeId ?? 'any'})`).join(', ');
        const verdict = abandoned.length ? `were abandoned (force: true; each step's recheck says where its workload is now)` : 'were under way';
        const warning = `${inFlight.length} move(s) ${verdict} and may still complete in the cluster: ${list}; a shard that lands elsewhere comes back with startNodeFill`;
        this.deps.log.warn({ node: nodeId }, warning);
        result.warnings.push(warning);
      }
      // A hyperconverged node: its storage policy back to ACTIVE, then a fill brings its shards back.
      const fill = await this.core.releasePart('DRAIN', nodeId, meta);
      if (fill.warning) result.warnings.push(fill.warning);
      await this.publishNode(nodeId);
      return { ...result, cancelledMigrations, fillOperationId: fill.operationId, node: (await this.deps.backend.getNode(nodeId)) ?? node };
    });
  }

  /**
   * vm:M5: ERROR → not in maintenance; the node is uncordoned and tracking kept, so nothing is lost.
   * A hyperconverged node's storage policy, left DRAINING or PAUSE_FOR_RESTART by the shard
   * part, goes back to ACTIVE (no fill starts: the shards that moved stay moved), so that a new
   * enable, a fill, or a disable (restarting the tracked VMs, then filling) is accepted next.
   */
  async clearError(nodeId: string, meta: RequestMeta): Promise<ClusterNode> {
    return this.core.exclusive(async () => {
      await this.requireNode(nodeId);
      const phase = this.states.phaseOf(nodeId);
      if (phase !== 'ERROR')
        throw new PreconditionFailedError('NOT_IN_ERROR', `node ${nodeId} is ${phase ? `in maintenance phase ${phase}` : 'not in maintenance'}, not in ERROR`);
      await this.cancelOwnMigrations(nodeId);
      await this.leaveNode(nodeId);
      await this.writeState(nodeId, null, null, 'errorCleared', meta);
      await this.core.releasePart('DRAIN', nodeId, meta, { refill: false });
      await this.publishNode(nodeId);
      return (await this.deps.backend.getNode(nodeId))!;
    });
  }

  /** vm:V1, vm:V3: sets (or with null removes) the strategy label on one VM or on every VM a selector matches. */
  async setStrategy(target: { vmId?: string; selector?: VmSelector }, value: string | null): Promise<ClusterVm[]> {
    const strategy = parseStrategyInput(value);
    const { backend } = this.deps;
    let ids: string[];
    if (target.vmId !== undefined) {
      if (target.selector) throw new InvalidInputError('selector', JSON.stringify(target.selector), 'give either vmId or selector, not both');
      const vm = await backend.getVm(target.vmId);
      if (!vm) throw new NotFoundError('vm', target.vmId);
      ids = [vm.id];
    } else {
      if (!target.selector || isEmptySelector(target.selector))
        throw new InvalidInputError('selector', JSON.stringify(target.selector ?? {}), 'give a vmId or a non-empty selector');
      const selector = target.selector;
      ids = (await backend.listVms(selector.namespace ? { namespace: selector.namespace } : {}))
        .filter((vm) => matchesSelector(vm, selector))
        .map((vm) => vm.id);
    }
    for (const id of ids) await backend.setVmMaintenanceStrategyLabel(id, strategy);
    return (await backend.getVms(ids)).filter((vm): vm is ClusterVm => vm !== null);
  }

  // --- internals

  /** k8s:C9 (a): Lockkeeper's own migrations off the node still running are cancelled; where each VM ended is logged (k8s:C3). */
  private async cancelOwnMigrations(nodeId: string): Promise<CancelledMigration[]> {
    const marks = this.deps.backend.nodeMaintenance;
    if (!marks || marks.delegate) return [];
    const cancelled = await marks.cancelMigrations(nodeId);
    for (const c of cancelled) {
      this.deps.log.info(
        { node: nodeId, vm: c.vmId, migration: c.migration, now: c.nodeId },
        `migration ${c.migration} of VM ${c.vmId} cancelled; the VM is on ${c.nodeId ? `node ${c.nodeId}` : 'no node (not running)'}`,
      );
    }
    return cancelled;
  }

  /** Out of maintenance on the node: uncordon, and (k8s:H4) Harvester's annotations and the drain taint go in the same update. */
  private leaveNode(nodeId: string): Promise<void> {
    const marks = this.deps.backend.nodeMaintenance;
    return marks ? marks.clearMaintenance(nodeId) : this.deps.backend.uncordonNode(nodeId);
  }

  private async view(): Promise<{ nodes: MaintNode[]; vms: ClusterVm[] }> {
    const { backend } = this.deps;
    const [clusterNodes, vms] = await Promise.all([backend.listNodes(), backend.capabilities.vms ? backend.listVms() : []]);
    for (const n of clusterNodes) this.nodeNames.set(n.id, n.name);
    const nodes = this.maintNodes(clusterNodes);
    return { nodes, vms };
  }

  private async requireNode(nodeId: string): Promise<ClusterNode> {
    const node = await this.deps.backend.getNode(nodeId);
    if (!node) throw new NotFoundError('node', nodeId);
    this.nodeNames.set(node.id, node.name);
    return node;
  }

  private refusal(nodeId: string, refusal: MaintenancePlan['refusals'][number], plan: MaintenancePlan): Error {
    if (refusal.code !== 'NON_MIGRATABLE_VMS') return refusalError(nodeId, refusal, this.core.live.holder(nodeId, ['MAINTENANCE'])?.id ?? null);
    const blockers = plan.vms.filter((v) => v.blocksEnable).map((v) => ({ id: v.vmId, reasons: v.nonMigratable.map(describeReason) }));
    return new PreconditionFailedError('NON_MIGRATABLE_VMS', refusal.message, null, blockers);
  }

  private launch(snapshot: OperationSnapshot, steps: StepRecord[], deadline: number, phase: MaintenancePhase, options: MaintenanceRunOptions): void {
    // k8s:H9: on a Harvester cluster Harvester's controllers do the work; Lockkeeper requests and follows.
    const delegate = this.deps.backend.nodeMaintenance?.delegate;
    this.core.launch(
      delegate
        ? new DelegatedMaintenanceRun(this.host, snapshot, steps, deadline, phase, options, delegate)
        : new MaintenanceRun(this.host, snapshot, steps, deadline, phase, options),
    );
  }

  /** Shared database: an operation another replica admitted on the node, not ended (ha:R2); null on SQLite. */
  private async runningInDatabase(nodeId: string): Promise<OperationSnapshot | null> {
    if (!this.deps.store.shared) return null;
    const row = (await this.deps.store.operations.unended()).find((r) => r.nodeId === nodeId);
    return row ? await this.deps.store.operations.find(row.id) : null;
  }

  private runOn(nodeId: string): LiveRun | undefined {
    return this.core.live.on(nodeId, MAINTENANCE);
  }

  private async setPhase(nodeId: string, operationId: string, event: PhaseEvent): Promise<void> {
    const change = this.phaseChange(nodeId, operationId, event);
    if (!change) return;
    await this.deps.store.commit(change.writes);
    change.applied();
    await this.publishNode(nodeId);
  }

  /** The node's next phase on `event`, as writes to commit and what to do once committed; null when the node is not in maintenance. */
  private phaseChange(nodeId: string, operationId: string, event: PhaseEvent): { writes: PendingWrite[]; applied: () => void } | null {
    const state = this.states.get(nodeId);
    if (!state) return null;
    const phase = nextPhase(state.phase, event);
    return this.stateChange(nodeId, phase ? { ...state, phase } : null, operationId, event, null);
  }

  private async writeState(
    nodeId: string,
    state: MaintenanceState | null,
    operationId: string | null,
    cause: PhaseEvent,
    meta: RequestMeta | null,
  ): Promise<void> {
    const change = this.stateChange(nodeId, state, operationId, cause, meta);
    await this.deps.store.commit(change.writes);
    change.applied();
  }

  private stateChange(
    nodeId: string,
    state: MaintenanceState | null,
    operationId: string | null,
    cause: PhaseEvent,
    meta: RequestMeta | null,
  ): { writes: PendingWrite[]; applied: () => void } {
    nextPhase(this.states.phaseOf(nodeId), cause);
    const writes = this.states.writes(nodeId, state, {
      at: this.deps.clock.now(),
      operationId,
      payload: { cause, ...(meta && { actor: meta.actor, reason: meta.reason }) },
    });
    const applied = () => {
      this.states.applied(nodeId, state);
      this.deps.log.info(
        { node: nodeId, phase: state?.phase ?? null, cause },
        `node ${nodeId} maintenance ${state ? `phase ${state.phase}` : 'ended'} (${cause})`,
      );
    };
    return { writes, applied };
  }

  private async finishRun(run: MaintenanceRun, outcome: OperationOutcome, error: string | null): Promise<void> {
    if (this.core.stopped) return;
    // COMPLETED means every VM was handled, not that the node may be powered off: say what is left (shards, or VMs at ERROR).
    const remaining = await this.remaining.atEnd(run.nodeId, run.leftBecause());
    await this.core.exclusive(async () => {
      if (this.core.live.get(run.snapshot.id) !== run) return;
      await this.core.journal.flush();
      // COMPLETED (or ERROR) and the operation's end in one transaction: committed apart, a kill
      // between them left the phase COMPLETED with the operation RUNNING, which no restart resumes
      // (vm:M6 resumes DRAINING and EVACUATING) and no disable ends (crash campaign, fake round 80).
      const phase = this.phaseChange(run.nodeId, run.snapshot.id, outcome === 'SUCCEEDED' ? 'evacuated' : 'failed');
      await this.core.close(run, outcome, error, {
        keepWaitingOn: outcome === 'FAILED',
        remaining,
        ...(phase && { alsoWrite: phase.writes, committed: phase.applied }),
      });
      await this.publishNode(run.nodeId);
      if (remaining?.length) warnRemaining(this.deps.log, run.snapshot, remaining);
    });
  }

  /** Ends the operation; the node's phase is the caller's. A failed one keeps what it waited on. */
  private endOperation(run: LiveRun, outcome: OperationOutcome, error: string | null, remaining: RemainingWorkload[] | null = null): Promise<void> {
    return this.core.close(run, outcome, error, { keepWaitingOn: outcome === 'FAILED', remaining });
  }

  /** vm:D1, vm:T2, vm:T4, vm:T5, vm:D2: restart tracked VMs; one failure does not stop the others. */
  private async restartOnDisable(node: ClusterNode): Promise<Omit<DisableResult, 'node' | 'fillOperationId' | 'cancelledMigrations'>> {
    const { backend, clock, log } = this.deps;
    const view = await this.view();
    const vms = view.vms;
    // The node is leaving maintenance: its state is cleared once these restarts are done, but they may go back to it.
    const nodes = view.nodes.map((n) => (n.id === node.id ? { ...n, maintenancePhase: null } : n));
    const load = vmLoadByNode(vms);
    const restarted: string[] = [];
    const trackingCleared: string[] = [];
    const failures: { vmId: string; message: string }[] = [];
    const warnings: string[] = [];
    for (const vm of restartsOnDisable(vms, node.name)) {
      try {
        if (shouldRestart(vm)) {
          const placement = restartPlacement(vm, nodes, load);
          if (placement.warning) {
            warnings.push(placement.warning);
            log.warn({ vm: vm.id, node: node.id }, placement.warning);
          }
          if (placement.nodeId === null) throw new Error(placement.warning ?? 'no node can take it');
          const runStrategy = restartRunStrategy(vm.tracking);
          log.info({ vm: vm.id, node: placement.nodeId }, `restarting VM ${vm.id} shut down for maintenance (run strategy ${runStrategy})`);
          await backend.startVm(vm.id, { runStrategy, nodeId: placement.nodeId });
          load.set(placement.nodeId, (load.get(placement.nodeId) ?? 0) + 1);
          restarted.push(vm.id);
          if (placement.warning) {
            const where = { at: clock.now(), nodeId: node.id, operationId: null };
            await this.deps.store.events.append(restartedElsewhereEvent(vm.id, vm.tracking.nodeName, placement.nodeId, placement.warning, where));
          }
        }
        await this.tracking.clear(vm.id);
        trackingCleared.push(vm.id);
      } catch (e) {
        const message = e instanceof Error ? e.message : String(e);
        failures.push({ vmId: vm.id, message });
        log.warn({ vm: vm.id, node: node.id, err: e }, `restart of VM ${vm.id} after maintenance failed: ${message}`);
        await this.deps.store.commit([
          this.deps.store.events.append({ at: clock.now(), type: 'VM_RESTART_FAILED', nodeId: node.id, operationId: null, payload: { vm: vm.id, message } }),
        ]);
      }
    }
    for (const vmId of await this.tracking.forgetStaleCopies(node.name, vms))
      log.info({ vm: vmId, node: node.id }, `tracking copy of VM ${vmId} cleared: the VM holds no tracking (a clear cut off by a restart)`);
    return { restarted, trackingCleared, failures, warnings };
  }

  private onClusterEvent(event: ClusterEvent): void {
    if (this.core.stopped) return;
    if (event.type === 'nodeChanged') this.nodeNames.set(event.node.id, event.node.name);
    if (event.type === 'nodeRemoved') {
      void this.core
        .exclusive(() => this.forgetNode(event.nodeId))
        .catch((e: unknown) => this.deps.log.error({ err: e, node: event.nodeId }, 'clearing tracking of a removed node failed'));
    }
    for (const run of this.core.live.all(MAINTENANCE)) run.nudge();
  }

  /** vm:R1: tracking that points at a removed node is cleared (no restart, run strategy unchanged). */
  private async forgetNode(nodeId: string): Promise<void> {
    const name = this.nodeNames.get(nodeId) ?? nodeId;
    const vms = this.deps.backend.capabilities.vms ? await this.deps.backend.listVms() : [];
    for (const vm of trackingToClear(vms, name)) {
      await this.tracking.clear(vm.id);
      this.deps.log.info({ vm: vm.id, node: nodeId }, `tracking of VM ${vm.id} cleared: node ${name} was removed`);
    }
    const run = this.runOn(nodeId);
    if (run) {
      run.halt();
      await this.endOperation(run, 'CANCELLED', 'NODE_REMOVED');
    }
    if (this.states.get(nodeId)) await this.writeState(nodeId, null, null, 'disabled', null);
  }

  private async publishNode(nodeId: string): Promise<void> {
    const node = await this.deps.backend.getNode(nodeId);
    if (node) this.deps.bus.publish('nodeChanged', node);
  }
}
