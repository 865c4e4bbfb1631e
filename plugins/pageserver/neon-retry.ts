/**
 * Neon's timing constants, each with its name in Neon's source (neon-parity.md), in one
 * place so a reader can check them against the spec.
 */

/**
 * `utils::backoff::retry` with `DEFAULT_BASE_BACKOFF_SECONDS` 0.1 and
 * `DEFAULT_MAX_BACKOFF_SECONDS` 3.0 as `Node::with_client_retries` uses them: no sleep
 * after the first failed attempt, then min(1.1^(k−1), 3) s after the k-th; no jitter.
 */
export function neonBackoffMs(failedAttempt: number): number {
  if (failedAttempt <= 1) return 0;
  return Math.round(Math.min(1.1 ** (failedAttempt - 1), 3) * 1000);
}

/** Neon's `exponential_backoff(n, 1.0, 10.0)` between compute-notification rounds of a cut-over (neon:C7): 0, 2, 4, 8, then 10 s. */
export function notifyRoundBackoffMs(round: number): number {
  if (round <= 0) return 0;
  return Math.min(2 ** round, 10) * 1000;
}

/** Calls of each kind: retries (after the first attempt) and the timeout of one attempt, as Neon's code has them. */
export const CALLS = {
  /** neon:C1: every location_config of a reconcile (literal in `Reconciler::location_config`). */
  locationConfig: { retries: 3, timeoutMs: 25_000 },
  /** neon:C1: `flush_ms` on the origin's AttachedStale (literal `from_secs(10)` in `live_migrate`). */
  flushMs: 10_000,
  /** neon:H1: one heartbeat (literals in heartbeater.rs). */
  heartbeat: { retries: 3, timeoutMs: 1_000 },
  /** neon:H4: the location listing of a node turning Active (`SHORT_RECONCILE_TIMEOUT`). */
  activation: { retries: 5, timeoutMs: 5_000 },
  /** neon:C7: is the origin still attached (literal 5 s). */
  originCheck: { retries: 3, timeoutMs: 5_000 },
  /** `maybe_refresh_observed`: the attached node's location when it is unknown. */
  refresh: { retries: 1, timeoutMs: 5_000 },
  /** neon:C2 and the catch-up polls of neon:C6 (Neon's client default: no retries here, the loop retries). */
  timelines: { retries: 0, timeoutMs: 10_000 },
  /** Start-up discovery and secondary status reads. */
  listing: { retries: 3, timeoutMs: 10_000 },
} as const;

/** neon:C6: the `timeout` of one wait_lsn request (local const `TIMEOUT` in `Reconciler::wait_lsn`). */
export const WAIT_LSN_TIMEOUT_MS = 10_000;
/** neon:C6: sleep after a transport error and between timeline polls (literal 500 ms). */
export const CATCH_UP_POLL_MS = 500;
/** neon:C3: warm-up bounds of drains and fills (local consts in `Service::drain_node` / `fill_node`). */
export const DRAIN_FILL_WARMUP = { timeoutMs: 30_000, requestTimeoutMs: 5_000 };
/** neon:C13: the hook's per-request timeout (`NOTIFY_REQUEST_TIMEOUT`), retries of one call (literal), 429's wait (`SLOWDOWN_DELAY`), and calls in flight (`API_CONCURRENCY`). */
export const HOOK = { requestTimeoutMs: 10_000, retries: 10, slowdownMs: 5_000, concurrency: 32 } as const;
/** neon:H5: reconciles in flight (`RECONCILER_CONCURRENCY_DEFAULT`, `PRIORITY_RECONCILER_CONCURRENCY_DEFAULT`). */
export const RECONCILER_CONCURRENCY = { normal: 128, high: 256 } as const;
