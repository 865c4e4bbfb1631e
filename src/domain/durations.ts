/**
 * Durations and ETAs as people read them (issue 30, points 2 and 3), shared by the CLI and
 * the dashboard so both say the same thing. Pure.
 */

const pad = (n: number) => String(n).padStart(2, '0');

/**
 * `42s`, `1m05s`, `2h03m`: rounded once, to the unit shown last, before it is split (so
 * 119.6 s is `2m00s`, never `1m60s`).
 */
export function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${pad(s % 60)}s`;
  const minutes = Math.round(s / 60);
  return `${Math.floor(minutes / 60)}h${pad(minutes % 60)}m`;
}

/** What a running operation's ETA fields say (the GraphQL `Operation` fields of that name). */
export interface EtaFields {
  etaSeconds: number | null;
  etaUnknownReason?: string | null;
  /** How far the operation runs past the estimate it last gave (null while it is not). */
  etaOverdueSeconds?: number | null;
  stalled?: boolean | null;
}

/**
 * The ETA in words, never a time in the past: `1m05s`; `over by 1m05s` once the last
 * estimate has passed; `stalled` (with how far over, when known) while what is left is
 * stalled; `--` while there is no estimate yet. `elapsedSeconds`: how long ago the fields
 * were read, for a display that stays on screen between updates (the ETA counts down, then
 * turns into `over by`).
 */
export function etaText(fields: EtaFields, elapsedSeconds = 0): string {
  const op = aged(fields, elapsedSeconds);
  const over = op.etaOverdueSeconds ?? null;
  if (op.stalled) return over !== null && over > 0 ? `stalled, over by ${formatDuration(over)}` : 'stalled';
  if (over !== null && over > 0) return `over by ${formatDuration(over)}`;
  if (op.etaSeconds === null) return op.etaUnknownReason === 'STALLED' ? 'stalled' : '--';
  return formatDuration(op.etaSeconds);
}

/** The fields as they would read `elapsed` seconds after they were read. */
function aged(op: EtaFields, elapsed: number): EtaFields {
  const e = Math.max(0, elapsed);
  if (e === 0) return op;
  if (op.etaOverdueSeconds) return { ...op, etaOverdueSeconds: op.etaOverdueSeconds + e };
  if (op.etaSeconds === null) return op;
  const left = op.etaSeconds - e;
  return left >= 0 ? { ...op, etaSeconds: left } : { ...op, etaSeconds: 0, etaOverdueSeconds: -left };
}
