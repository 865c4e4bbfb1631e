import type { HistoryEvent } from './history.ts';
import type { HistoryRecord } from './types.ts';

/** The events a pod drain's eviction durations are read from (k8s:K5–K8). */
export const POD_EVICTION_EVENTS = ['POD_EVICTED', 'POD_GONE'] as const;

const podOf = (payload: unknown): string | null =>
  typeof payload === 'object' && payload !== null && 'pod' in payload && typeof (payload as { pod: unknown }).pod === 'string'
    ? (payload as { pod: string }).pod
    : null;

/**
 * POD_EVICT records of the pod drain: from a pod's POD_EVICTED (the eviction accepted) to its
 * POD_GONE (the drain saw it gone: 404 or a new UID) in the same operation, on the node the
 * events name. An eviction never seen gone (the deadline, a cancel) gives nothing.
 */
export function podEvictionsFromEvents(events: readonly HistoryEvent[]): HistoryRecord[] {
  const records: HistoryRecord[] = [];
  const evicted = new Map<string, number>();
  for (const e of [...events].sort((a, b) => a.at - b.at)) {
    const pod = podOf(e.payload);
    if (pod === null) continue;
    const key = `${e.operationId ?? ''}\u0000${pod}`;
    if (e.type === 'POD_EVICTED') evicted.set(key, e.at);
    else if (e.type === 'POD_GONE') {
      const since = evicted.get(key);
      if (since === undefined) continue;
      evicted.delete(key);
      records.push({ action: 'POD_EVICT', workloadId: pod, nodeId: e.nodeId, durationMs: e.at - since, at: e.at });
    }
  }
  return records;
}
