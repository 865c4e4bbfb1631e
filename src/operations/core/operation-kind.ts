import type { OperationKind, OperationOutcome, OperationSnapshot, RequestMeta, StepRecord } from '../../domain/operations.ts';
import type { InterruptedOperation } from '../../store/operation-repository.ts';
import type { PendingWrite } from '../../store/pending-write.ts';
import type { JournalWriter } from './journal.ts';
import type { LiveRun } from './live-runs.ts';

/**
 * An engine of one family of operation kinds, as the coordinator sees it: what to load
 * before runs resume, how to resume one, and how to stop following the backend.
 * Engines register themselves with the coordinator when they are built; they start in
 * that order.
 */
export interface OperationKindEngine {
  readonly kinds: readonly OperationKind[];
  /** Loads what runs need; false when the backend serves nothing of these kinds (nothing resumes). */
  prepare(): Promise<boolean>;
  /** Takes up an operation that was running when the process stopped (storage:X1, vm:M6). */
  resume(operation: InterruptedOperation): void;
  /**
   * Set by engines whose operations other replicas may admit (ha:R2): the leader takes one
   * up, reloading what that replica wrote with it (the node's policy or phase), then resumes it.
   */
  adopt?(operation: InterruptedOperation): Promise<void>;
  /** Reloads what other replicas may have changed (e.g. a node's policy: ha:R4); called by the leader under the admission lock. */
  sync?(): Promise<void>;
  /** Stops following the backend; the coordinator halts the runs. */
  stop(): void;
  /** Set by engines whose steps can also run inside an operation of another kind. */
  readonly parts?: PartEngine;
}

/** The plan of a part: its steps, or why the owner may not start (the part's own admission). */
export interface PartPlan {
  steps: StepRecord[];
  refusal: Error | null;
  /** The writes that give the node to the part, for the owner's starting transaction; then `applied`. */
  claim(operationId: string): { writes: PendingWrite[]; applied(): void };
}

/** How an engine runs its steps inside another operation (e.g. a shard drain inside a VM maintenance). */
export interface PartEngine {
  /** Null when the node has nothing of this kind. */
  plan(nodeId: string, now: number): Promise<PartPlan | null>;
  /** Runs the steps under the owner's record; `onEnd` hears how the part ended. */
  run(owner: OperationSnapshot, steps: StepRecord[], journal: JournalWriter, onEnd: (outcome: OperationOutcome, failure: string | null) => void): LiveRun;
  /**
   * The owner is done with the node: undo what the part changed and start what brings the
   * node's workloads back (unless `refill: false`). Call holding the admission lock. Says which
   * operation it started.
   */
  release(nodeId: string, meta: RequestMeta, options?: { refill?: boolean }): Promise<{ operationId: string | null; warning: string | null }>;
}
