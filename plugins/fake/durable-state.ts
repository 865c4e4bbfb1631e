import type { NodeLifecycle } from './node-lifecycle.ts';
import { moveKey, type Runtime } from './runtime.ts';
import { STATE_FILE_FORMAT, STATE_FILE_VERSION, writeStateFile, type StateFile } from './state-file.ts';

/** The whole simulated cluster as the state file records it; subjects of moves in flight as they were before the move. */
export function snapshotState(rt: Runtime, lifecycle: NodeLifecycle): StateFile {
  const { state } = rt;
  return {
    format: STATE_FILE_FORMAT,
    version: STATE_FILE_VERSION,
    savedAt: rt.clock.now(),
    nodes: [...state.nodes.values()],
    vms: [...state.vms.values()].map((vm) => {
      // A VM mid-move is recorded as it was before the move: after a reload the move did not happen.
      const before = rt.moves.get(moveKey('vm', vm.id))?.beforeMove;
      return before ? { ...vm, ...before } : vm;
    }),
    shards: [...state.shards.values()].map((s) => ({ ...s, sizeBytes: state.shardSizes.get(s.id) ?? 0 })),
    secondaries: rt.lag.save(),
    moves: rt.moves.save(),
    latencies: { ...rt.latencies },
    faults: rt.faults.get(),
    ...lifecycle.save(),
  };
}

/**
 * Writes the state file after changes. `changed()` only marks the state dirty and queues a
 * save as a microtask, so all changes of one synchronous tick are written once; because
 * microtasks run in order, that save runs before the delivery of any event and the
 * reactions to any promise settled after the change (both are queued later), so an
 * action's effect is on disk before anyone can see it happened.
 */
export class StateSaver {
  private dirty = false;
  private closed = false;
  private snapshot: () => StateFile = () => {
    throw new Error('StateSaver used before attach()');
  };

  constructor(readonly path: string) {}

  /** The state to save; set once the cluster is built (the saver exists before it). */
  attach(snapshot: () => StateFile): void {
    this.snapshot = snapshot;
  }

  readonly changed = (): void => {
    if (this.dirty || this.closed) return;
    this.dirty = true;
    queueMicrotask(() => this.flush());
  };

  /** Writes now if anything changed since the last write. A failed write throws (uncaught from the microtask: loud on purpose). */
  flush(): void {
    if (!this.dirty || this.closed) return;
    this.dirty = false;
    writeStateFile(this.path, this.snapshot());
  }

  writeNow(): void {
    this.dirty = true;
    this.flush();
  }

  /** Saves what is pending; nothing is written after this (another instance may own the file next). */
  close(): void {
    this.flush();
    this.closed = true;
  }
}
