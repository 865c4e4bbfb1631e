/**
 * Completion estimate from the observed move rate: finished moves over the time since
 * the first move started, applied to what is left. Null until something finished, so
 * nobody is shown an estimate made of nothing.
 */
export function estimateCompletion(input: { now: number; firstMoveAt: number | null; finished: number; remaining: number }): number | null {
  const { now, firstMoveAt, finished, remaining } = input;
  if (remaining === 0) return now;
  if (firstMoveAt === null || finished === 0 || now <= firstMoveAt) return null;
  const perMs = finished / (now - firstMoveAt);
  return Math.round(now + remaining / perMs);
}
