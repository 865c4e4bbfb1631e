import type { ActionKind } from '../../src/cluster/backend.ts';
import type { Clock } from '../../src/cluster/clock.ts';
import type { BackendError } from '../../src/cluster/errors.ts';
import type { ClusterVm } from '../../src/cluster/types.ts';
import type { FaultInjector } from './faults.ts';
import { createPrng } from '../../src/domain/prng.ts';
import type { MoveResult, SavedMove } from './state-file.ts';

/** An action in flight on one subject (a node, a VM or a shard). */
export interface Move {
  readonly kind: ActionKind;
  /** Where the subject is heading: migration/start target node, cut-over destination. */
  readonly targetNodeId: string | undefined;
  /** What the move is for when the kind alone does not say, e.g. cordon vs. uncordon. */
  readonly goal: string | undefined;
  /** See MoveSpec.beforeMove. */
  readonly beforeMove: Partial<ClusterVm> | undefined;
  readonly promise: Promise<void>;
  /** The move as the state file records it (see MoveSpec.result). */
  saved(): SavedMove;
  /** Cancels the move and rejects its promise; the caller sets the resulting state. */
  abort(error: BackendError): void;
}

export interface MoveSpec {
  kind: ActionKind;
  latencyMs: number;
  targetNodeId?: string;
  goal?: string;
  /** A VM or shard id that the `stuck` fault applies to. */
  stuckId?: string;
  /**
   * VM fields as they were before the move changed them: the state file records these
   * while the move is in flight, so a reload that finds the move unfinished has the VM
   * where it was (see moves-after-crash.ts).
   */
  beforeMove?: Partial<ClusterVm>;
  /** What the move does when its latency has run, saved so a reload can finish it. */
  result: MoveResult;
  /** Applies the result; may throw (after restoring the state) when the world changed meanwhile. */
  complete(): void;
}

/**
 * Runs actions on the injected clock and keeps one move per subject, so that a repeated
 * request can join the move in flight and node restarts can abort what touches them.
 */
export class MoveTracker {
  private readonly moves = new Map<string, Move>();

  constructor(
    private readonly clock: Clock,
    private readonly faults: FaultInjector,
    /** A move's latency as it turns out this time (latency spikes); as given by default. */
    private readonly latencyOf: (ms: number) => number = (ms) => ms,
  ) {}

  get(key: string): Move | undefined {
    return this.moves.get(key);
  }

  entries(): IterableIterator<[string, Move]> {
    return this.moves.entries();
  }

  start(key: string, spec: MoveSpec): Promise<void> {
    const startedAt = this.clock.now();
    const latencyMs = this.latencyOf(spec.latencyMs);
    let settled = false;
    let cancelTimer = () => {};
    let cancelStuck = () => {};
    let abort!: (error: BackendError) => void;
    const promise = new Promise<void>((resolve, reject) => {
      const settle = (error?: unknown) => {
        if (settled) return;
        settled = true;
        this.moves.delete(key);
        if (error === undefined) resolve();
        else reject(error);
      };
      abort = (error) => {
        cancelTimer();
        cancelStuck();
        settle(error);
      };
      const finish = () => {
        if (settled) return;
        try {
          spec.complete();
          settle();
        } catch (error) {
          settle(error);
        }
      };
      cancelTimer = this.clock.setTimer(latencyMs, () => {
        if (spec.stuckId === undefined || !this.faults.isStuck(spec.stuckId)) return finish();
        const gate = this.faults.untilUnstuck(spec.stuckId);
        cancelStuck = gate.cancel;
        void gate.promise.then(finish);
      });
    });
    this.moves.set(key, {
      kind: spec.kind,
      targetNodeId: spec.targetNodeId,
      goal: spec.goal,
      beforeMove: spec.beforeMove,
      promise,
      abort,
      saved: () => ({ result: spec.result, latencyMs, elapsedMs: Math.max(0, this.clock.now() - startedAt) }),
    });
    return promise;
  }

  /** The moves in flight, for the state file. */
  save(): SavedMove[] {
    return [...this.moves.values()].map((m) => m.saved());
  }

  abortAll(error: BackendError): void {
    for (const move of [...this.moves.values()]) move.abort(error);
  }
}

/** `factor` × the latency with probability `rate`, from a PRNG of its own (so injected failures draw the same sequence with or without spikes). */
export function latencySpikes(seed: number, spike: { rate: number; factor: number } | undefined): ((ms: number) => number) | undefined {
  if (!spike || spike.rate === 0) return undefined;
  const random = createPrng(seed ^ 0x5eed);
  return (ms) => (random() < spike.rate ? Math.round(ms * spike.factor) : ms);
}
