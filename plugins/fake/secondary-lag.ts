import type { SecondaryStatus } from '../../src/cluster/types.ts';

interface Download {
  bytesTotal: number;
  /** Bytes downloaded at `since`; progress after that is computed from the rate. */
  downloadedAtSince: number;
  since: number;
  bytesPerSecond: number;
  heatmapMtime: number | null;
}

const key = (shardId: string, nodeId: string) => `${shardId}\u0000${nodeId}`;

/**
 * Download progress of every secondary location. Progress is a function of the clock
 * rather than a ticking timer, so 10 000 secondaries cost nothing until someone asks.
 */
export class SecondaryLagTable {
  private readonly downloads = new Map<string, Download>();

  constructor(
    private readonly now: () => number,
    private readonly defaultBytesPerSecond: number,
  ) {}

  set(
    shardId: string,
    nodeId: string,
    s: { bytesTotal: number; lagBytes: number; bytesPerSecond?: number; heatmapKnown?: boolean },
  ): void {
    const now = this.now();
    this.downloads.set(key(shardId, nodeId), {
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
    this.set(shardId, nodeId, { bytesTotal, lagBytes, bytesPerSecond: bytesPerSecond ?? this.downloads.get(key(shardId, nodeId))?.bytesPerSecond });
  }

  status(shardId: string, nodeId: string): SecondaryStatus | null {
    const d = this.downloads.get(key(shardId, nodeId));
    if (!d) return null;
    const elapsedSeconds = (this.now() - d.since) / 1000;
    const bytesDownloaded = Math.min(d.bytesTotal, Math.floor(d.downloadedAtSince + d.bytesPerSecond * elapsedSeconds));
    return { bytesTotal: d.bytesTotal, bytesDownloaded, heatmapMtime: d.heatmapMtime };
  }

  delete(shardId: string, nodeId: string): void {
    this.downloads.delete(key(shardId, nodeId));
  }
}
