/**
 * The pageserver campaign's intent invariants (issue 28, "Done when"):
 *
 * - neon:W10, neon:W11, at rest: every location a reachable pageserver holds carries the
 *   tenant's stored config made HA-aware for that location (`haAwareTenantConfig`, the very
 *   function the plugin sends with): `heatmap_period` the tenant's own or 60 s where the
 *   placement has secondaries, cleared where it has none.
 * - neon:H9: no shard's attached intent names a node that was OFFLINE when the intent was
 *   written. The gateway's database keeps only the latest intent, so the campaign installs a
 *   trigger in it (`logPlacementWrites`) that copies every placement write — a write of a
 *   shard's intent that changes its attached node or its secondaries — with the row's own
 *   `updatedAt`; each node's availability history is the event log's `NODE_STATE_CHANGED`
 *   (written by the gateway before anything acts on a change, rollout:O5). A placement that
 *   keeps or puts the attachment on a node logged OFFLINE at that instant is a violation:
 *   a failover that fell back onto its lost node, a cut-over rolled back onto an origin that
 *   died meanwhile. Neon allows it only through `override_scheduler` (neon:W4), which the
 *   campaigns never use.
 */
import Database from 'better-sqlite3';
import type { PageserverFleet } from '../simulators/pageserver/index.ts';
import { haAwareTenantConfig, locationHasSecondaries, normaliseTenantConfig, type TenantConfig } from '../src/domain/storage/tenant-config.ts';

/** A shard's intent as the gateway's database holds it (the pageserver plugin's `PluginShard` row). */
export interface StoredShard {
  id: string;
  attachedNodeId: string;
  secondaryNodeIds: string[];
  secondaryCount: number;
  tenantConfig: TenantConfig | null;
}

/** A location a reachable pageserver holds, with the config its last `location_config` carried. */
export interface HeldLocation {
  shardId: string;
  nodeId: string;
  mode: string;
  tenantConf: TenantConfig;
}

/** Every location the fleet's pageservers hold (all of them answer once a campaign round has quiesced). */
export function heldLocations(fleet: Pick<PageserverFleet, 'sims'>): HeldLocation[] {
  const out: HeldLocation[] = [];
  for (const [nodeId, sim] of fleet.sims)
    for (const [shardId, { mode }] of Object.entries(sim.view()))
      out.push({ shardId, nodeId: String(nodeId), mode, tenantConf: sim.tenantConf(shardId) ?? {} });
  return out;
}

/** One placement write (`logPlacementWrites`). */
export interface PlacementWrite {
  seq: number;
  shardId: string;
  attachedNodeId: string;
  at: number;
}

/** One `NODE_STATE_CHANGED` of the event log. */
export interface AvailabilityChange {
  seq: number;
  nodeId: string;
  at: number;
  availability: string;
}

const PLUGIN = 'pageserver';
const WRITES_TABLE = 'CampaignPlacementWrite';

/** neon:W10, neon:W11: the held locations whose config is not the stored one made HA-aware for them. */
export function findTenantConfigViolations(stored: readonly StoredShard[], held: readonly HeldLocation[]): string[] {
  const out: string[] = [];
  const byId = new Map(stored.map((s) => [s.id, s]));
  for (const l of held) {
    const shard = byId.get(l.shardId);
    if (!shard) continue; // A shard the gateway does not list is reported by the pageserver invariants.
    const where = `shard ${l.shardId} on node ${l.nodeId} (${l.mode})`;
    if (shard.tenantConfig === null) {
      out.push(`${where}: the gateway's stored tenant config is unknown at rest (neon:W10)`);
      continue;
    }
    const wanted = haAwareTenantConfig(shard.tenantConfig, locationHasSecondaries(l.mode, shard.secondaryCount, shard.secondaryNodeIds.length));
    const want = JSON.stringify(wanted);
    const have = JSON.stringify(normaliseTenantConfig(l.tenantConf));
    if (want !== have) out.push(`${where}: holds tenant config ${have}, the stored config made HA-aware is ${want} (neon:W10, neon:W11)`);
  }
  return out;
}

/** neon:H9: placement writes (from `sinceSeq`) whose attached node the event log had OFFLINE at that instant. */
export function findOfflineIntentViolations(writes: readonly PlacementWrite[], changes: readonly AvailabilityChange[], sinceSeq = 0): string[] {
  const out: string[] = [];
  const byNode = new Map<string, AvailabilityChange[]>();
  for (const c of [...changes].sort((a, b) => a.seq - b.seq)) {
    const list = byNode.get(c.nodeId) ?? [];
    byNode.set(c.nodeId, list);
    list.push(c);
  }
  for (const w of writes) {
    if (w.seq < sinceSeq) continue;
    const last = (byNode.get(w.attachedNodeId) ?? []).filter((c) => c.at <= w.at).at(-1);
    if (last?.availability !== 'OFFLINE') continue;
    out.push(
      `shard ${w.shardId}: attached intent written naming node ${w.attachedNodeId} at ${new Date(w.at).toISOString()}, when it was OFFLINE (logged at ${new Date(last.at).toISOString()}, event ${last.seq}) (neon:H9)`,
    );
  }
  return out;
}

/**
 * Installs the trigger that copies every placement write of the pageserver plugin's shards
 * into `CampaignPlacementWrite` (idempotent; the gateway's migrations leave tables they do not
 * know alone). Called once the gateway has created its schema.
 */
export function logPlacementWrites(dbPath: string): void {
  const db = new Database(dbPath);
  try {
    db.exec(`
      CREATE TABLE IF NOT EXISTS "${WRITES_TABLE}" (seq INTEGER PRIMARY KEY AUTOINCREMENT, shardId TEXT NOT NULL, attachedNodeId TEXT, updatedAt TEXT NOT NULL);
      CREATE TRIGGER IF NOT EXISTS "${WRITES_TABLE}_log" AFTER UPDATE OF intent ON "PluginShard"
      WHEN NEW.plugin = '${PLUGIN}'
        AND (json_extract(NEW.intent, '$.attachedNodeId') IS NOT json_extract(OLD.intent, '$.attachedNodeId')
          OR json_extract(NEW.intent, '$.secondaryNodeIds') IS NOT json_extract(OLD.intent, '$.secondaryNodeIds'))
      BEGIN
        INSERT INTO "${WRITES_TABLE}" (shardId, attachedNodeId, updatedAt) VALUES (NEW.id, json_extract(NEW.intent, '$.attachedNodeId'), NEW.updatedAt);
      END;
    `);
  } finally {
    db.close();
  }
}

/** Prisma writes SQLite DateTimes as ISO text (or epoch ms). */
const timeOf = (v: unknown) => (typeof v === 'number' ? v : Date.parse(String(v)));

export interface IntentDatabaseView {
  shards: StoredShard[];
  writes: PlacementWrite[];
  availability: AvailabilityChange[];
}

export function readIntentDatabase(dbPath: string): IntentDatabaseView {
  const db = new Database(dbPath, { readonly: true });
  try {
    const shards = (db.prepare('SELECT id, intent FROM "PluginShard" WHERE plugin = ?').all(PLUGIN) as { id: string; intent: string }[]).map((r) => {
      const i = JSON.parse(r.intent) as Omit<StoredShard, 'id'>;
      return {
        id: r.id,
        attachedNodeId: i.attachedNodeId,
        secondaryNodeIds: i.secondaryNodeIds,
        secondaryCount: i.secondaryCount,
        tenantConfig: i.tenantConfig ?? null,
      };
    });
    const hasWrites = db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?`).get(WRITES_TABLE) !== undefined;
    const writes = hasWrites
      ? (db.prepare(`SELECT seq, shardId, attachedNodeId, updatedAt FROM "${WRITES_TABLE}" ORDER BY seq`).all() as Record<string, unknown>[]).map((r) => ({
          seq: Number(r.seq),
          shardId: String(r.shardId),
          attachedNodeId: String(r.attachedNodeId),
          at: timeOf(r.updatedAt),
        }))
      : [];
    const availability = (
      db.prepare(`SELECT seq, nodeId, at, payload FROM "Event" WHERE type = 'NODE_STATE_CHANGED' ORDER BY seq`).all() as Record<string, unknown>[]
    ).map((r) => ({
      seq: Number(r.seq),
      nodeId: String(r.nodeId),
      at: timeOf(r.at),
      availability: String((JSON.parse(String(r.payload)) as { availability?: unknown }).availability),
    }));
    return { shards, writes, availability };
  } finally {
    db.close();
  }
}
