/**
 * The campaign's order and budget invariants (issue 27 point 6). The crash invariants
 * (invariants.ts) look at where a run ended; these look at the order things happened in:
 *
 * - neon:C6–C9, from the simulators' request log (pageservers and compute hook share it, with
 *   one order of arrivals and answers): in each live cut-over that reached `AttachedMulti`
 *   and completed in the same gateway life, the catch-up was done — `wait_lsn` answered 200,
 *   or a timeline list of the destination showed every baseline timeline caught up — before
 *   the destination's `AttachedSingle`, and the computes had been told the destination before
 *   the origin went `Secondary`. Exempt: a cut-over a kill cut off (its shard is completed by
 *   the next gateway's direct attach, neon:C10, with another generation, as is a failover's
 *   attach: neither reaches `AttachedMulti` in the same life), and neon:C7's carry-on without
 *   a notification when a notification failed and the origin was gone (restarted, or its
 *   location read answered 404, no attached mode, or nothing).
 * - rollout:O5, from the gateway's event log: a rollout never starts a node step while the
 *   nodes out of service — cordoned, in maintenance, any policy but ACTIVE, or not ACTIVE,
 *   whatever took them out — are at or above its `maxUnavailable`.
 */
import type { LoggedRequest } from '../simulators/common/request-log.ts';
import { parseLsn, parseShardId } from '../simulators/pageserver/index.ts';

/** What a campaign marks in the request log (`RequestLog.mark`, source `campaign`). */
export const MARKS = { gatewayKilled: 'gateway killed', restarted: (nodeId: string) => `pageserver ${nodeId} restarted` };

interface Put {
  entry: LoggedRequest;
  node: string;
  shard: string;
  mode: string;
  generation: number | null;
  /** Gateway lives, counted by the campaign's kill marks. */
  life: number;
}

const nodeOf = (e: LoggedRequest) => (e.source.startsWith('node ') ? e.source.slice(5) : null);
const seq = (e: LoggedRequest) => e.seq ?? -1;
const answeredBetween = (e: LoggedRequest, after: number, before: number) => e.answeredSeq !== undefined && e.answeredSeq > after && e.answeredSeq < before;
const ok = (e: LoggedRequest) => e.status !== undefined && e.status >= 200 && e.status < 300;

/** `{timeline_id → last_record_lsn}` of a timeline list's answer; null when it is not one. */
function timelines(response: unknown): Map<string, number> | null {
  if (!Array.isArray(response)) return null;
  const out = new Map<string, number>();
  for (const t of response as { timeline_id?: unknown; last_record_lsn?: unknown }[]) {
    if (typeof t.timeline_id !== 'string' || typeof t.last_record_lsn !== 'string') return null;
    const lsn = parseLsn(t.last_record_lsn);
    if (lsn !== null) out.set(t.timeline_id, lsn);
  }
  return out;
}

/** The request log indexed by shard and by tenant, so that a check reads only what concerns its shard. */
class LogIndex {
  readonly puts = new Map<string, Put[]>();
  /** Every request naming a shard in its path (timeline lists, wait_lsn, one location's config), by shard. */
  readonly byShard = new Map<string, LoggedRequest[]>();
  /** Compute notifications, by tenant. */
  readonly notifications = new Map<string, LoggedRequest[]>();
  readonly marks: LoggedRequest[] = [];

  constructor(log: readonly LoggedRequest[]) {
    let life = 0;
    const push = <T>(map: Map<string, T[]>, key: string, value: T) => {
      const list = map.get(key) ?? [];
      map.set(key, list);
      list.push(value);
    };
    for (const e of log) {
      if (e.source === 'campaign') {
        if (e.path === MARKS.gatewayKilled) life++;
        this.marks.push(e);
        continue;
      }
      if (e.source === 'hook') {
        const tenant = (e.body as { tenant_id?: unknown } | null)?.tenant_id;
        if (e.path === '/notify-attach' && typeof tenant === 'string') push(this.notifications, tenant, e);
        continue;
      }
      const shard = SHARD_PATH.exec(e.path)?.[1] ?? SHARD_PATH.exec(e.path)?.[2];
      if (!shard) continue;
      push(this.byShard, shard, e);
      const body = e.body as { mode?: unknown; generation?: number | null } | null;
      const node = nodeOf(e);
      if (e.method === 'PUT' && e.path.endsWith('/location_config') && node && typeof body?.mode === 'string')
        push(this.puts, shard, { entry: e, node, shard, mode: body.mode, generation: body.generation ?? null, life });
    }
  }

  /** The node the computes were told for `shard` by the last notification the hook answered 2xx before `before`; null when none. */
  toldNode(shard: string, before: number): string | null {
    const number = parseShardId(shard)?.shardNumber ?? 0;
    let told: { at: number; node: string } | null = null;
    for (const e of this.notifications.get(tenantOf(shard)) ?? []) {
      if (!ok(e) || e.answeredSeq! >= before) continue;
      const named = (e.body as { shards?: { node_id: number; shard_number: number }[] }).shards?.find((s) => s.shard_number === number);
      if (named && (!told || e.answeredSeq! > told.at)) told = { at: e.answeredSeq!, node: String(named.node_id) };
    }
    return told?.node ?? null;
  }
}

const SHARD_PATH = /^\/v1\/(?:tenant\/([^/]+)\/(?:location_config|timeline|wait_lsn)|location_config\/([^/]+))$/;
const tenantOf = (shard: string) => shard.split('-')[0]!;

/** The violations of neon:C6–C9 in cut-overs that reached AttachedMulti at or after `since` (a log position: one round's). */
export function findCutOverOrderViolations(log: readonly LoggedRequest[], since = 0): string[] {
  const out: string[] = [];
  const index = new LogIndex(log);
  for (const [shard, puts] of index.puts) {
    const requests = index.byShard.get(shard) ?? [];
    for (const [i, multi] of puts.entries()) {
      if (multi.mode !== 'AttachedMulti' || seq(multi.entry) < since) continue;
      const later = puts.slice(i + 1).filter((p) => p.life === multi.life);
      const nextMulti = later.findIndex((p) => p.mode === 'AttachedMulti');
      const window = nextMulti < 0 ? later : later.slice(0, nextMulti);
      const single = window.find((p) => p.node === multi.node && p.mode === 'AttachedSingle' && p.generation === multi.generation);
      // A cut-over that did not complete in this life is rolled forward by another reconcile (neon:C10): exempt.
      if (!single) continue;
      const stale = puts
        .slice(0, i)
        .filter((p) => p.life === multi.life && p.mode === 'AttachedStale')
        .at(-1);
      // Not a live migration (no neon:C1 first): a direct attach, exempt.
      if (!stale) continue;
      const origin = stale.node;
      const from = seq(multi.entry);
      const to = seq(single.entry);
      const name = `shard ${shard}: cut-over from node ${origin} to node ${multi.node} (generation ${multi.generation})`;
      const on = (node: string, method: string, what: string) =>
        requests.filter((e) => nodeOf(e) === node && e.method === method && e.path === `/v1/tenant/${shard}/${what}`);

      // neon:C6: the catch-up completed before the destination's AttachedSingle.
      const waited = on(multi.node, 'POST', 'wait_lsn').some((e) => e.status === 200 && answeredBetween(e, from, to));
      if (!waited) {
        const baselineRead = on(origin, 'GET', 'timeline')
          .filter((e) => e.status === 200 && answeredBetween(e, seq(stale.entry), from))
          .at(-1);
        const baseline = baselineRead ? timelines(baselineRead.response) : null;
        const caughtUp =
          baseline !== null &&
          on(multi.node, 'GET', 'timeline').some((e) => {
            if (e.status !== 200 || !answeredBetween(e, from, to)) return false;
            const now = timelines(e.response);
            return now !== null && [...baseline].every(([tl, lsn]) => !now.has(tl) || now.get(tl)! >= lsn);
          });
        if (!caughtUp) out.push(`${name}: AttachedSingle on node ${multi.node} before its catch-up completed (neon:C6)`);
      }

      // neon:C7, neon:C8: the computes were told the destination before the origin went Secondary.
      const secondary = window.find((p) => p.node === origin && p.mode === 'Secondary' && seq(p.entry) < to);
      if (!secondary) continue;
      const at = seq(secondary.entry);
      const told = index.toldNode(shard, at);
      if (told === multi.node) continue;
      const notifyFailed = (index.notifications.get(tenantOf(shard)) ?? []).some((e) => seq(e) > from && seq(e) < at && !ok(e));
      const originGone =
        index.marks.some((e) => e.path === MARKS.restarted(origin) && seq(e) > from && seq(e) < at) ||
        requests.some((e) => {
          if (nodeOf(e) !== origin || e.method !== 'GET' || e.path !== `/v1/location_config/${shard}` || seq(e) < from || seq(e) > at) return false;
          const mode = (e.response as { mode?: string } | null | undefined)?.mode;
          return e.status === undefined || e.status === 404 || (e.status === 200 && !mode?.startsWith('Attached'));
        });
      if (!(notifyFailed && originGone))
        out.push(`${name}: node ${origin} set Secondary while the computes were last told ${told === null ? 'nothing' : `node ${told}`} (neon:C7, neon:C8)`);
    }
  }
  return out;
}

/** An event of the gateway's log, as the checker reads it. */
export interface BudgetEvent {
  seq: number;
  type: string;
  nodeId: string | null;
  operationId: string | null;
  payload: string;
}

interface NodeService {
  policy: string;
  phase: string | null;
  availability: string;
  cordoned: boolean;
}

const isOut = (n: NodeService) => n.policy !== 'ACTIVE' || n.phase !== null || n.availability !== 'ACTIVE' || n.cordoned;

/**
 * rollout:O5 from the event log alone: replays every logged change of policy, maintenance
 * phase, availability and cordon, and at each `ROLLOUT_NODE_STARTED` (from `sinceSeq`: one round's) counts the nodes out.
 */
export function findBudgetViolations(events: readonly BudgetEvent[], sinceSeq = 0): string[] {
  const out: string[] = [];
  const nodes = new Map<string, NodeService>();
  const get = (id: string) => {
    if (!nodes.has(id)) nodes.set(id, { policy: 'ACTIVE', phase: null, availability: 'ACTIVE', cordoned: false });
    return nodes.get(id)!;
  };
  const budgets = new Map<string, number>();
  for (const e of events) {
    const payload = JSON.parse(e.payload) as Record<string, any>;
    if (e.type === 'OPERATION_STARTED' && payload.kind === 'ROLLOUT' && e.operationId) budgets.set(e.operationId, payload.settings?.maxUnavailable ?? 1);
    if (e.type === 'ROLLOUT_NODE_STARTED' && e.operationId) {
      const budget = budgets.get(e.operationId);
      const down = [...nodes].filter(([, n]) => isOut(n)).map(([id]) => id);
      if (budget !== undefined && down.length >= budget && e.seq >= sinceSeq)
        out.push(
          `rollout ${e.operationId} started node ${e.nodeId}'s step (event ${e.seq}) with ${down.length} node(s) out (${down.sort().join(', ')}), budget ${budget} (rollout:O5)`,
        );
    }
    if (!e.nodeId) continue;
    const n = get(e.nodeId);
    if (e.type === 'NODE_POLICY_CHANGED') n.policy = payload.to;
    else if (e.type === 'MAINTENANCE_PHASE_CHANGED') n.phase = payload.to ?? null;
    else if (e.type === 'NODE_STATE_CHANGED') Object.assign(n, { availability: payload.availability, cordoned: payload.cordoned });
  }
  return out;
}
