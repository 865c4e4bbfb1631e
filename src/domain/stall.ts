/**
 * Stalls and honest ETAs (issue 17, point 7): a step is stalled when it has run longer than
 * STALL_FACTOR times its expected duration. The expected duration is, in this order, the
 * median of the operation's finished steps (what this cluster really takes), the backend's
 * declared latency for the action, or the configured default. Pure: the run and the
 * GraphQL fields both read stalls through here.
 */

/** A step running longer than this many times its expected duration is stalled. */
const STALL_FACTOR = 2;

export interface StalledStep {
  workloadKind: string;
  workloadId: string;
  action: string;
  /** When the step started. */
  since: number;
  /** What it was expected to take. */
  expectedMs: number;
}

/** The median of the finished steps' durations, or null when none finished. */
export function medianDuration(durations: readonly number[]): number | null {
  if (durations.length === 0) return null;
  const sorted = [...durations].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : Math.round((sorted[mid - 1]! + sorted[mid]!) / 2);
}

/** The first of: the median of finished steps, the backend's declared latency, the configured default; never below 1 ms. */
export function expectedDuration(input: { finishedDurations: readonly number[]; declaredMs: number | null; defaultMs: number }): number {
  return Math.max(1, medianDuration(input.finishedDurations) ?? input.declaredMs ?? input.defaultMs);
}

/** The instant at which a step that started at `startedAt` counts as stalled. */
export function stallsAt(startedAt: number, expectedMs: number): number {
  return startedAt + STALL_FACTOR * expectedMs;
}

/** How far over its expected duration a stalled step is, at `now`. */
export function overBy(step: Pick<StalledStep, 'since' | 'expectedMs'>, now: number): number {
  return Math.max(0, now - step.since - step.expectedMs);
}

/** Why an operation that runs shows no ETA. */
export type EtaUnknownReason = 'NOTHING_FINISHED' | 'STALLED';

/**
 * The completion estimate at `now`, from the observed rate of finished steps: never in the
 * past. While steps are stalled and nothing else is left to do, or while nothing has
 * finished, there is no estimate, and the reason says why; as a stall goes on, the rate
 * falls and the estimate grows.
 */
export function etaAt(input: {
  now: number;
  /** When the first step started (the operation's start when unknown). */
  firstStartAt: number;
  /** Steps with an outcome other than SKIPPED. */
  finished: number;
  planned: number;
  moving: number;
  stalled: number;
}): { at: number | null; unknownReason: EtaUnknownReason | null } {
  const { now, firstStartAt, finished, planned, moving, stalled } = input;
  if (planned + moving === 0) return { at: now, unknownReason: null };
  if (stalled > 0 && stalled >= planned + moving) return { at: null, unknownReason: 'STALLED' };
  if (finished === 0 || now <= firstStartAt) return { at: null, unknownReason: stalled ? 'STALLED' : 'NOTHING_FINISHED' };
  const perMs = finished / (now - firstStartAt);
  return { at: Math.max(now, Math.round(now + (planned + moving) / perMs)), unknownReason: null };
}
