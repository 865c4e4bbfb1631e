/**
 * WAL as the safekeepers hand it to pageservers, shared by the simulated pageservers of a
 * test: per tenant shard and timeline, the LSN the newest WAL reached (its head). An
 * attached location ingests up to the head (possibly late, see `PageserverSim.holdCatchUp`);
 * a secondary ingests nothing.
 */

/** Neon's first LSN of a fresh timeline, roughly: a realistic starting point for `hi/lo` strings. */
const INITIAL_LSN = 0x16b5a50;
/** The timeline every simulated tenant has unless a test adds others. */
export const DEFAULT_TIMELINE_ID = 'b'.repeat(32);

/** Neon's LSN text: upper and lower 32 bits in hex, e.g. `0/16B5A50`. */
export function formatLsn(lsn: number): string {
  const hi = Math.floor(lsn / 2 ** 32);
  const lo = lsn % 2 ** 32;
  return `${hi.toString(16).toUpperCase()}/${lo.toString(16).toUpperCase()}`;
}

/** Parses Neon's LSN text; null when it is not one. */
export function parseLsn(text: unknown): number | null {
  if (typeof text !== 'string') return null;
  const m = /^([0-9A-Fa-f]{1,8})\/([0-9A-Fa-f]{1,8})$/.exec(text);
  if (!m) return null;
  return parseInt(m[1]!, 16) * 2 ** 32 + parseInt(m[2]!, 16);
}

export class WalStreams {
  private readonly heads = new Map<string, Map<string, number>>();

  /** The timelines of a shard and their heads (a shard is given the default timeline when first seen). */
  timelines(shardId: string): Map<string, number> {
    let t = this.heads.get(shardId);
    if (!t) {
      t = new Map([[DEFAULT_TIMELINE_ID, INITIAL_LSN]]);
      this.heads.set(shardId, t);
    }
    return t;
  }

  head(shardId: string, timelineId: string): number | undefined {
    return this.timelines(shardId).get(timelineId);
  }

  /** New WAL arrives: the head moves `bytes` on (every timeline of the shard when none is named). */
  ingest(shardId: string, bytes = 8192, timelineId?: string): void {
    const t = this.timelines(shardId);
    for (const [id, lsn] of t) if (timelineId === undefined || id === timelineId) t.set(id, lsn + bytes);
  }

  /** The shard's timelines are exactly these, at these heads (a rehearsal's snapshot). */
  setTimelines(shardId: string, heads: ReadonlyMap<string, number>): void {
    this.heads.set(shardId, new Map(heads));
  }

  addTimeline(shardId: string, timelineId: string): void {
    this.timelines(shardId).set(timelineId, INITIAL_LSN);
  }
}
