import { LockkeeperError, PreconditionFailedError } from '../../domain/errors.ts';
import { ENDED_OPERATION_STATES, type OperationSnapshot, type StepRecord, type WaitingOn } from '../../domain/operations.ts';
import {
  hasRestarted,
  outOfService,
  ROLLOUT_NODE_PHASES,
  waveAdmission,
  type RolloutNodeDetail,
  type RolloutNodeOperation,
  type RolloutNodePhase,
  type RolloutNodeView,
  readNodeDetail,
  type RolloutSettings,
  type UnsafeRestartGrant,
} from '../../domain/rollouts.ts';
import { StepRun, type FinishedStepState, type StepRunHost } from '../core/step-run.ts';
import { describeNode, unsafeWorkloads, type NodeOperations } from './node-operations.ts';

/** What a rollout run needs besides the shared scaffolding. */
export interface RolloutHost extends StepRunHost<RolloutRun>, NodeOperations {
  /** Every node of the cluster as the budget sees it (rollout:O5). */
  cluster(): Promise<RolloutNodeView[]>;
  /** PAUSED with an event saying why (rollout:O8, rollout:O11). */
  pause(run: RolloutRun, why: string, payload: object): Promise<void>;
  /** Commits what the journal holds: a node step's change is written before the run acts on it. */
  flush(): Promise<void>;
  /** rollout:O6, rollout:O12: a node restarts unsafely under its override; recorded in the audit log. */
  auditUnsafeRestart(run: RolloutRun, nodeId: string, blockers: { id: string; reasons: string[] }[], grant: UnsafeRestartGrant): Promise<void>;
}

/** How long the run waits before it looks again when nothing nudged it. */
const RECHECK_MS = 5_000;

/** A node step between its start and its end: it holds (or is bringing back) its node. */
const IN_FLIGHT: readonly RolloutNodePhase[] = ROLLOUT_NODE_PHASES.filter((p) => !['PENDING', 'DONE', 'FAILED', 'SKIPPED'].includes(p));
const PHASE_OF_OPERATION: Record<RolloutNodeOperation['kind'], RolloutNodePhase> = {
  DRAIN: 'DRAINING',
  MAINTENANCE: 'ENTERING_MAINTENANCE',
  FILL: 'FILLING',
};
const ended = (op: OperationSnapshot) => ENDED_OPERATION_STATES.includes(op.state);
const clockTime = (ms: number) => new Date(ms).toISOString().slice(11, 19);

/**
 * A rollout (spec rollouts §2): one step per node, taken out in waves under the
 * disruption budget; each node step runs the node's own maintenance or drain/fill
 * (rollout:O4), waits for its restart (rollout:O7) and brings it back before the next
 * wave. Every change of a node step is committed before the run acts on it, and a node
 * operation is announced (`intent`) before it starts, so a gateway killed at any instant
 * resumes without maintaining a node twice or skipping one (rollout:O9).
 */
export class RolloutRun extends StepRun<RolloutRun> {
  readonly steps: StepRecord[];
  readonly details = new Map<string, RolloutNodeDetail>();
  /** Why it is PAUSED (persisted with the rollout's params). */
  private pauseNote: { why: string; since: number } | null;

  constructor(
    protected override readonly host: RolloutHost,
    snapshot: OperationSnapshot,
    steps: StepRecord[],
    readonly settings: RolloutSettings,
    readonly waves: string[][],
    pause: { why: string; since: number } | null = null,
  ) {
    super(host, snapshot);
    this.pauseNote = pause;
    this.steps = [...steps].sort((a, b) => a.seq - b.seq);
    for (const step of this.steps)
      this.details.set(step.workloadId, readNodeDetail(step.detail, { settings, actor: snapshot.actor, createdAt: snapshot.createdAt }));
  }

  /** What the rollout's record keeps besides its steps. */
  params() {
    return { settings: this.settings, waves: this.waves, pause: this.pauseNote };
  }

  /** The node operations started for this rollout (to follow their progress). */
  operationIds(): Set<string> {
    return new Set([...this.details.values()].flatMap((d) => d.operations.map((o) => o.id)));
  }

  /** The wave now running or next to run (1-based); null when every node is done. */
  currentWave(): number | null {
    const open = this.steps.filter((s) => !this.finished(s)).map((s) => this.detail(s).wave);
    return open.length ? Math.min(...open) + 1 : null;
  }

  /** CONFIRM: the operator says the node's restart is done (continueRollout). */
  async confirm(nodeId: string): Promise<void> {
    const step = this.steps.find((s) => s.workloadId === nodeId);
    if (!step || this.detail(step).phase !== 'WAITING_FOR_CONFIRM') {
      const phase = step ? this.detail(step).phase : 'not in this rollout';
      throw new PreconditionFailedError('NOT_WAITING_FOR_CONFIRM', `node ${nodeId} is not waiting for a confirmation (${phase})`, this.snapshot.id);
    }
    await this.save(step, { confirmedAt: this.host.clock.now() });
    this.nodeEvent(step, 'ROLLOUT_NODE_CONFIRMED', {});
    this.nudge();
  }

  /** The backend reported that the node re-attached after a restart (rollout:O7). */
  reattached(nodeId: string): void {
    const step = this.steps.find((s) => s.workloadId === nodeId);
    if (!step || this.detail(step).phase !== 'WAITING_FOR_RESTART') return;
    this.save(step, { reattachedAt: this.host.clock.now() }).then(
      () => this.nudge(),
      (e: unknown) => this.host.log.error({ err: e, operation: this.snapshot.id, node: nodeId }, 'recording a re-attach failed'),
    );
  }

  /**
   * rollout:O7: a re-attach no run heard is in the event log. A pageserver whose restart the
   * operator did while the gateway was down re-attaches to the next gateway as soon as its upcall
   * listener answers, before that gateway resumes its rollouts (pageserver crash campaign, seed 1
   * round 20: the rollout waited for ever on a node back in service). Pageservers have no boot id.
   */
  private async reattachLogged(step: StepRecord, since: number): Promise<boolean> {
    if (!(await this.host.reattachedSince(step.workloadId, since))) return false;
    await this.save(step, { reattachedAt: this.host.clock.now() });
    return true;
  }

  /** rollout:O12: the nodes the rollout is paused on: held at the safety gate, or failed (which paused it, rollout:O8). */
  pausedOn(): string[] {
    return this.steps
      .filter((s) => this.detail(s).phase === 'UNSAFE_TO_RESTART' || (s.state === 'FAILED' && this.settings.pauseOnFailure))
      .map((s) => s.workloadId);
  }

  /** Is this node's step over (done, failed without a pause to retry it, or skipped)? */
  stepEnded(nodeId: string): boolean {
    const step = this.steps.find((s) => s.workloadId === nodeId);
    return step !== undefined && (step.state === 'MOVED' || step.state === 'SKIPPED' || (step.state === 'FAILED' && !this.settings.pauseOnFailure));
  }

  /** rollout:O12: these nodes, and no other, may restart with workloads that would lose service. */
  async allowUnsafeRestart(nodeIds: readonly string[], grant: UnsafeRestartGrant): Promise<void> {
    for (const step of this.steps) {
      if (!nodeIds.includes(step.workloadId)) continue;
      await this.save(step, { unsafeRestartAllowed: grant });
      this.nodeEvent(step, 'ROLLOUT_NODE_UNSAFE_RESTART_ALLOWED', { by: grant.by, reason: grant.reason });
    }
    this.nudge();
  }

  /** resumeRollout: failed node steps are tried again when failures pause the rollout (rollout:O8). */
  retryFailed(): void {
    if (!this.settings.pauseOnFailure) return;
    for (const step of this.steps) {
      if (step.state !== 'FAILED') continue;
      const wave = this.detail(step).wave;
      this.update(step, {
        state: 'PLANNED',
        reason: null,
        error: null,
        startedAt: null,
        finishedAt: null,
        detail: JSON.stringify({ ...this.detail(step), phase: 'PENDING', failure: null, blockers: [], wave }),
      });
      this.details.set(step.workloadId, JSON.parse(step.detail!) as RolloutNodeDetail);
    }
  }

  protected async run(): Promise<void> {
    await this.adoptIntents();
    for (;;) {
      const woken = this.nextWakeUp();
      if (this.halted) return;
      try {
        const ended = await this.pass();
        if (ended) return;
      } catch (e) {
        this.host.log.error({ err: e, operation: this.snapshot.id }, 'rollout pass failed; trying again');
      }
      if (this.halted) return;
      await this.waitAtMost(woken, RECHECK_MS);
    }
  }

  protected override stepNodeId(step: StepRecord): string | null {
    return step.workloadId;
  }

  protected stepEvent(step: StepRecord, state: FinishedStepState, reason: string | null, error: string | null) {
    const type = state === 'MOVED' ? 'ROLLOUT_NODE_FINISHED' : state === 'FAILED' ? 'ROLLOUT_NODE_FAILED' : 'ROLLOUT_NODE_SKIPPED';
    const detail = this.detail(step);
    return { type, payload: { node: step.workloadId, wave: detail.wave + 1, reason, error, operations: detail.operations } };
  }

  // --- one look at everything

  /** Moves every node step on, starts the next wave when it may, ends the rollout when all is done. True once ended. */
  private async pass(): Promise<boolean> {
    const cluster = await this.host.cluster();
    const byId = new Map(cluster.map((n) => [n.id, n]));
    const lines: WaitingOn[] = [];
    for (const step of this.steps) {
      if (this.halted) return true;
      if (!IN_FLIGHT.includes(this.detail(step).phase)) continue;
      const line = await this.advance(step, byId.get(step.workloadId) ?? null);
      if (line) lines.push(line);
    }
    if (this.halted) return true;
    const { state } = this.snapshot;
    const inFlight = this.steps.filter((s) => IN_FLIGHT.includes(this.detail(s).phase));
    if (state === 'CANCELLING') {
      if (inFlight.length === 0) {
        this.skipUnattempted(
          this.steps.filter((s) => s.state === 'PLANNED'),
          'CANCELLED',
        );
        await this.end('CANCELLED', null);
        return true;
      }
    } else if (this.steps.every((s) => this.finished(s))) {
      const failed = this.steps.filter((s) => s.state === 'FAILED');
      await this.end(
        failed.length ? 'FAILED' : 'SUCCEEDED',
        failed.length ? `${failed.length} node(s) failed: ${failed.map((s) => s.workloadId).join(', ')}` : null,
      );
      return true;
    } else if (state === 'RUNNING' && inFlight.length === 0) {
      const gate = await this.startNextWave(cluster);
      if (gate) lines.push(gate);
    }
    if (this.snapshot.state === 'PAUSED') lines.unshift(this.pausedLine());
    this.showWaiting(lines);
    return false;
  }

  /** rollout:O5, rollout:O7: the next wave goes out when every node of the previous one is back and the budget allows. */
  private async startNextWave(cluster: RolloutNodeView[]): Promise<WaitingOn | null> {
    const wave = this.currentWave();
    if (wave === null) return null;
    const pending = this.steps.filter((s) => this.detail(s).wave === wave - 1 && s.state === 'PLANNED');
    const admission = waveAdmission(
      cluster,
      pending.map((s) => s.workloadId),
      this.settings.maxUnavailable,
    );
    if (!admission.ok) {
      return { kind: admission.kind, description: admission.description, nodeId: null, workloadIds: admission.nodeIds, since: this.host.clock.now() };
    }
    for (const step of pending) {
      if (this.halted || this.snapshot.state !== 'RUNNING') break;
      await this.beginNode(step);
    }
    return null;
  }

  private async beginNode(step: StepRecord): Promise<void> {
    this.startStep(step);
    this.nodeEvent(step, 'ROLLOUT_NODE_STARTED', { action: this.settings.action });
    const nodeId = step.workloadId;
    if (this.settings.action === 'DRAIN_FILL') await this.startOperation(step, 'DRAIN', () => this.host.startDrain(nodeId, this.meta()));
    else await this.startOperation(step, 'MAINTENANCE', () => this.host.enableMaintenance(nodeId, this.settings, this.meta()));
  }

  // --- a node step, phase by phase

  /** Moves one node step on as far as it can now; says what it waits on. */
  private async advance(step: StepRecord, node: RolloutNodeView | null): Promise<WaitingOn | null> {
    const detail = this.detail(step);
    const name = node?.name ?? step.workloadId;
    const cancelling = this.snapshot.state === 'CANCELLING';
    const line = (kind: string, text: string, since = detail.since): WaitingOn => ({
      kind,
      description: `${name}: ${text}`,
      nodeId: step.workloadId,
      workloadIds: [step.workloadId],
      since,
    });
    switch (detail.phase) {
      case 'DRAINING':
      case 'ENTERING_MAINTENANCE': {
        const op = await this.lastOperation(detail);
        if (!op) return null;
        if (cancelling) return this.bringBack(step, op, line);
        if (!ended(op)) return line(detail.phase, describeNode(op));
        if (op.state !== 'SUCCEEDED') {
          await this.saveLeftBehind(step);
          return this.fail(
            step,
            `${op.kind}_${op.state}`,
            `${op.kind.toLowerCase()} ${op.state.toLowerCase()}${op.error ? ` (${op.error})` : ''}${op.waitingOn ? `: ${op.waitingOn.description}` : ''}`,
          );
        }
        return this.afterEvacuation(step, node, line);
      }
      case 'UNSAFE_TO_RESTART':
        if (cancelling) return this.bringBack(step, null, line);
        if (this.snapshot.state !== 'RUNNING') return line('UNSAFE_TO_RESTART', `not restarted: ${detail.blockers.map((b) => b.id).join(', ')}`);
        return this.afterEvacuation(step, node, line);
      case 'WAITING_FOR_RESTART':
        if (cancelling) return this.bringBack(step, null, line);
        if (!hasRestarted(detail, node?.bootId) && !(await this.reattachLogged(step, detail.since)))
          return line('RESTART', `waiting for re-attach since ${clockTime(detail.since)}`);
        await this.enter(step, 'RETURNING', 'ROLLOUT_NODE_RESTARTED');
        return this.advance(step, node);
      case 'WAITING_FOR_CONFIRM':
        if (cancelling) return this.bringBack(step, null, line);
        if (detail.confirmedAt === null) return line('CONFIRM', `waiting for continueRollout since ${clockTime(detail.since)}`);
        await this.enter(step, 'RETURNING', 'ROLLOUT_NODE_RESTARTED');
        return this.advance(step, node);
      case 'RETURNING':
        // rollout:O7: back means ACTIVE again (a Kubernetes node Ready, a pageserver past its warm-up).
        if (!node || node.availability !== 'ACTIVE') return line('RETURNING', `restarted, waiting until ACTIVE (now ${node?.availability ?? 'gone'})`);
        return this.putBack(step, line);
      case 'LEAVING_MAINTENANCE':
        return this.putBack(step, line);
      case 'FILLING': {
        const op = await this.lastOperation(detail);
        if (!op) return null;
        if (!ended(op)) return line('FILL', describeNode(op));
        if (op.state !== 'SUCCEEDED' && !detail.cancelled)
          return this.fail(step, `FILL_${op.state}`, `fill ${op.state.toLowerCase()}${op.error ? ` (${op.error})` : ''}`);
        return this.settle(step, node, line);
      }
      case 'SETTLING':
        return this.settle(step, node, line);
      default:
        return null;
    }
  }

  /** rollout:O6: the safety gate, then the node is handed over for its restart (or not restarted at all). */
  private async afterEvacuation(step: StepRecord, node: RolloutNodeView | null, line: (kind: string, text: string) => WaitingOn): Promise<WaitingOn | null> {
    const { restart } = this.settings;
    if (restart === 'NONE') return this.putBack(step, line);
    const blockers = await unsafeWorkloads(this.host, step.workloadId);
    const grant = this.detail(step).unsafeRestartAllowed;
    if (blockers.length && !grant) {
      const text = `not restarted: ${blockers.map((b) => `${b.id} (${b.reasons.join('; ')})`).join(', ')}`;
      if (this.detail(step).phase !== 'UNSAFE_TO_RESTART') {
        await this.save(step, { phase: 'UNSAFE_TO_RESTART', blockers, since: this.host.clock.now() });
        this.nodeEvent(step, 'ROLLOUT_NODE_UNSAFE_TO_RESTART', { blockers });
      }
      if (this.snapshot.state === 'RUNNING') await this.host.pause(this, `${node?.name ?? step.workloadId}: ${text}`, { node: step.workloadId, blockers });
      return line('UNSAFE_TO_RESTART', text);
    }
    if (blockers.length && grant) {
      // rollout:O12: every use of an override names the node and what was unsafe.
      await this.host.auditUnsafeRestart(this, step.workloadId, blockers, grant);
      this.nodeEvent(step, 'ROLLOUT_NODE_UNSAFE_RESTART', { blockers, allowedBy: grant.by, allowedReason: grant.reason });
    }
    const confirm = restart === 'CONFIRM';
    await this.save(step, {
      phase: confirm ? 'WAITING_FOR_CONFIRM' : 'WAITING_FOR_RESTART',
      bootBefore: node?.bootId ?? null,
      reattachedAt: null,
      confirmedAt: null,
      blockers: [],
      since: this.host.clock.now(),
    });
    this.nodeEvent(step, confirm ? 'ROLLOUT_NODE_AWAITING_CONFIRM' : 'ROLLOUT_NODE_AWAITING_RESTART', { bootId: node?.bootId ?? null });
    return line(confirm ? 'CONFIRM' : 'RESTART', confirm ? 'waiting for continueRollout' : 'waiting for re-attach');
  }

  /** The node comes back into service: its maintenance disabled, or its fill started. */
  private async putBack(step: StepRecord, line: (kind: string, text: string) => WaitingOn): Promise<WaitingOn | null> {
    const nodeId = step.workloadId;
    if (this.settings.action === 'MAINTENANCE') {
      if (this.detail(step).phase !== 'LEAVING_MAINTENANCE') await this.enter(step, 'LEAVING_MAINTENANCE', null);
      const fill = await this.host.leaveMaintenance(nodeId, this.detail(step).since, this.meta());
      if (fill) {
        await this.save(step, { operations: [...this.detail(step).operations, { kind: 'FILL', id: fill }], phase: 'FILLING', since: this.host.clock.now() });
        return line('FILL', 'fill starting');
      }
      await this.enterSettling(step);
      return null;
    }
    try {
      await this.startOperation(step, 'FILL', () => this.host.startFill(nodeId, this.meta()));
    } catch (e) {
      return this.fail(step, e instanceof LockkeeperError ? e.code : 'FILL_REFUSED', `fill refused: ${e instanceof Error ? e.message : String(e)}`);
    }
    return line('FILL', 'fill starting');
  }

  private async enterSettling(step: StepRecord): Promise<void> {
    await this.save(step, { phase: 'SETTLING', since: this.host.clock.now(), settleUntil: this.host.clock.now() + this.settings.settleSeconds * 1000 });
    const cancelTimer = this.host.clock.setTimer(this.settings.settleSeconds * 1000, () => {
      cancelTimer();
      this.nudge();
    });
  }

  /** rollout:O7: the node serves again and has settled: its step is done. */
  private async settle(step: StepRecord, node: RolloutNodeView | null, line: (kind: string, text: string) => WaitingOn): Promise<WaitingOn | null> {
    const detail = this.detail(step);
    if (detail.phase !== 'SETTLING') {
      await this.enterSettling(step);
      return this.settle(step, node, line);
    }
    const why = node ? outOfService(node) : 'gone';
    if (why) return line('SETTLING', `waiting until back in service (${why})`);
    if (this.host.clock.now() < (detail.settleUntil ?? 0)) return line('SETTLING', `settling until ${clockTime(detail.settleUntil!)}`);
    await this.save(step, { phase: detail.cancelled ? 'SKIPPED' : 'DONE', since: this.host.clock.now() });
    // A node a cancel brought back without its restart is left as it was: skipped, not done.
    if (detail.cancelled) this.finishStep(step, 'SKIPPED', 'CANCELLED', null);
    else this.finishStep(step, 'MOVED', null, null);
    await this.host.flush();
    return null;
  }

  /**
   * rollout:O8: a cancel brings the node step in flight back into service: a running
   * drain is cancelled and the node filled back; a maintenance is disabled.
   */
  private async bringBack(step: StepRecord, op: OperationSnapshot | null, line: (kind: string, text: string) => WaitingOn): Promise<WaitingOn | null> {
    if (!this.detail(step).cancelled) await this.save(step, { cancelled: true });
    if (op && !ended(op)) {
      if (op.kind === 'DRAIN' && op.state === 'RUNNING') await this.host.cancelDrain(step.workloadId, this.meta());
      if (op.kind === 'DRAIN') return line('CANCELLING', 'drain cancelling');
    }
    return this.putBack(step, line);
  }

  /**
   * rollout:O6, rollout:O8: a drain or maintenance that failed names what it left on the node
   * (the node's blockers, then the pause's), as a refused start names its blockers: the
   * operator sees the pod a PodDisruptionBudget held, not only "maintenance failed". A read
   * that fails leaves the blockers as they were: the failure is reported either way.
   */
  private async saveLeftBehind(step: StepRecord): Promise<void> {
    const left = await unsafeWorkloads(this.host, step.workloadId).catch(() => null);
    if (left?.length) await this.save(step, { blockers: left });
  }

  private async fail(step: StepRecord, code: string, message: string): Promise<WaitingOn | null> {
    await this.save(step, { phase: 'FAILED', failure: message, since: this.host.clock.now() });
    this.finishStep(step, 'FAILED', code, message);
    await this.host.flush();
    if (this.settings.pauseOnFailure && this.snapshot.state === 'RUNNING') {
      const { operations, blockers } = this.detail(step);
      await this.host.pause(this, `${step.workloadId}: ${message}`, {
        node: step.workloadId,
        operations,
        failure: message,
        ...(blockers.length && { blockers }),
      });
    }
    return null;
  }

  // --- node operations, announced before they start (rollout:O9)

  private async startOperation(step: StepRecord, kind: RolloutNodeOperation['kind'], start: () => Promise<{ id: string }>): Promise<void> {
    await this.save(step, { intent: { kind, at: this.host.clock.now() } });
    let op: { id: string };
    try {
      op = await start();
    } catch (e) {
      await this.save(step, { intent: null });
      if (kind === 'FILL') throw e;
      const blockers = e instanceof PreconditionFailedError ? e.blockers : [];
      if (blockers.length) await this.save(step, { blockers });
      const reasons = blockers.map((b) => `${b.id}: ${b.reasons.join('; ')}`).join(', ');
      await this.fail(
        step,
        e instanceof LockkeeperError ? e.code : 'START_FAILED',
        `${e instanceof Error ? e.message : String(e)}${reasons ? ` (${reasons})` : ''}`,
      );
      return;
    }
    await this.recordOperation(step, { kind, id: op.id });
  }

  private async recordOperation(step: StepRecord, op: RolloutNodeOperation): Promise<void> {
    await this.save(step, {
      operations: [...this.detail(step).operations, op],
      intent: null,
      phase: PHASE_OF_OPERATION[op.kind],
      since: this.host.clock.now(),
    });
  }

  /** After a restart of the gateway: an operation announced but not recorded is adopted if it started, else forgotten. */
  private async adoptIntents(): Promise<void> {
    for (const step of this.steps) {
      const { intent } = this.detail(step);
      if (!intent) continue;
      const started = await this.host.operationSince(step.workloadId, intent.kind, intent.at);
      if (started) await this.recordOperation(step, { kind: intent.kind, id: started });
      else if (this.detail(step).phase === 'PENDING') {
        // The start never happened: the node is untouched and the wave starts it again.
        this.update(step, { state: 'PLANNED', startedAt: null });
        await this.save(step, { intent: null });
      } else await this.save(step, { intent: null });
    }
  }

  private async lastOperation(detail: RolloutNodeDetail): Promise<OperationSnapshot | null> {
    const last = detail.operations.at(-1);
    return last ? this.host.getOperation(last.id) : null;
  }

  // --- records

  detail(step: StepRecord): RolloutNodeDetail {
    return this.details.get(step.workloadId)!;
  }

  private finished(step: StepRecord): boolean {
    return step.state === 'MOVED' || step.state === 'FAILED' || step.state === 'SKIPPED';
  }

  private async enter(step: StepRecord, phase: RolloutNodePhase, event: string | null): Promise<void> {
    await this.save(step, { phase, since: this.host.clock.now() });
    if (event) this.nodeEvent(step, event, {});
  }

  /** Changes the node step and commits it before the run goes on. */
  private async save(step: StepRecord, change: Partial<RolloutNodeDetail>): Promise<void> {
    const detail = { ...this.detail(step), ...change };
    this.details.set(step.workloadId, detail);
    this.update(step, { detail: JSON.stringify(detail) });
    await this.host.flush();
  }

  private nodeEvent(step: StepRecord, type: string, payload: object): void {
    const detail = this.detail(step);
    this.host.journal.event({
      type,
      nodeId: step.workloadId,
      operationId: this.snapshot.id,
      at: this.host.clock.now(),
      payload: { node: step.workloadId, wave: detail.wave + 1, phase: detail.phase, ...payload },
    });
  }

  private meta() {
    return { actor: this.snapshot.actor ?? 'rollout', reason: `rollout ${this.snapshot.id}${this.snapshot.reason ? `: ${this.snapshot.reason}` : ''}` };
  }

  private pausedLine(): WaitingOn {
    const note = this.pauseNote ?? { why: 'paused: resumeRollout to go on', since: this.host.clock.now() };
    return { kind: 'PAUSED', description: note.why, nodeId: null, workloadIds: [], since: note.since };
  }

  /** rollout:O10: one waiting-on for the whole rollout, its lines joined. */
  private showWaiting(lines: WaitingOn[]): void {
    if (!lines.length) return;
    const [first] = lines;
    const description = lines
      .map((l) => l.description)
      .filter((d, i, all) => all.indexOf(d) === i)
      .join('; ');
    this.setWaiting({ ...first!, description, workloadIds: [...new Set(lines.flatMap((l) => l.workloadIds))].slice(0, 20) });
  }

  /** Why the run paused, shown first on its waiting-on until it resumes. */
  notePause(note: { why: string; since: number } | null): void {
    this.pauseNote = note;
    this.snapshot.waitingOn = note && this.pausedLine();
  }
}
