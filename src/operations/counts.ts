import type { OperationCounts, StepRecord, StepState } from './types.ts';

export function emptyCounts(): OperationCounts {
  return { planned: 0, moving: 0, moved: 0, skipped: 0, failed: 0, skippedByReason: {}, failedByReason: {} };
}

const FIELD: Record<StepState, keyof Omit<OperationCounts, 'skippedByReason' | 'failedByReason'>> = {
  PLANNED: 'planned',
  MOVING: 'moving',
  MOVED: 'moved',
  SKIPPED: 'skipped',
  FAILED: 'failed',
};

/** Adjusts `counts` for a step going from `before` (null: new) to `after`. */
export function countTransition(counts: OperationCounts, before: StepRecord | null, after: StepRecord): void {
  if (before) {
    counts[FIELD[before.state]]--;
    if (before.state === 'SKIPPED') bump(counts.skippedByReason, before.reason, -1);
    if (before.state === 'FAILED') bump(counts.failedByReason, before.reason, -1);
  }
  counts[FIELD[after.state]]++;
  if (after.state === 'SKIPPED') bump(counts.skippedByReason, after.reason, 1);
  if (after.state === 'FAILED') bump(counts.failedByReason, after.reason, 1);
}

function bump(map: Record<string, number>, key: string | null, delta: number) {
  const k = key ?? 'UNKNOWN';
  const v = (map[k] ?? 0) + delta;
  if (v) map[k] = v;
  else delete map[k];
}

export function countsOf(steps: Iterable<StepRecord>): OperationCounts {
  const counts = emptyCounts();
  for (const s of steps) countTransition(counts, null, s);
  return counts;
}
