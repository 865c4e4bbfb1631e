import type { CutOverOptions, CutOverProgress } from '../../cluster/shard-control.ts';

/**
 * The cut-overs an operation has in flight, with the phase each is in (neon:C1–C9 as the
 * backend reports them) and a cancel for each: an operation's cancel stops those waiting
 * for WAL catch-up or the compute notification (neon:C11); the backend completes those
 * past their new generation by a direct attach.
 */
export class CutOversInFlight {
  private readonly entries = new Map<string, { progress: CutOverProgress | null }>();
  /** One cancel for every cut-over in flight (a cancel ends them all); a new one after it was used. */
  private controller = new AbortController();

  /** Options for the cut-over of `shardId`; `changed` hears each phase. */
  begin(shardId: string, changed: (progress: CutOverProgress) => void): Pick<CutOverOptions, 'signal' | 'onProgress'> {
    const entry = { progress: null as CutOverProgress | null };
    this.entries.set(shardId, entry);
    if (this.controller.signal.aborted) this.controller = new AbortController();
    return {
      signal: this.controller.signal,
      onProgress: (progress) => {
        entry.progress = progress;
        changed(progress);
      },
    };
  }

  end(shardId: string): void {
    this.entries.delete(shardId);
  }

  cancelAll(why: string): void {
    if (this.entries.size && !this.controller.signal.aborted) this.controller.abort(new Error(why));
  }

  /** e.g. "shard t/3: waiting for WAL catch-up on node 2", for the first cut-over with a phase among `shardIds`. */
  describe(shardIds: readonly string[]): string | null {
    for (const id of shardIds) {
      const p = this.entries.get(id)?.progress;
      if (p) return `shard ${id}: ${p.description}`;
    }
    return null;
  }
}

/** A step's `detail` for a shard move: the phase it is in. */
export function phaseDetail(progress: CutOverProgress): string {
  return JSON.stringify({ phase: progress.phase, description: progress.description });
}
