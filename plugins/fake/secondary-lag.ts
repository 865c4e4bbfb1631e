import type { SecondaryStatus } from '../../src/cluster/types.ts';
import type { SavedSecondary } from './state-file.ts';

interface Download {
  bytesTotal: number;
  /** Bytes downloaded at `since`; progress after that is computed from the rate. */
  downloadedAtSince: number;
  since: number;
  bytesPerSecond: number;
  heatmapMtime: number | null;
}

/**
 * Download progress of every secondary location. Progress is a function of the clock
 * rather than a ticking timer, so 10 000 secondaries cost nothing until someone asks.
 */
export class SecondaryLagTable {
  /** By shard, then node: every cut-over reads and writes it, and a nested map spares building a key string each time. */
  private readonly downloads = new Map<string, Map<string, Download>>();

  constructor(
    private readonly now: () => number,
    private readonly defaultBytesPerSecond: number,
  ) {}

  set(shardId: string, nodeId: string, s: { bytesTotal: number; lagBytes: number; bytesPerSecond?: number; heatmapKnown?: boolean }): void {
    const now = this.now();
    this.put(shardId, nodeId, {
      bytesTotal: s.bytesTotal,
      downloadedAtSince: Math.max(0, s.bytesTotal - s.lagBytes),
      since: now,
      bytesPerSecond: s.bytesPerSecond ?? this.defaultBytesPerSecond,
      heatmapMtime: s.heatmapKnown === false ? null : now,
    });
  }

  /** A location that was attached holds everything: it becomes a warm secondary. */
  setWarm(shardId: string, nodeId: string, bytesTotal: number): void {
    this.set(shardId, nodeId, { bytesTotal, lagBytes: 0 });
  }

  /** Sets the remaining lag, growing the total when the lag exceeds it. */
  setLag(shardId: string, nodeId: string, lagBytes: number, bytesPerSecond?: number): void {
    const current = this.status(shardId, nodeId);
    const bytesTotal = Math.max(current?.bytesTotal ?? 0, lagBytes);
    this.set(shardId, nodeId, { bytesTotal, lagBytes, bytesPerSecond: bytesPerSecond ?? this.get(shardId, nodeId)?.bytesPerSecond });
  }

  status(shardId: string, nodeId: string): SecondaryStatus | null {
    const d = this.get(shardId, nodeId);
    if (!d) return null;
    return { bytesTotal: d.bytesTotal, bytesDownloaded: this.downloaded(d, this.now()), heatmapMtime: d.heatmapMtime };
  }

  /** Unknown: no heatmap, so `status` reports `heatmapMtime: null`. Known again: a fresh heatmap (now). */
  setHeatmapKnown(shardId: string, nodeId: string, known: boolean): void {
    const d = this.get(shardId, nodeId);
    if (!d) {
      this.set(shardId, nodeId, { bytesTotal: 0, lagBytes: 0, heatmapKnown: known });
      return;
    }
    if (known === (d.heatmapMtime !== null)) return;
    d.heatmapMtime = known ? this.now() : null;
  }

  delete(shardId: string, nodeId: string): void {
    const byNode = this.downloads.get(shardId);
    if (!byNode) return;
    byNode.delete(nodeId);
    if (!byNode.size) this.downloads.delete(shardId);
  }

  /** Every location's progress as of now, for the state file. */
  save(): SavedSecondary[] {
    const now = this.now();
    const saved: SavedSecondary[] = [];
    for (const [shardId, byNode] of this.downloads)
      for (const [nodeId, d] of byNode)
        saved.push({
          shardId,
          nodeId,
          bytesTotal: d.bytesTotal,
          bytesDownloaded: this.downloaded(d, now),
          bytesPerSecond: d.bytesPerSecond,
          heatmapAgeMs: d.heatmapMtime === null ? null : Math.max(0, now - d.heatmapMtime),
        });
    return saved;
  }

  /**
   * Restores saved progress. `elapsedMs` is how long the cluster ran unobserved since the
   * save (0 when the clock restarted before it, as a VirtualClock does): downloads went on.
   */
  restore(saved: readonly SavedSecondary[], elapsedMs: number): void {
    const now = this.now();
    for (const s of saved) {
      this.put(s.shardId, s.nodeId, {
        bytesTotal: s.bytesTotal,
        downloadedAtSince: Math.min(s.bytesTotal, s.bytesDownloaded + Math.floor((s.bytesPerSecond * elapsedMs) / 1000)),
        since: now,
        bytesPerSecond: s.bytesPerSecond,
        heatmapMtime: s.heatmapAgeMs === null ? null : now - elapsedMs - s.heatmapAgeMs,
      });
    }
  }

  private get(shardId: string, nodeId: string): Download | undefined {
    return this.downloads.get(shardId)?.get(nodeId);
  }

  private put(shardId: string, nodeId: string, d: Download): void {
    let byNode = this.downloads.get(shardId);
    if (!byNode) this.downloads.set(shardId, (byNode = new Map()));
    byNode.set(nodeId, d);
  }

  private downloaded(d: Download, now: number): number {
    return Math.min(d.bytesTotal, Math.floor(d.downloadedAtSince + d.bytesPerSecond * ((now - d.since) / 1000)));
  }
}
