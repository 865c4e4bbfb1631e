/**
 * The heatmaps in remote storage, shared by the simulated pageservers of a fleet (as the
 * WAL is): an attached location uploads one every `heatmap_period` of its tenant config
 * while that period is above zero (Neon's heatmap uploader skips tenants whose period is
 * 0 or unset), and once on a flush (`flush_ms` on a location_config to AttachedStale) or an explicit
 * `POST …/heatmap_upload`. Secondaries follow the uploads: each one they pick up lists the
 * layers the workload rewrote since their last, `churnBytesPerSecond` of them, which they
 * download again. Without uploads a secondary keeps an old heatmap, and the upload before
 * its next warm-up names every layer rewritten since: that warm-up takes longer.
 */

/** A humantime duration (`60s`, `1m`, `1h 30m`, `250ms`, `0s`) in ms; null when it is not one. */
export function humantimeMs(text: unknown): number | null {
  if (typeof text !== 'string') return null;
  const units: Record<string, number> = {
    ...Object.fromEntries(['ms', 'msec', 'msecs'].map((u) => [u, 1])),
    ...Object.fromEntries(['s', 'sec', 'secs', 'second', 'seconds'].map((u) => [u, 1000])),
    ...Object.fromEntries(['m', 'min', 'mins', 'minute', 'minutes'].map((u) => [u, 60_000])),
    ...Object.fromEntries(['h', 'hr', 'hrs', 'hour', 'hours'].map((u) => [u, 3_600_000])),
    ...Object.fromEntries(['d', 'day', 'days'].map((u) => [u, 86_400_000])),
    ...Object.fromEntries(['w', 'week', 'weeks'].map((u) => [u, 7 * 86_400_000])),
  };
  let total = 0;
  const re = /\s*(\d+)\s*([a-z]+)/gy;
  let m: RegExpExecArray | null;
  let end = 0;
  while ((m = re.exec(text))) {
    const unit = units[m[2]!];
    if (unit === undefined) return null;
    total += Number(m[1]) * unit;
    end = re.lastIndex;
  }
  return end > 0 && text.slice(end).trim() === '' ? total : null;
}

interface Schedule {
  since: number;
  periodMs: number;
}

export class RemoteHeatmaps {
  /** Bytes of each shard's layers its workload rewrites per second (default 0: heatmaps age without consequence). */
  churnBytesPerSecond = 0;
  /** Per shard: the times of one-off uploads (flushes, explicit requests, seeds). */
  private readonly once = new Map<string, number[]>();
  /** Per shard and uploading node: the periodic uploads of an attached location. */
  private readonly periodic = new Map<string, Map<number, Schedule>>();

  /** A one-off upload of the shard's heatmap at `at`. */
  upload(shardId: string, at: number): void {
    const list = this.once.get(shardId) ?? [];
    list.push(at);
    this.once.set(shardId, list);
  }

  /**
   * The node's location of the shard uploads every `periodMs` from `now` on (the uploader's
   * first upload is one period after it starts); null or 0 stops it.
   */
  schedule(shardId: string, nodeId: number, periodMs: number | null, now: number): void {
    const byNode = this.periodic.get(shardId) ?? new Map<number, Schedule>();
    const current = byNode.get(nodeId);
    const next = periodMs && periodMs > 0 ? periodMs : null;
    if (current && current.periodMs === next) return;
    if (current) {
      // The uploads it made stay in remote storage for secondaries that have not looked yet.
      for (let t = current.since + current.periodMs; t <= now; t += current.periodMs) this.upload(shardId, t);
      byNode.delete(nodeId);
    }
    if (next) byNode.set(nodeId, { since: now, periodMs: next });
    this.periodic.set(shardId, byNode);
  }

  /** Whether the node's location of the shard uploads heatmaps periodically now. */
  uploading(shardId: string, nodeId: number): boolean {
    return this.periodic.get(shardId)?.has(nodeId) ?? false;
  }

  /** The times of the shard's uploads in (`after`, `until`], in order. */
  uploadsBetween(shardId: string, after: number, until: number): number[] {
    const times = (this.once.get(shardId) ?? []).filter((t) => t > after && t <= until);
    for (const { since, periodMs } of this.periodic.get(shardId)?.values() ?? []) {
      for (let k = Math.max(1, Math.floor((after - since) / periodMs) + 1); since + k * periodMs <= until; k++) times.push(since + k * periodMs);
    }
    return [...new Set(times)].sort((a, b) => a - b);
  }

  /** When the newest heatmap uploaded by `now` was (null: none). */
  latest(shardId: string, now: number): number | null {
    let newest: number | null = null;
    for (const t of this.once.get(shardId) ?? []) if (t <= now && (newest === null || t > newest)) newest = t;
    for (const { since, periodMs } of this.periodic.get(shardId)?.values() ?? []) {
      const k = Math.floor((now - since) / periodMs);
      if (k >= 1 && (newest === null || since + k * periodMs > newest)) newest = since + k * periodMs;
    }
    return newest;
  }

  /** Bytes of layers rewritten between two heatmaps. */
  churnBetween(from: number, to: number): number {
    return Math.floor((this.churnBytesPerSecond * Math.max(0, to - from)) / 1000);
  }
}
