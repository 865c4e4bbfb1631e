/**
 * ha:E3: a stand-by's subscribers hear what the leader does. The leader publishes
 * `operationProgress` and policy / phase `nodeChanged` on its own process's bus; a stand-by
 * follows the event log instead (woken by the leader's NOTIFY: ha:E1) and, for each
 * operation with new events, reads the operation and its steps from the database and
 * publishes the steps that changed since it last looked; for each node whose policy or
 * maintenance phase changed, it reloads them and publishes the node. (`workloadChanged` and
 * the backend's own `nodeChanged` come from the shared backend on every replica.)
 */
import type { ClusterBackend } from '../cluster/backend.ts';
import type { StepRecord } from '../domain/operations.ts';
import type { EventBus } from '../events/bus.ts';
import type { EventWakeup } from '../events/event-wakeup.ts';
import type { Logger } from '../logger.ts';
import type { Repositories } from '../store/repositories.ts';

/** Without a wake-up (a lost NOTIFY), look this often. */
const POLL_MS = 1000;
/** Events read per pass; more are read at once by the next. */
const BATCH = 1000;
const NODE_EVENTS = new Set(['NODE_POLICY_CHANGED', 'MAINTENANCE_PHASE_CHANGED']);
const ENDED = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED']);

const stepKey = (s: StepRecord) => `${s.workloadKind}\u0000${s.workloadId}`;
const stepSignature = (s: StepRecord) => [s.state, s.reason, s.error, s.fromNodeId, s.toNodeId, s.startedAt, s.finishedAt].join('\u0000');

export interface StandbyRelayDeps {
  store: Pick<Repositories, 'events' | 'operations' | 'policies' | 'maintenanceStates'>;
  bus: EventBus;
  /** Reads only (getNode). */
  backend: Pick<ClusterBackend, 'getNode'>;
  wakeup: EventWakeup;
  log: Logger;
}

export class StandbyRelay {
  private running = false;
  private loop: Promise<void> | null = null;
  /** null: the newest event is not known yet (the database was unavailable at start). */
  private cursor: number | null = 0;
  /** Per operation followed: each step's last published signature. */
  private readonly seen = new Map<string, Map<string, string>>();

  constructor(private readonly deps: StandbyRelayDeps) {}

  /** Follows the log from its newest event on. */
  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    // A stand-by made so by a database outage cannot read it now: the loop reads it once it can (issue 27).
    this.cursor = await this.deps.store.events.latestSeq().catch(() => null);
    this.loop = this.follow();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.deps.wakeup.notify();
    await this.loop;
    this.loop = null;
    this.seen.clear();
  }

  private async follow(): Promise<void> {
    while (this.running) {
      let full = false;
      try {
        full = await this.pass();
      } catch (e) {
        this.deps.log.debug({ err: e }, 'stand-by: relaying the leader’s progress failed; the next pass tries again');
      }
      if (!full && this.running) await this.deps.wakeup.wait(POLL_MS);
    }
  }

  /** One batch of new events relayed; true when there may be more at once. */
  private async pass(): Promise<boolean> {
    const { store, bus, backend } = this.deps;
    this.cursor ??= await store.events.latestSeq();
    const events = await store.events.read({ after: this.cursor }, BATCH);
    if (!events.length) return false;
    const operations = new Set<string>();
    const nodes = new Set<string>();
    for (const e of events) {
      if (e.operationId) operations.add(e.operationId);
      if (e.nodeId && NODE_EVENTS.has(e.type)) nodes.add(e.nodeId);
    }
    for (const nodeId of nodes) {
      await Promise.all([store.policies.refresh(nodeId), store.maintenanceStates.refresh(nodeId)]);
      const node = await backend.getNode(nodeId).catch(() => null);
      if (node && this.running) bus.publish('nodeChanged', node);
    }
    for (const id of operations) {
      const operation = await store.operations.find(id);
      if (!operation || !this.running) continue;
      const known = this.seen.get(id) ?? new Map<string, string>();
      const changed = (await store.operations.steps(id)).filter((s) => known.get(stepKey(s)) !== stepSignature(s));
      for (const s of changed) known.set(stepKey(s), stepSignature(s));
      if (ENDED.has(operation.state)) this.seen.delete(id);
      else this.seen.set(id, known);
      bus.publish('operationProgress', id, { operation, steps: changed });
    }
    this.cursor = events.at(-1)!.seq;
    return events.length === BATCH;
  }
}
