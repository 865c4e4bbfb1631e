/**
 * Epoch milliseconds as the ISO-8601 text the hot path stores. A journal batch holds
 * thousands of times that fall on a few hundred milliseconds (a fast drain starts and
 * finishes dozens of steps per millisecond), so recent conversions are kept: formatting a
 * Date for each was a visible share of a zero-latency move's cost.
 */
const recent = new Map<number, string>();
/** Enough for a batch's distinct milliseconds; the cache is emptied past it, never grows without bound. */
const KEPT = 4096;

export function isoTime(ms: number): string {
  let text = recent.get(ms);
  if (text === undefined) {
    text = new Date(ms).toISOString();
    if (recent.size >= KEPT) recent.clear();
    recent.set(ms, text);
  }
  return text;
}
