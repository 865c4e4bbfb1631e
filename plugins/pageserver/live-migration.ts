import { checkSecondaryProgress } from './checks.ts';
import { describeNotify, notifySucceeded } from './compute-hook.ts';
import { isObject, PageserverRequestError, type HttpTarget, type PageserverHttp } from './http-client.ts';
import type { ShardIntent } from './intent.ts';
import { ATTACHED_MODES } from './wire.ts';
import { Cancelled, notifyCompute, OperationCancelled, observedAs, putLocation, sleepUnless, type ReconcileDeps, type ReconcileRun } from './location-calls.ts';
import { CALLS, CATCH_UP_POLL_MS, notifyRoundBackoffMs, WAIT_LSN_TIMEOUT_MS } from './neon-retry.ts';
import type { LocationConfig, SecondaryProgress, TimelineInfo } from './wire.ts';

/** Neon's LSN text `hi/lo` (hex) as a number, exact up to 2^53. */
function parseLsn(text: string): number | null {
  const m = /^([0-9A-Fa-f]{1,8})\/([0-9A-Fa-f]{1,8})$/.exec(text);
  return m ? parseInt(m[1]!, 16) * 2 ** 32 + parseInt(m[2]!, 16) : null;
}

const checkTimelines = (v: unknown): string | null =>
  Array.isArray(v) && v.every((t) => isObject(t) && typeof t.timeline_id === 'string' && typeof t.last_record_lsn === 'string')
    ? null
    : 'expected [{"timeline_id": …, "last_record_lsn": …}]';

/**
 * Neon's `Reconciler::live_migrate`, origin O to destination D (neon:C1–C9): O goes
 * `AttachedStale` (flushing a heatmap), O's LSNs are the baseline, D's secondary, if D holds
 * one, is warmed (never failing the cut-over; a D holding nothing is not, neon:C15), a new
 * generation is committed for D, D goes `AttachedMulti`, D catches up with the baseline, compute is told (blocking), O becomes a
 * secondary and D `AttachedSingle`. Each phase is reported through `run.progress`.
 */
export async function liveMigrate(
  deps: ReconcileDeps,
  run: ReconcileRun,
  shard: ShardIntent,
  origin: string,
  dest: string,
  warmup: { timeoutMs: number; requestTimeoutMs: number },
): Promise<void> {
  const id = shard.id;
  run.progress('ORIGIN_STALE', `setting node ${origin} AttachedStale (heatmap flush) before moving to node ${dest}`, origin);
  await putLocation(deps, run, shard, origin, 'AttachedStale', shard.generation, { flushMs: CALLS.flushMs });

  run.progress('BASELINE', `reading the timelines' LSNs on node ${origin}`, origin);
  const baseline = await timelineLsns(deps, run.cancel, shard, origin);

  if (observedAs(deps, id, dest, 'Secondary')) {
    run.progress('WARM_UP', `warming up the secondary on node ${dest}`, dest);
    await warmUp(deps, run, shard, dest, warmup);
  }

  run.checkCancelled();
  run.progress('GENERATION', `issuing a new generation to node ${dest}`, dest);
  const generation = await deps.intents.issueGeneration(shard, dest);
  run.issued = true;

  run.progress('DESTINATION_MULTI', `attaching node ${dest} AttachedMulti (generation ${generation})`, dest);
  await putLocation(deps, run, shard, dest, 'AttachedMulti', generation);

  run.progress('WAL_CATCH_UP', `waiting for WAL catch-up on node ${dest}`, dest);
  await awaitLsn(deps, run, shard, dest, baseline);

  await notifyBlocking(deps, run, shard, origin, dest);

  run.progress('ORIGIN_SECONDARY', `setting node ${origin} Secondary`, origin);
  await putLocation(deps, run, shard, origin, 'Secondary', null);

  run.progress('DESTINATION_SINGLE', `setting node ${dest} AttachedSingle (generation ${generation})`, dest);
  await putLocation(deps, run, shard, dest, 'AttachedSingle', generation);
  deps.log.info({ shard: id, node: dest, from: origin, generation }, `shard ${id} cut over from node ${origin} to node ${dest} (generation ${generation})`);
}

/** neon:C2, and the polls of neon:C6: `{timeline_id → last_record_lsn}` on the node. */
async function timelineLsns(deps: ReconcileDeps, signal: AbortSignal, shard: ShardIntent, nodeId: string): Promise<Map<string, number>> {
  const node = deps.nodes.get(nodeId);
  if (!node) throw new Cancelled(`node ${nodeId} is no longer registered`);
  return readTimelineLsns(deps.http, node, shard.id, signal);
}

/** `GET /v1/tenant/:id/timeline` on an attached location: each timeline's last record LSN (neon:C2, and a rehearsal's snapshot). */
export async function readTimelineLsns(http: PageserverHttp, node: HttpTarget, shardId: string, signal?: AbortSignal): Promise<Map<string, number>> {
  const { json } = await http.request<TimelineInfo[]>(node, 'GET', `/v1/tenant/${shardId}/timeline`, {
    ...CALLS.timelines,
    check: checkTimelines,
    ...(signal && { signal }),
  });
  const out = new Map<string, number>();
  for (const t of json) {
    const lsn = parseLsn(t.last_record_lsn);
    if (lsn !== null) out.set(t.timeline_id, lsn);
  }
  return out;
}

/**
 * neon:C3: `secondary/download?wait_ms=` long polls (no sleep between them) until 200 or
 * until the warm-up timeout has passed; a timeout or an error stops the warm-up and the
 * cut-over carries on.
 */
async function warmUp(
  deps: ReconcileDeps,
  run: ReconcileRun,
  shard: ShardIntent,
  nodeId: string,
  warmup: { timeoutMs: number; requestTimeoutMs: number },
): Promise<void> {
  const node = deps.nodes.get(nodeId)!;
  const startedAt = deps.clock.now();
  for (;;) {
    run.checkCancelled();
    let status: number;
    let progress: SecondaryProgress;
    try {
      const r = await deps.http.request<SecondaryProgress>(node, 'POST', `/v1/tenant/${shard.id}/secondary/download?wait_ms=${warmup.requestTimeoutMs}`, {
        okStatuses: [200, 202],
        check: checkSecondaryProgress,
        retries: 3,
        timeoutMs: 2 * warmup.requestTimeoutMs,
        signal: run.cancel,
      });
      status = r.status;
      progress = r.json;
    } catch (e) {
      run.checkCancelled();
      const why = e instanceof Error ? e.message : String(e);
      run.notes.push(`warm-up of node ${nodeId} stopped: ${why}`);
      deps.log.warn({ shard: shard.id, node: nodeId, err: e }, `warm-up of shard ${shard.id} on node ${nodeId} failed; carrying on with the cut-over`);
      return;
    }
    if (status === 200) return;
    if (deps.clock.now() - startedAt > warmup.timeoutMs) {
      const note = `warm-up of node ${nodeId} timed out after ${warmup.timeoutMs} ms (${progress.bytes_downloaded} of ${progress.bytes_total} bytes)`;
      run.notes.push(note);
      deps.log.warn({ shard: shard.id, node: nodeId }, `${note}; carrying on with the cut-over`);
      return;
    }
  }
}

/**
 * neon:C6 (`Reconciler::await_lsn`): `wait_lsn` with the baseline; 200 done; a transport
 * error sleeps 500 ms and asks again; any other answer switches to polling D's timelines
 * every 500 ms until each baseline timeline still present there has caught up. No timeout:
 * only a cancel ends it.
 */
async function awaitLsn(deps: ReconcileDeps, run: ReconcileRun, shard: ShardIntent, nodeId: string, baseline: Map<string, number>): Promise<void> {
  const node = deps.nodes.get(nodeId)!;
  const body: Record<string, unknown> = {};
  for (const [tl, lsn] of baseline) body[tl] = formatLsn(lsn);
  body.timeout = { secs: WAIT_LSN_TIMEOUT_MS / 1000, nanos: 0 };
  for (;;) {
    checkSoft(run);
    try {
      const r = await deps.http.request(node, 'POST', `/v1/tenant/${shard.id}/wait_lsn`, {
        body,
        okStatuses: [200, 202, 404],
        retries: 0,
        timeoutMs: 2 * WAIT_LSN_TIMEOUT_MS,
        signal: anySignal(run.cancel, run.soft),
      });
      if (r.status === 200) return;
      break;
    } catch (e) {
      checkSoft(run);
      if (e instanceof PageserverRequestError && e.status !== null) break;
      await pause(deps, run, CATCH_UP_POLL_MS);
    }
  }
  for (;;) {
    checkSoft(run);
    let latest: Map<string, number>;
    try {
      latest = await timelineLsns(deps, anySignal(run.cancel, run.soft), shard, nodeId);
    } catch {
      checkSoft(run);
      await pause(deps, run, CATCH_UP_POLL_MS);
      continue;
    }
    const behind = [...baseline].some(([tl, lsn]) => latest.has(tl) && latest.get(tl)! < lsn);
    if (!behind) return;
    await pause(deps, run, CATCH_UP_POLL_MS);
  }
}

/**
 * neon:C7 (`compute_notify_blocking`): notify until it succeeds, with rounds 0, 2, 4, 8,
 * then 10 s apart; a fatal answer fails the reconcile; it carries on un-notified (the
 * pending flag stays set, neon:C14) once the origin is unavailable or no longer attached.
 * Without a hook it is skipped, and the skip is logged and noted (the Decision under neon:C7).
 */
async function notifyBlocking(deps: ReconcileDeps, run: ReconcileRun, shard: ShardIntent, origin: string, dest: string): Promise<void> {
  if (!deps.hook.configured) {
    run.progress('COMPUTE_NOTIFY', `compute notification skipped: no compute hook configured`, dest);
    run.notes.push('compute notification skipped: no compute hook configured (controlPlane)');
    deps.log.warn({ shard: shard.id, node: dest }, `shard ${shard.id}: compute notification skipped, no compute hook configured`);
    return;
  }
  run.progress('COMPUTE_NOTIFY', `notifying compute of node ${dest}`, dest);
  for (let round = 0; ; round++) {
    checkSoft(run);
    const outcome = await notifyCompute(deps, shard, anySignal(run.cancel, run.soft));
    if (notifySucceeded(outcome)) {
      if (shard.pendingComputeNotification) await deps.intents.update(shard, { pendingComputeNotification: false });
      return;
    }
    checkSoft(run);
    if (outcome.kind === 'fatal') {
      await deps.intents.update(shard, { pendingComputeNotification: true });
      throw new Error(describeNotify(outcome));
    }
    if (!shard.pendingComputeNotification) await deps.intents.update(shard, { pendingComputeNotification: true });
    run.progress('COMPUTE_NOTIFY', `${describeNotify(outcome)} (node ${dest})`, dest);
    if (!deps.nodes.available(origin)) {
      run.notes.push(`compute not notified: node ${origin} became unavailable; the notification is pending`);
      return;
    }
    if (!(await originStillAttached(deps, run, shard, origin))) {
      run.notes.push(`compute not notified: node ${origin} no longer holds the shard attached; the notification is pending`);
      return;
    }
    await pause(deps, run, notifyRoundBackoffMs(round));
  }
}

/** neon:C7's check: `GET /v1/location_config/:id` on the origin (3 retries, 5 s) shows an attached mode. */
async function originStillAttached(deps: ReconcileDeps, run: ReconcileRun, shard: ShardIntent, origin: string): Promise<boolean> {
  const node = deps.nodes.get(origin);
  if (!node) return false;
  try {
    const { json } = await deps.http.request<LocationConfig | null>(node, 'GET', `/v1/location_config/${shard.id}`, {
      ...CALLS.originCheck,
      signal: anySignal(run.cancel, run.soft),
    });
    return json !== null && ATTACHED_MODES.includes(json.mode);
  } catch (e) {
    checkSoft(run);
    if (e instanceof PageserverRequestError && (e.status === 404 || e.cancelled)) return false;
    // Other errors are unexpected here: Neon notifies again.
    return true;
  }
}

function checkSoft(run: ReconcileRun): void {
  run.checkCancelled();
  if (run.soft?.aborted) throw new OperationCancelled('the operation was cancelled');
}

/** A sleep of neon:C6 or neon:C7, which either cancel ends. */
async function pause(deps: ReconcileDeps, run: ReconcileRun, ms: number): Promise<void> {
  try {
    await sleepUnless(deps.clock, ms, run.cancel, run.soft);
  } catch (e) {
    checkSoft(run);
    throw e;
  }
}

function anySignal(...signals: (AbortSignal | undefined)[]): AbortSignal {
  return AbortSignal.any(signals.filter((s): s is AbortSignal => s !== undefined));
}

export function formatLsn(lsn: number): string {
  const hi = Math.floor(lsn / 2 ** 32);
  const lo = lsn % 2 ** 32;
  return `${hi.toString(16).toUpperCase()}/${lo.toString(16).toUpperCase()}`;
}
