import type { OperationKind, OperationSnapshot } from '../../domain/operations.ts';

/** The operation kinds that count toward `maxConcurrentOperations` (a FAILOVER never does, neon:H5). */
export const LIMITED_KINDS: readonly OperationKind[] = ['DRAIN', 'FILL', 'DELETE', 'MAINTENANCE'];

const ofKind = (kind: OperationKind, kinds: readonly OperationKind[] | undefined) => !kinds || kinds.includes(kind);

/** What the coordinator needs of a run of any kind. */
export interface LiveRun {
  readonly snapshot: OperationSnapshot;
  /** Resolves when the run has stopped (ended, or halted). */
  readonly done: Promise<void>;
  /** Lets the run begin; returns `done`. */
  start(): Promise<void>;
  /** The gateway is stopping (or the operation was ended from outside): start nothing, record nothing more. */
  halt(): void;
  /** Something the run waits on may have changed: look again. */
  nudge(): void;
}

/**
 * The runs of every kind while they run, by operation id and node; and the parts: runs of
 * one kind inside an operation of another (a hyperconverged node's shard drain inside its
 * maintenance), which hold the node for their kind on behalf of their owner.
 */
export class LiveRuns {
  private readonly runs = new Map<string, LiveRun>();
  private readonly parts = new Map<string, { kind: OperationKind; owner: OperationSnapshot }>();

  add(run: LiveRun): void {
    this.runs.set(run.snapshot.id, run);
  }

  remove(run: LiveRun): void {
    if (this.runs.get(run.snapshot.id) === run) this.runs.delete(run.snapshot.id);
  }

  /** Forgets every run and part (this replica stopped leading). */
  clear(): void {
    this.runs.clear();
    this.parts.clear();
  }

  get(operationId: string): LiveRun | undefined {
    return this.runs.get(operationId);
  }

  /** Every run of one of `kinds` (of any kind when omitted). */
  all(kinds?: readonly OperationKind[]): LiveRun[] {
    // A loop, not spread + filter: engines ask at every backend event (one per move of a drain).
    const runs: LiveRun[] = [];
    for (const run of this.runs.values()) if (ofKind(run.snapshot.kind, kinds)) runs.push(run);
    return runs;
  }

  /** The run on the node of one of `kinds` (of any kind when omitted); parts are not runs of their own. */
  on(nodeId: string, kinds?: readonly OperationKind[]): LiveRun | undefined {
    for (const run of this.runs.values()) if (run.snapshot.nodeId === nodeId && ofKind(run.snapshot.kind, kinds)) return run;
    return undefined;
  }

  /** The operation holding the node for one of `kinds` (for any kind when omitted): its own run's, or a part's owner. */
  holder(nodeId: string, kinds?: readonly OperationKind[]): OperationSnapshot | undefined {
    const part = this.parts.get(nodeId);
    return this.on(nodeId, kinds)?.snapshot ?? (part && ofKind(part.kind, kinds) ? part.owner : undefined);
  }

  /**
   * What `maxConcurrentOperations` counts: the nodes held by a drain, fill, delete or
   * maintenance (issue 11: each counts), once per node — a maintenance and the drain part it
   * runs on its node are one operation.
   */
  limitedNodes(): string[] {
    return [...new Set(this.heldNodes(LIMITED_KINDS))];
  }

  /** Nodes held for one of `kinds`, one entry per run or part. */
  heldNodes(kinds: readonly OperationKind[]): string[] {
    const nodes: string[] = [];
    for (const run of this.runs.values()) if (kinds.includes(run.snapshot.kind) && run.snapshot.nodeId !== null) nodes.push(run.snapshot.nodeId);
    for (const [nodeId, part] of this.parts) if (kinds.includes(part.kind)) nodes.push(nodeId);
    return nodes;
  }

  addPart(nodeId: string, kind: OperationKind, owner: OperationSnapshot): void {
    this.parts.set(nodeId, { kind, owner });
  }

  removePart(nodeId: string): void {
    this.parts.delete(nodeId);
  }
}
