import { randomUUID } from 'node:crypto';
import type { ClusterEvent, ClusterNode } from '../../cluster/types.ts';
import { ConflictError, InvalidInputError, NotFoundError, PreconditionFailedError } from '../../domain/errors.ts';
import { newOperation, type OperationSnapshot, type RequestMeta, type StepRecord } from '../../domain/operations.ts';
import {
  matchesSelector,
  newNodeDetail,
  readNodeDetail,
  type RolloutNodeDetail,
  orderNodes,
  planWaves,
  quorumLimit,
  type RolloutNodeView,
  type RolloutSelector,
  type RolloutSettings,
} from '../../domain/rollouts.ts';
import type { AuditLog } from '../../store/audit-log.ts';
import type { PendingWrite } from '../../store/pending-write.ts';
import type { InterruptedOperation } from '../../store/operation-repository.ts';
import type { EngineDeps } from '../core/engine-deps.ts';
import { RemainingReader } from '../core/remaining-reader.ts';
import type { OperationKindEngine, PartPlan } from '../core/operation-kind.ts';
import type { MaintenanceEngine, MaintenancePlanView } from '../maintenance/engine.ts';
import type { StorageEngine } from '../storage/engine.ts';
import { RolloutRun, type RolloutHost } from './run.ts';

const ROLLOUT: readonly ['ROLLOUT'] = ['ROLLOUT'];

export interface RolloutEngineDeps extends EngineDeps {
  storage: StorageEngine;
  maintenance: MaintenanceEngine;
  audit: AuditLog;
}

/** startRollout's input (rollout:O1) as the API hands it over; defaults are applied here. */
export interface RolloutInput {
  nodes?: readonly string[] | null;
  selector?: RolloutSelector | null;
  action: RolloutSettings['action'];
  restart?: RolloutSettings['restart'] | null;
  maxUnavailable?: number | null;
  order?: RolloutSettings['order'] | null;
  pauseOnFailure?: boolean | null;
  settleSeconds?: number | null;
  allowUnsafeRestart?: boolean | null;
  /** rollout:O12: these nodes only may restart unsafely. */
  allowUnsafeRestartNodes?: readonly string[] | null;
  force?: boolean | null;
  deadlineSeconds?: number | null;
}

/** rollout:O3: what a rollout would do, nothing changed. */
export interface RolloutPlanView {
  settings: RolloutSettings;
  order: string[];
  waves: string[][];
  nodes: { nodeId: string; wave: number; allowUnsafeRestart: boolean; maintenance: MaintenancePlanView | null; drain: PartPlan | null }[];
}

/** A rollout as callers see it beside its operation record. */
export interface RolloutView {
  settings: RolloutSettings;
  waves: string[][];
  currentWave: number | null;
  nodes: { nodeId: string; step: StepRecord; detail: RolloutNodeDetail }[];
}

/**
 * Rollouts (spec rollouts): admission (rollout:O2), the plan (rollout:O3), the runs
 * (rollout:O4–O9), pause, resume, continue and cancel (rollout:O8). A rollout has no
 * node of its own and does not count toward `maxConcurrentOperations`; the node
 * operations it starts do.
 */
export class RolloutEngine implements OperationKindEngine {
  readonly kinds = ROLLOUT;
  private unwatch: (() => void)[] = [];
  /** Availability and cordon of each node as last logged (NODE_STATE_CHANGED). */
  private readonly seen = new Map<string, string>();
  private readonly host: RolloutHost;

  constructor(private readonly deps: RolloutEngineDeps) {
    const { storage, maintenance, backend } = deps;
    const remaining = new RemainingReader(backend, deps.store.operations, deps.settings, deps.clock);
    this.host = {
      clock: deps.clock,
      journal: deps.operations.journal,
      observer: deps.observer,
      log: deps.log,
      finish: (run, outcome, failure) => this.finishRun(run, outcome, failure),
      flush: () => deps.operations.journal.flush(),
      cluster: () => this.clusterView(),
      pause: (run, why, payload) => this.core.exclusive(() => this.pauseRun(run, why, payload, null)),
      auditUnsafeRestart: (run, nodeId, blockers, grant) =>
        deps.audit.record({
          actor: grant.by,
          action: 'rolloutUnsafeRestart',
          arguments: { rollout: run.snapshot.id, nodeId, blockers, allowedAt: new Date(grant.at).toISOString() },
          reason: grant.reason,
          outcome: 'OK',
          nodeId,
          at: new Date(deps.clock.now()),
        }),
      startDrain: (nodeId, meta) => storage.startDrain(nodeId, meta),
      startFill: async (nodeId, meta) => {
        if (storage.policyOf(nodeId) === 'PAUSE_FOR_RESTART') await storage.configureNode(nodeId, 'ACTIVE', meta);
        return storage.startFill(nodeId, meta);
      },
      cancelDrain: async (nodeId, meta) => {
        await storage.cancelDrain(nodeId, meta);
      },
      enableMaintenance: (nodeId, settings, meta) =>
        maintenance.enable(nodeId, { force: settings.force, ...(settings.deadlineSeconds !== null && { deadlineMs: settings.deadlineSeconds * 1000 }) }, meta),
      leaveMaintenance: async (nodeId, since, meta) => {
        if (maintenance.stateOf(nodeId)) return (await maintenance.disable(nodeId, meta)).fillOperationId;
        return this.host.operationSince(nodeId, 'FILL', since);
      },
      getOperation: (id) => this.core.getOperation(id),
      operationSince: async (nodeId, kind, at) => {
        const [newest] = await this.core.listOperations({ nodeId, kind });
        return newest && newest.createdAt >= at ? newest.id : null;
      },
      remainingOn: (nodeId) => remaining.now(nodeId),
      reattachedSince: (nodeId, at) => deps.store.events.reattachedSince(nodeId, at),
    };
    deps.operations.register(this);
  }

  private get core() {
    return this.deps.operations;
  }

  async prepare(): Promise<boolean> {
    // What the log last says of each node (a node never logged served): a change while no gateway ran is logged at the first look.
    for (const [id, state] of await this.deps.store.events.lastNodeStates()) this.seen.set(id, serviceKey(state));
    const nodes = await this.deps.backend.listNodes();
    for (const node of nodes) if (!this.seen.has(node.id)) this.seen.set(node.id, serviceKey({ availability: 'ACTIVE', cordoned: false }));
    await this.logServiceChanges(nodes);
    this.unwatch = [
      this.deps.backend.watch((event) => this.onClusterEvent(event)),
      // A node operation of a rollout moved on or ended: its rollout looks again.
      this.core.watchProgress((op) => {
        if (op.kind === 'ROLLOUT') return;
        for (const run of this.runs()) if (run.operationIds().has(op.id)) run.nudge();
      }),
    ];
    return true;
  }

  resume({ snapshot, steps, params }: InterruptedOperation): void {
    const { settings, waves, pause } = params as { settings: RolloutSettings; waves: string[][]; pause?: { why: string; since: number } | null };
    this.deps.log.info({ operation: snapshot.id, state: snapshot.state }, `resuming rollout ${snapshot.id} (${snapshot.state})`);
    this.core.launch(new RolloutRun(this.host, { ...snapshot }, steps, settings, waves, pause ?? null));
  }

  stop(): void {
    for (const u of this.unwatch) u();
    this.unwatch = [];
  }

  /** rollout:O3: the order, the waves and each node's own plan, changing nothing. */
  async plan(input: RolloutInput): Promise<RolloutPlanView> {
    const { settings, nodes, waves, unsafe } = await this.admit(input);
    const now = this.deps.clock.now();
    const plans = await Promise.all(
      nodes.map(async (n) => ({
        nodeId: n.id,
        wave: waves.findIndex((w) => w.includes(n.id)) + 1,
        allowUnsafeRestart: unsafe.has(n.id),
        maintenance: settings.action === 'MAINTENANCE' ? await this.deps.maintenance.plan(n.id, settings.force) : null,
        drain: settings.action === 'DRAIN_FILL' ? await this.core.planPart('DRAIN', n.id, now) : null,
      })),
    );
    return { settings, order: nodes.map((n) => n.id), waves, nodes: plans };
  }

  /** rollout:O1, rollout:O2: admits and starts a rollout; `also` gives writes committed with its start (e.g. the rehearsal it was started with). */
  start(input: RolloutInput, meta: RequestMeta, also: (operationId: string) => PendingWrite[] = () => []): Promise<OperationSnapshot> {
    return this.core.exclusive(async () => {
      const { settings, nodes, waves, unsafe } = await this.admit(input);
      const now = this.deps.clock.now();
      const id = randomUUID();
      const grant = { by: meta.actor, reason: meta.reason, at: now };
      const waveOf = (nodeId: string) => waves.findIndex((w) => w.includes(nodeId));
      const steps: StepRecord[] = nodes.map((n, seq) => ({
        workloadKind: 'node',
        workloadId: n.id,
        action: settings.action,
        state: 'PLANNED',
        reason: null,
        error: null,
        fromNodeId: n.id,
        toNodeId: null,
        seq,
        startedAt: null,
        finishedAt: null,
        detail: JSON.stringify(newNodeDetail(waveOf(n.id), now, unsafe.has(n.id) ? grant : null)),
      }));
      const snapshot = newOperation({ id, kind: 'ROLLOUT', nodeId: null, meta, steps, now });
      const { store } = this.deps;
      await store.commit([
        store.operations.create(snapshot, { settings, waves }),
        ...store.operations.writeSteps(steps.map((step) => ({ operationId: id, step }))),
        store.events.append({
          at: now,
          type: 'OPERATION_STARTED',
          nodeId: null,
          operationId: id,
          payload: {
            kind: 'ROLLOUT',
            actor: meta.actor,
            reason: meta.reason,
            nodes: nodes.map((n) => n.id),
            waves,
            settings,
            allowUnsafeRestartNodes: nodes.filter((n) => unsafe.has(n.id)).map((n) => n.id),
          },
        }),
        ...also(id),
      ]);
      this.deps.observer.operationStarted('ROLLOUT');
      this.deps.log.info(
        { operation: id, nodes: nodes.map((n) => n.id), waves: waves.length, action: settings.action },
        `rollout ${id} started: ${settings.action} of ${nodes.length} node(s) in ${waves.length} wave(s)`,
      );
      this.core.launch(new RolloutRun(this.host, snapshot, steps, settings, waves));
      this.core.publishProgress(snapshot, steps);
      return snapshot;
    });
  }

  /** rollout:O8: no new node step starts until resumed; node steps in flight go on. */
  pause(id: string, meta: RequestMeta): Promise<OperationSnapshot> {
    return this.core.exclusive(async () => {
      const run = this.live(id);
      if (run.snapshot.state === 'RUNNING') await this.pauseRun(run, `paused by ${meta.actor}${meta.reason ? `: ${meta.reason}` : ''}`, {}, meta);
      return run.snapshot;
    });
  }

  /**
   * rollout:O8: goes on; failed node steps are tried again. rollout:O12: `allowUnsafeRestart`
   * overrides the safety gate for the nodes the rollout paused on, `allowUnsafeRestartNodes`
   * for the nodes named, and for no other.
   */
  resumeRollout(
    id: string,
    options: { allowUnsafeRestart?: boolean | null; allowUnsafeRestartNodes?: readonly string[] | null },
    meta: RequestMeta,
  ): Promise<OperationSnapshot> {
    return this.core.exclusive(async () => {
      const run = this.live(id);
      const covered = this.unsafeRestartScope(run, options);
      if (covered.length) await run.allowUnsafeRestart(covered, { by: meta.actor, reason: meta.reason, at: this.deps.clock.now() });
      if (run.snapshot.state !== 'PAUSED') return run.snapshot;
      run.retryFailed();
      run.notePause(null);
      await this.deps.store.commit([this.deps.store.operations.setParams(id, run.params())]);
      await this.core.journal.flush();
      await this.core.changeState(run, 'RUNNING', {
        type: 'ROLLOUT_RESUMED',
        payload: { actor: meta.actor, reason: meta.reason, allowUnsafeRestartNodes: covered },
      });
      this.deps.log.info({ operation: id }, `rollout ${id} resumed`);
      return run.snapshot;
    });
  }

  /**
   * rollout:O12: the nodes a resume's override covers. Without names, the nodes the rollout
   * paused on (held at the safety gate, or failed); an override that would cover nothing is
   * refused rather than kept for later nodes.
   */
  private unsafeRestartScope(run: RolloutRun, options: { allowUnsafeRestart?: boolean | null; allowUnsafeRestartNodes?: readonly string[] | null }): string[] {
    const named = options.allowUnsafeRestartNodes ?? [];
    const inRollout = new Set(run.steps.map((s) => s.workloadId));
    const strangers = named.filter((n) => !inRollout.has(n));
    if (strangers.length)
      throw new InvalidInputError('allowUnsafeRestartNodes', strangers.join(','), `not a node of rollout ${run.snapshot.id}: ${strangers.join(', ')}`);
    const done = named.filter((n) => run.stepEnded(n));
    if (done.length) throw new InvalidInputError('allowUnsafeRestartNodes', done.join(','), `the rollout is done with ${done.join(', ')}`);
    const covered = new Set(named);
    if (options.allowUnsafeRestart) {
      const pausedOn = run.pausedOn();
      if (pausedOn.length === 0 && named.length === 0)
        throw new InvalidInputError(
          'allowUnsafeRestart',
          'true',
          `rollout ${run.snapshot.id} is not paused on a node: name the nodes the override is for (allowUnsafeRestartNodes)`,
        );
      for (const n of pausedOn) covered.add(n);
    }
    return run.steps.map((s) => s.workloadId).filter((n) => covered.has(n));
  }

  /** rollout:O1 (CONFIRM): the operator restarted the node; the rollout brings it back. */
  continueNode(id: string, nodeId: string): Promise<OperationSnapshot> {
    return this.core.exclusive(async () => {
      const run = this.live(id);
      await run.confirm(nodeId);
      return run.snapshot;
    });
  }

  /** rollout:O8: the node step in flight is brought back into service, no other starts. */
  cancel(id: string, meta: RequestMeta): Promise<OperationSnapshot> {
    return this.core.exclusive(async () => {
      const run = this.live(id);
      if (run.snapshot.state === 'CANCELLING') return run.snapshot;
      run.snapshot.waitingOn = null;
      await this.core.changeState(run, 'CANCELLING', { type: 'OPERATION_CANCELLING', payload: { actor: meta.actor, reason: meta.reason } });
      this.deps.log.info({ operation: id }, `rollout ${id} cancelling: the node in flight is brought back, no other starts`);
      return run.snapshot;
    });
  }

  /** The rollout beside its operation record; null for another kind. */
  async view(op: OperationSnapshot): Promise<RolloutView | null> {
    if (op.kind !== 'ROLLOUT') return null;
    const run = this.core.live.get(op.id);
    if (run instanceof RolloutRun) {
      return {
        settings: run.settings,
        waves: run.waves,
        currentWave: run.currentWave(),
        nodes: run.steps.map((step) => ({ nodeId: step.workloadId, step, detail: run.detail(step) })),
      };
    }
    const params = (await this.deps.store.operations.params(op.id)) as { settings: RolloutSettings; waves: string[][] } | null;
    if (!params) return null;
    const steps = await this.core.getSteps(op.id);
    const nodes = steps.map((step) => ({ nodeId: step.workloadId, step, detail: readNodeDetail(step.detail, { ...op, settings: params.settings }) }));
    const open = nodes.filter((n) => !['MOVED', 'FAILED', 'SKIPPED'].includes(n.step.state)).map((n) => n.detail.wave);
    return { settings: params.settings, waves: params.waves, currentWave: open.length ? Math.min(...open) + 1 : null, nodes };
  }

  // --- admission

  /** rollout:O2: the refusals, in the spec's order, then the settings, the node order and the waves. */
  private async admit(input: RolloutInput): Promise<{ settings: RolloutSettings; nodes: RolloutNodeView[]; waves: string[][]; unsafe: Set<string> }> {
    const settings = settingsOf(input);
    const cluster = await this.clusterView();
    const byId = new Map(cluster.map((n) => [n.id, n]));
    const hasNodes = input.nodes != null;
    if (hasNodes === (input.selector != null)) throw new InvalidInputError('nodes', String(input.nodes ?? ''), 'give exactly one of nodes or selector');
    if (settings.action === 'DRAIN_FILL' && !this.deps.backend.capabilities.shards)
      throw new InvalidInputError('action', 'DRAIN_FILL', 'the backend serves no tenant shards: use MAINTENANCE');
    if (settings.action === 'MAINTENANCE' && !this.deps.backend.capabilities.vms)
      throw new InvalidInputError('action', 'MAINTENANCE', 'the backend serves no VMs: use DRAIN_FILL');
    let selected: RolloutNodeView[];
    if (hasNodes) {
      const ids = input.nodes!;
      if (new Set(ids).size !== ids.length) throw new InvalidInputError('nodes', ids.join(','), 'a node is named twice');
      const unknown = ids.filter((id) => !byId.has(id));
      if (ids.length === 0 || unknown.length) throw new NotFoundError('node', ids.length === 0 ? '(none given)' : unknown.join(', '));
      selected = ids.map((id) => byId.get(id)!);
    } else {
      selected = cluster.filter((n) => matchesSelector(n, input.selector!));
      if (selected.length === 0) throw new NotFoundError('node', `(no node matches the selector ${JSON.stringify(input.selector)})`);
    }
    for (const node of selected) {
      // A node of a rollout names the rollout, whether or not its node step has started an operation yet.
      const busy = this.runs().find((r) => r.steps.some((s) => s.workloadId === node.id))?.snapshot ?? this.core.live.holder(node.id);
      if (busy) throw new ConflictError(`node ${node.id} is already in a ${busy.kind.toLowerCase()} (operation ${busy.id})`, busy.id);
    }
    const { maxUnavailable } = settings;
    if (!Number.isInteger(maxUnavailable) || maxUnavailable < 1)
      throw new InvalidInputError('maxUnavailable', String(maxUnavailable), 'maxUnavailable must be at least 1');
    const limit = this.deps.settings.maxConcurrentOperations;
    if (maxUnavailable > limit)
      throw new InvalidInputError(
        'maxUnavailable',
        String(maxUnavailable),
        `maxUnavailable ${maxUnavailable} is above operations.maxConcurrentOperations (${limit})`,
      );
    const quorum = quorumLimit(cluster);
    if (maxUnavailable > quorum)
      throw new InvalidInputError(
        'maxUnavailable',
        String(maxUnavailable),
        `maxUnavailable ${maxUnavailable} is above what the cluster's quorum allows (${quorum})`,
      );
    if (settings.settleSeconds < 0) throw new InvalidInputError('settleSeconds', String(settings.settleSeconds), 'settleSeconds must not be negative');
    if (settings.deadlineSeconds !== null && settings.deadlineSeconds <= 0)
      throw new InvalidInputError('deadlineSeconds', String(settings.deadlineSeconds), 'deadlineSeconds must be positive');
    const named = input.allowUnsafeRestartNodes ?? [];
    const outside = named.filter((id) => !selected.some((n) => n.id === id));
    if (outside.length) throw new InvalidInputError('allowUnsafeRestartNodes', outside.join(','), `not a node of this rollout: ${outside.join(', ')}`);
    const other = this.runs()[0];
    if (other) throw new ConflictError(`rollout ${other.snapshot.id} is ${other.snapshot.state}: one rollout at a time`, other.snapshot.id);
    const ordered = orderNodes(selected, hasNodes ? settings.order : settings.order === 'GIVEN' ? 'BY_ID' : settings.order);
    // rollout:O12: an override given at the start is recorded per node, for every node or for those named.
    const unsafe = new Set(settings.allowUnsafeRestart ? ordered.map((n) => n.id) : named);
    return { settings, nodes: ordered, waves: planWaves(ordered, settings), unsafe };
  }

  // --- runs

  private runs(): RolloutRun[] {
    return this.core.live.all(ROLLOUT).filter((r): r is RolloutRun => r instanceof RolloutRun);
  }

  private live(id: string): RolloutRun {
    const run = this.core.live.get(id);
    if (run instanceof RolloutRun) return run;
    if (!run) throw new NotFoundError('operation', id);
    throw new PreconditionFailedError('NOT_A_ROLLOUT', `operation ${id} is a ${run.snapshot.kind.toLowerCase()}, not a rollout`, id);
  }

  /** Hold the lock. */
  private async pauseRun(run: RolloutRun, why: string, payload: object, meta: RequestMeta | null): Promise<void> {
    if (run.snapshot.state !== 'RUNNING') return;
    run.notePause({ why, since: this.deps.clock.now() });
    await this.deps.store.commit([this.deps.store.operations.setParams(run.snapshot.id, run.params())]);
    await this.core.changeState(run, 'PAUSED', {
      type: 'ROLLOUT_PAUSED',
      payload: { why, ...payload, ...(meta && { actor: meta.actor, reason: meta.reason }) },
    });
    this.deps.log.warn({ operation: run.snapshot.id }, `rollout ${run.snapshot.id} paused: ${why}`);
  }

  private async finishRun(run: RolloutRun, outcome: 'SUCCEEDED' | 'FAILED' | 'CANCELLED', failure: string | null): Promise<void> {
    if (this.core.stopped) return;
    await this.core.journal.flush();
    await this.core.exclusive(() => this.core.close(run, outcome, failure));
    const c = run.snapshot.counts;
    this.deps.log.info(
      { operation: run.snapshot.id, outcome, error: failure },
      `rollout ${run.snapshot.id} ${outcome.toLowerCase()}: ${c.moved} node(s) done, ${c.failed} failed, ${c.skipped} skipped`,
    );
  }

  /** Every node as a rollout sees it (rollout:O5), e.g. for a rehearsal's plan basis. */
  async clusterView(): Promise<RolloutNodeView[]> {
    const nodes = await this.deps.backend.listNodes();
    // rollout:O5: what a run decides on is in the log before it acts.
    await this.logServiceChanges(nodes);
    return nodes.map((n) => ({
      id: n.id,
      name: n.name,
      zone: n.zone,
      roles: n.roles,
      labels: n.labels,
      availability: n.availability,
      cordoned: n.cordoned,
      policy: this.deps.storage.policyOf(n.id),
      maintenancePhase: this.deps.maintenance.stateOf(n.id)?.phase ?? null,
      bootId: n.bootId ?? null,
    }));
  }

  private onClusterEvent(event: ClusterEvent): void {
    if (this.core.stopped) return;
    const nudge = () => {
      for (const run of this.runs()) run.nudge();
    };
    // A run hears of a node's change only once the log has it: a step it then starts is logged after the change (rollout:O5).
    if (event.type === 'nodeChanged') void this.logServiceChange(event.node).then(nudge);
    if (event.type === 'nodeReattached') for (const run of this.runs()) run.reattached(event.nodeId);
    if (event.type === 'nodeRemoved' || event.type === 'nodeReattached') nudge();
  }

  /**
   * The event log records each node's availability and cordon as they change, beside the
   * policy and maintenance transitions, so that who was out of service when can be read
   * from the log alone (rollout:O5).
   */
  private async logServiceChanges(nodes: readonly ClusterNode[]): Promise<void> {
    await Promise.all(nodes.map((n) => this.logServiceChange(n)));
  }

  private async logServiceChange(node: Pick<ClusterNode, 'id' | 'availability' | 'cordoned' | 'bootId'>): Promise<void> {
    const key = serviceKey(node);
    if (this.seen.get(node.id) === key) return;
    this.seen.set(node.id, key);
    const { store } = this.deps;
    await store
      .commit([
        store.events.append({
          at: this.deps.clock.now(),
          type: 'NODE_STATE_CHANGED',
          nodeId: node.id,
          operationId: null,
          payload: { availability: node.availability, cordoned: node.cordoned, bootId: node.bootId ?? null },
        }),
      ])
      .catch((e: unknown) => this.deps.log.error({ err: e, node: node.id }, 'logging a node change failed'));
  }
}

const serviceKey = (node: { availability: string; cordoned: boolean }) => `${node.availability}/${node.cordoned}`;

/** rollout:O1: the input with its defaults. */
function settingsOf(input: RolloutInput): RolloutSettings {
  return {
    action: input.action,
    restart: input.restart ?? 'WAIT_FOR_REATTACH',
    maxUnavailable: input.maxUnavailable ?? 1,
    order: input.order ?? 'GIVEN',
    pauseOnFailure: input.pauseOnFailure ?? true,
    settleSeconds: input.settleSeconds ?? 0,
    allowUnsafeRestart: input.allowUnsafeRestart ?? false,
    force: input.force ?? false,
    deadlineSeconds: input.deadlineSeconds ?? null,
  };
}
