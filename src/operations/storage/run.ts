import type { ClusterBackend } from '../../cluster/backend.ts';
import { isBackendError } from '../../cluster/errors.ts';
import type { ClusterShard } from '../../cluster/types.ts';
import { nodeOf, type OperationOutcome, type OperationSnapshot, type StepRecord, type StorageKind } from '../../domain/operations.ts';
import { decideDrain, warmthVerdict } from '../../domain/storage/drain-plan.ts';
import { reasonsLeftBy } from '../../domain/remaining.ts';
import type { PlanNode } from '../../domain/storage/shards.ts';
import type { PolicyStore } from '../../store/policy-store.ts';
import { StepRun, type FinishedStepState, type StepRunHost } from '../core/step-run.ts';
import type { OperationSettings } from '../../config/schema.ts';
import { CutOversInFlight, phaseDetail } from './cut-overs-in-flight.ts';

export interface StorageRunHost extends StepRunHost<StorageRun> {
  backend: ClusterBackend;
  policies: PolicyStore;
  settings: OperationSettings;
  /** The cluster's nodes as last seen, with their policies. */
  planNodes(): ReadonlyMap<string, PlanNode>;
}

/** Reason recorded on steps that never ran because the operation ended first. */
const NOT_ATTEMPTED = { CANCELLED: 'CANCELLED', FAILED: 'NOT_ATTEMPTED' } as const;
const WAITING_ON_SAMPLE = 20;

/**
 * One drain or fill, from its persisted plan to its end. Moves run in a bounded pool
 * (storage:D6): the next starts as soon as one finishes. Before each start the run checks for a
 * cancel (storage:S5) and that the node still has the operation's policy (storage:D7, storage:F4).
 */
export class StorageRun extends StepRun<StorageRun> {
  private readonly steps: Map<string, StepRecord>;
  /** Planned steps not started yet, in plan order: `queue[head…]` (taking from the front must not cost O(n)). */
  private queue: StepRecord[];
  private head = 0;
  private readonly inFlight = new Set<string>();
  private readonly cutOvers = new CutOversInFlight();
  private blockedSince: number | null = null;
  private movesDescription: { count: number; cancelling: boolean; phase: string | null; text: string } | null = null;

  constructor(
    protected override readonly host: StorageRunHost,
    snapshot: OperationSnapshot,
    steps: StepRecord[],
  ) {
    super(host, snapshot);
    this.steps = new Map(steps.map((s) => [s.workloadId, s]));
    this.queue = steps.filter((s) => s.state === 'PLANNED').sort((a, b) => a.seq - b.seq);
  }

  override get nodeId(): string {
    return nodeOf(this.snapshot);
  }

  get kind(): StorageKind {
    return this.snapshot.kind as StorageKind;
  }

  /** The cut-overs under way now. */
  inFlightSteps(): StepRecord[] {
    return [...this.inFlight].map((id) => this.steps.get(id)!);
  }

  /**
   * `force: true` (issue 17): the cut-overs in flight are abandoned with their last known
   * state, what was not attempted is skipped as CANCELLED, and the run stops now. The
   * engine ends the operation. Returns the abandoned steps.
   */
  forceCancel(): StepRecord[] {
    const abandoned = this.abandonInFlight(this.inFlightSteps(), (s) => this.lastKnown(s), this.takeQueued(), NOT_ATTEMPTED.CANCELLED);
    // neon:C11: cut-overs waiting for catch-up or compute stop, as on a plain cancel; the backend completes what it issued.
    this.cutOvers.cancelAll(`the ${this.kind.toLowerCase()} was force-cancelled`);
    return abandoned;
  }

  /** What an abandoned cut-over was last known to be doing (with the phase the backend last reported). */
  lastKnown(step: StepRecord): string {
    const since = step.startedAt === null ? '' : ` since ${new Date(step.startedAt).toISOString()}`;
    const phase = this.cutOvers.describe([step.workloadId]);
    return `cut-over of shard ${step.workloadId} from node ${step.fromNodeId ?? '?'} to node ${step.toNodeId ?? '?'} in flight${since}${phase ? ` (${phase})` : ''}, no answer from the backend`;
  }

  /** Why its skipped and failed steps left their shards (domain/remaining.ts). */
  leftBecause(): Map<string, string> {
    return reasonsLeftBy(this.steps.values());
  }

  /**
   * neon:H5, ha:R2: the node was lost and a FAILOVER takes its shards. The run ends now, in
   * the failover's own transaction (the caller writes the end): cut-overs in flight are
   * recorded ABANDONED (`NODE_OFFLINE`) with their last known state — the failover's recheck of
   * each shard finds where the backend left it — and what was not attempted is skipped.
   */
  endForLostNode(): StepRecord[] {
    const why = `node ${this.nodeId} went OFFLINE and a failover took over its shards`;
    const abandoned = this.abandonInFlight(
      this.inFlightSteps(),
      (s) => `${this.lastKnown(s)}; ${why}`,
      this.takeQueued(),
      NOT_ATTEMPTED.FAILED,
      'NODE_OFFLINE',
    );
    // neon:C11: cut-overs waiting for catch-up or compute stop stop waiting; the backend completes what it issued.
    this.cutOvers.cancelAll(why);
    return abandoned;
  }

  private get expectedPolicy() {
    return this.kind === 'DRAIN' ? 'DRAINING' : 'FILLING';
  }

  protected async run(): Promise<void> {
    let failure: string | null = null;
    const { clock, settings, policies } = this.host;
    for (;;) {
      const woken = this.nextWakeUp();
      if (this.halted) return;
      if (this.snapshot.state === 'CANCELLING') {
        // neon:C11: cut-overs waiting for catch-up or compute stop; the backend completes what it issued.
        this.cutOvers.cancelAll(`the ${this.kind.toLowerCase()} was cancelled`);
        break;
      }
      if (policies.get(this.nodeId) !== this.expectedPolicy) {
        failure = 'NODE_STATE_CHANGED';
        break;
      }
      if (this.queued === 0 && this.inFlight.size === 0) break;
      if (this.inFlight.size < settings.maxConcurrentMoves) {
        // Fill the pool at once: nothing can cancel or change the node between two launches of one pass.
        for (let next = this.takeRunnable(); next; next = this.inFlight.size < settings.maxConcurrentMoves ? this.takeRunnable() : undefined)
          this.launchMove(next);
        if (this.queued && this.inFlight.size === 0) {
          // Everything left touches an OFFLINE node: wait for it, up to the deadline (storage:X4).
          const offline = this.offlineNodesOf(this.queue[this.head]!, this.host.planNodes())[0] ?? this.nodeId;
          this.blockedSince ??= clock.now();
          const waited = clock.now() - this.blockedSince;
          if (waited >= settings.operationDeadlineMs) {
            failure = 'NODE_OFFLINE';
            break;
          }
          this.setWaiting({
            kind: 'NODE_OFFLINE',
            description: `paused: node ${offline} is OFFLINE; the operation fails if it does not return within ${Math.round(settings.operationDeadlineMs / 1000)} s`,
            nodeId: offline,
            workloadIds: this.queue.slice(this.head, this.head + WAITING_ON_SAMPLE).map((s) => s.workloadId),
            since: this.blockedSince,
          });
          await this.waitAtMost(woken, settings.operationDeadlineMs - waited);
          continue;
        }
      }
      this.showMovesInFlight();
      await woken;
    }
    while (this.inFlight.size) {
      if (this.halted) return;
      // storage:S5: moves in flight finish; nothing new starts.
      this.showMovesInFlight();
      await this.nextWakeUp();
    }
    const outcome: OperationOutcome = this.snapshot.state === 'CANCELLING' ? 'CANCELLED' : failure ? 'FAILED' : 'SUCCEEDED';
    this.skipUnattempted(this.takeQueued(), outcome === 'CANCELLED' ? NOT_ATTEMPTED.CANCELLED : NOT_ATTEMPTED.FAILED);
    this.snapshot.waitingOn = null;
    await this.end(outcome, failure);
  }

  protected stepEvent(step: StepRecord, state: FinishedStepState, reason: string | null, error: string | null) {
    return shardStepEvent(step, state, reason, error);
  }

  /** The planned steps not started yet; the queue is empty afterwards. */
  private takeQueued(): StepRecord[] {
    const rest = this.queue.slice(this.head);
    this.queue = [];
    this.head = 0;
    return rest;
  }

  private get queued(): number {
    return this.queue.length - this.head;
  }

  private offlineNodesOf(step: StepRecord, nodes: ReadonlyMap<string, PlanNode>): string[] {
    const involved = this.kind === 'DRAIN' ? [this.nodeId] : [this.nodeId, step.fromNodeId];
    return involved.filter((id): id is string => id !== null && nodes.get(id)?.availability === 'OFFLINE');
  }

  /** The first planned step whose nodes are not OFFLINE (moves touching an offline node wait). */
  private takeRunnable(): StepRecord | undefined {
    const nodes = this.host.planNodes();
    let index = this.head;
    // While no node is OFFLINE (nearly always) the first one runs; only otherwise look further.
    let anyOffline = false;
    for (const n of nodes.values()) if (n.availability === 'OFFLINE') anyOffline = true;
    if (anyOffline) while (index < this.queue.length && this.offlineNodesOf(this.queue[index]!, nodes).length) index++;
    if (index >= this.queue.length) return undefined;
    this.blockedSince = null;
    const step = this.queue[index]!;
    // The taken front stays in the array (every step is in `steps` anyway).
    if (index === this.head) this.head++;
    else this.queue.splice(index, 1);
    return step;
  }

  private launchMove(step: StepRecord): void {
    this.inFlight.add(step.workloadId);
    this.launch(
      step,
      () => (this.kind === 'DRAIN' ? this.drainOne(step) : this.fillOne(step)),
      () => this.inFlight.delete(step.workloadId),
    );
  }

  private async drainOne(step: StepRecord): Promise<void> {
    const shard = await this.readShard(step);
    if (!shard) return;
    const nodeId = this.nodeId;
    if (shard.attachedNodeId !== nodeId) {
      if (step.toNodeId !== null && shard.attachedNodeId === step.toNodeId) return this.runCutOver(step, shard, nodeId, step.toNodeId);
      return this.skip(step, 'NOT_ATTACHED_HERE', `attached to node ${shard.attachedNodeId} by someone else`);
    }
    const decision = decideDrain(shard, this.host.planNodes());
    if (decision.action === 'skip') return this.skip(step, decision.reason);
    await this.cutOver(step, shard, nodeId, decision.toNodeId);
  }

  private async fillOne(step: StepRecord): Promise<void> {
    const shard = await this.readShard(step);
    if (!shard) return;
    const nodeId = this.nodeId;
    if (shard.attachedNodeId === nodeId) return this.runCutOver(step, shard, step.fromNodeId ?? nodeId, nodeId);
    if (shard.policy === 'PAUSE' || shard.policy === 'STOP') return this.skip(step, `SHARD_POLICY_${shard.policy}`);
    if (!shard.secondaryNodeIds.includes(nodeId)) return this.skip(step, 'NO_SECONDARY_ON_NODE');
    await this.cutOver(step, shard, shard.attachedNodeId, nodeId);
  }

  private async readShard(step: StepRecord): Promise<ClusterShard | null> {
    const shard = await this.host.backend.getShard(step.workloadId);
    if (!shard) this.skip(step, 'SHARD_GONE');
    return shard;
  }

  /** storage:D4 (warmth), then the role swap (storage:D5). A failure is recorded and not retried (storage:D6). */
  private async cutOver(step: StepRecord, shard: ClusterShard, fromNodeId: string, toNodeId: string): Promise<void> {
    const { backend, settings } = this.host;
    const status = await backend.getSecondaryStatus(shard.id, toNodeId).catch(() => null);
    const verdict = warmthVerdict(status, settings.maxSecondaryLagBytes);
    if (!verdict.ok) {
      const detail = verdict.lagBytes === null ? 'secondary lag unknown' : `secondary lagging by ${verdict.lagBytes} bytes`;
      return this.skip(step, verdict.reason, `${detail} on node ${toNodeId}`);
    }
    await this.runCutOver(step, shard, fromNodeId, toNodeId);
  }

  /**
   * The cut-over itself; also for a shard already meant to be where the step sends it (a
   * resumed step, or someone else moved it). A backend that changes its intent before the
   * attachment (the pageserver plugin) may still be finishing a cut-over a killed gateway
   * began: the step is MOVED only once the backend holds the shard there (a cut-over to where
   * it is already attached joins it), so that the drain's end still means the node is safe to
   * restart.
   */
  private async runCutOver(step: StepRecord, shard: ClusterShard, fromNodeId: string, toNodeId: string): Promise<void> {
    const { backend, observer } = this.host;
    this.startStep(step, { fromNodeId, toNodeId });
    observer.movesInFlight(this.kind, 1);
    try {
      const phases = this.cutOvers.begin(shard.id, (progress) => {
        this.update(step, { detail: phaseDetail(progress) });
        this.showMovesInFlight();
      });
      const result = await backend.cutOverShard(shard.id, { fromNodeId, toNodeId, ...phases });
      // A note on a moved step says what happened on the way (retries); on a failed one, why.
      this.finishStep(step, 'MOVED', null, result?.note ?? null);
    } catch (e) {
      const code = isBackendError(e) ? e.code.toUpperCase() : 'ERROR';
      this.finishStep(step, 'FAILED', code, e instanceof Error ? e.message : String(e));
      this.host.log.warn({ operation: this.snapshot.id, shard: shard.id, node: toNodeId, err: e }, `cut-over of shard ${shard.id} to node ${toNodeId} failed`);
    } finally {
      this.cutOvers.end(shard.id);
      observer.movesInFlight(this.kind, -1);
    }
  }

  private skip(step: StepRecord, reason: string, detail?: string): void {
    this.host.log.info(
      { operation: this.snapshot.id, shard: step.workloadId, node: this.nodeId, reason },
      `shard ${step.workloadId} skipped: ${detail ?? reason}`,
    );
    this.finishStep(step, 'SKIPPED', reason, detail ?? null);
  }

  private showMovesInFlight(): void {
    const count = this.inFlight.size;
    if (!count) return;
    // The oldest few moves (a Set keeps insertion order): read at every wake-up, so no copy of the whole set.
    const ids: string[] = [];
    let since = Number.POSITIVE_INFINITY;
    for (const id of this.inFlight) {
      ids.push(id);
      since = Math.min(since, this.steps.get(id)?.startedAt ?? this.host.clock.now());
      if (ids.length === WAITING_ON_SAMPLE) break;
    }
    const phase = this.cutOvers.describe(ids);
    const cancelling = this.snapshot.state === 'CANCELLING';
    const last = this.movesDescription;
    if (last?.count !== count || last.cancelling !== cancelling || last.phase !== phase)
      this.movesDescription = {
        count,
        cancelling,
        phase,
        text: `${count} cut-over(s) in flight${phase ? ` (${phase})` : ''}${cancelling ? ' (cancelling: nothing new starts)' : ''}`,
      };
    this.setWaiting({ kind: 'MOVES_IN_FLIGHT', description: this.movesDescription!.text, nodeId: this.nodeId, workloadIds: ids, since });
  }
}

/** A drain's or fill's step on the event log: `SHARD_<STATE>` (also what an admission writes for the plan's skips). */
export function shardStepEvent(step: StepRecord, state: FinishedStepState, reason: string | null, error: string | null) {
  return { type: `SHARD_${state}`, payload: { shard: step.workloadId, from: step.fromNodeId, to: step.toNodeId, reason, error } };
}
