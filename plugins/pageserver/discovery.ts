import { normaliseTenantConfig, type TenantConfig } from '../../src/domain/storage/tenant-config.ts';
import { confKey } from './location-calls.ts';
import { compareNodeIds } from '../../src/domain/compare.ts';
import { checkLocationConfigList } from './checks.ts';
import type { PageserverHttp } from './http-client.ts';
import type { IntentStore } from './intent-store.ts';
import { defaultSecondaryCount, policyOf, type NodeRecord, type ShardIntent } from './intent.ts';
import { CALLS } from './neon-retry.ts';
import type { NodeSet } from './nodes.ts';
import type { ObservedState } from './observed.ts';
import type { PageserverOptions } from './options.ts';
import { parseTenantShardId } from './shard-id.ts';
import { readControllerState } from './state-file.ts';
import { ATTACHED_MODES, type LocationConfig, type LocationConfigListResponse, type LocationConfigMode } from './wire.ts';

/** What start-up discovery found that does not match the persisted intent (see README). */
export interface DiscoveryReport {
  /** Shards found on pageservers but not in the database, now managed. */
  adopted: string[];
  /** Attached locations found where the intent has none (left alone here, reported; the reconcile cleans them up). */
  extraAttachments: { shardId: string; nodeId: string; mode: LocationConfigMode; generation: number | null }[];
  /** Locations the intent has but the (reachable) pageserver does not. */
  missing: { shardId: string; nodeId: string; role: 'attached' | 'secondary' }[];
  /** Shards seen only as secondaries (no attached location anywhere): not adopted. */
  unattached: string[];
  /** Pageservers that did not answer `GET /v1/location_config`. */
  unreachable: string[];
  /** The legacy state file imported this start, if any. */
  importedStateFile: string | null;
}

type Log = { info(obj: object, msg?: string): void; warn(obj: object, msg?: string): void };

const byId = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

function recordOfConfig(p: PageserverOptions['pageservers'][number]): NodeRecord {
  const url = new URL(p.url);
  const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
  return {
    id: String(p.id),
    url: p.url,
    name: p.name ?? `pageserver-${p.id}`,
    zone: p.availabilityZone,
    listenHttpAddr: url.hostname,
    listenHttpPort: port,
    listenHttpsPort: url.protocol === 'https:' ? port : null,
    listenPgAddr: p.pg?.host ?? url.hostname,
    listenPgPort: p.pg?.port ?? 6400,
    listenGrpcAddr: null,
    listenGrpcPort: null,
    cordoned: false,
  };
}

/**
 * A state file of an earlier version, imported once into the database: its shards with
 * their generations (continued, never issued again) and cordons. The file is left as it
 * is and never written again; the database remembers that it was imported.
 */
export async function importStateFile(intents: IntentStore, path: string, log: Log): Promise<boolean> {
  const key = `stateFileImported:${path}`;
  if (await intents.meta.getMeta(key)) return false;
  const saved = readControllerState(path);
  if (!saved) return false;
  const shards: ShardIntent[] = saved.shards.map((s) => ({
    ...s,
    generationNodeId: s.attachedNodeId,
    secondaryCount: s.secondaryCount ?? defaultSecondaryCount(s.secondaryNodeIds.length),
    pendingComputeNotification: s.pendingComputeNotification ?? false,
    // Absent (earlier versions): read from the pageservers by discovery, which follows (neon:W10).
    tenantConfig: s.tenantConfig ? normaliseTenantConfig(s.tenantConfig) : null,
  }));
  await intents.create(shards);
  for (const shard of shards) await intents.raiseGeneration(intents.shards.get(shard.id)!, shard.generation);
  for (const id of saved.cordoned) {
    const n = intents.nodes.get(id);
    if (n && !n.cordoned) await intents.putNode({ ...n, cordoned: true });
  }
  await intents.meta.setMeta(key, new Date().toISOString());
  log.info(
    { file: path, shards: shards.length },
    `imported ${shards.length} shard(s) from the state file ${path} into the database; the file is no longer written`,
  );
  return true;
}

/** The config's pageservers are the seed: new ones are registered, changed URLs follow the config, tombstoned ids are skipped. */
export async function seedNodes(intents: IntentStore, seeds: PageserverOptions['pageservers'], log: Log): Promise<void> {
  for (const p of seeds) {
    const record = recordOfConfig(p);
    if (intents.tombstones.has(record.id)) {
      log.warn({ node: record.id }, `pageserver ${record.id} in the config was deleted (tombstone): not registered`);
      continue;
    }
    const known = intents.nodes.get(record.id);
    if (
      known &&
      known.url === record.url &&
      known.zone === record.zone &&
      known.name === record.name &&
      known.listenPgAddr === record.listenPgAddr &&
      known.listenPgPort === record.listenPgPort
    )
      continue;
    if (known) log.warn({ node: record.id, was: known.url, now: record.url }, `pageserver ${record.id}: the config changed its registration; the config wins`);
    await intents.putNode({
      ...record,
      cordoned: known?.cordoned ?? false,
      listenGrpcAddr: known?.listenGrpcAddr ?? null,
      listenGrpcPort: known?.listenGrpcPort ?? null,
    });
  }
}

/**
 * neon:W10: the tenant config a shard is adopted with: its attached location's (the newest
 * generation, AttachedSingle first), else a secondary's (lowest node id).
 */
export function configOf(locations: readonly { nodeId: string; config: LocationConfig }[]): TenantConfig {
  const ranked = [...locations].sort(
    (a, b) =>
      Number(ATTACHED_MODES.includes(b.config.mode)) - Number(ATTACHED_MODES.includes(a.config.mode)) ||
      (b.config.generation ?? 0) - (a.config.generation ?? 0) ||
      Number(b.config.mode === 'AttachedSingle') - Number(a.config.mode === 'AttachedSingle') ||
      compareNodeIds(a.nodeId, b.nodeId),
  );
  return normaliseTenantConfig(ranked[0]?.config.tenant_conf ?? {});
}

/**
 * Reads each pageserver's `GET /v1/location_config`: fills what the controller observes,
 * raises generations seen above the persisted ones, and adopts shards only the
 * pageservers know (the attached location with the newest generation wins; ties:
 * AttachedSingle, then lowest node id).
 */
export async function discover(
  deps: { http: PageserverHttp; intents: IntentStore; nodes: NodeSet; observed: ObservedState; log: Log },
  report: DiscoveryReport,
): Promise<void> {
  const { http, intents, nodes, observed, log } = deps;
  const found = new Map<string, { nodeId: string; config: LocationConfig }[]>();
  const reachable = new Set<string>();
  await Promise.all(
    nodes.all().map(async (node) => {
      try {
        const { json } = await http.request<LocationConfigListResponse>(node, 'GET', '/v1/location_config', {
          ...CALLS.listing,
          check: checkLocationConfigList,
        });
        reachable.add(node.nodeId);
        for (const [shardId, config] of json.tenant_shards) {
          if (!config || config.mode === 'Detached') continue;
          const list = found.get(shardId) ?? [];
          list.push({ nodeId: node.nodeId, config });
          found.set(shardId, list);
          observed.set(shardId, node.nodeId, { mode: config.mode, generation: config.generation, conf: confKey(config.tenant_conf) });
        }
      } catch (e) {
        report.unreachable.push(node.nodeId);
        log.warn({ node: node.nodeId, err: e }, `pageserver ${node.nodeId} did not answer discovery: ${e instanceof Error ? e.message : String(e)}`);
      }
    }),
  );
  const adopted: ShardIntent[] = [];
  const configsRead: { shard: ShardIntent; config: TenantConfig }[] = [];
  for (const [shardId, locations] of [...found].sort(([a], [b]) => byId(a, b))) {
    const intent = intents.shards.get(shardId);
    const attached = locations.filter((l) => ATTACHED_MODES.includes(l.config.mode));
    const seen = Math.max(0, ...locations.map((l) => l.config.generation ?? 0));
    if (intent) {
      if (intent.tenantConfig === null) configsRead.push({ shard: intent, config: configOf(locations) });
      for (const l of attached) {
        if (l.nodeId !== intent.attachedNodeId)
          report.extraAttachments.push({ shardId, nodeId: l.nodeId, mode: l.config.mode, generation: l.config.generation });
      }
      // A generation seen on a pageserver was issued: never issue it again.
      await intents.raiseGeneration(intent, seen);
      continue;
    }
    const parsed = parseTenantShardId(shardId);
    if (!attached.length || !parsed) {
      report.unattached.push(shardId);
      continue;
    }
    const winner = [...attached].sort(
      (a, b) =>
        (b.config.generation ?? 0) - (a.config.generation ?? 0) ||
        Number(b.config.mode === 'AttachedSingle') - Number(a.config.mode === 'AttachedSingle') ||
        compareNodeIds(a.nodeId, b.nodeId),
    )[0]!;
    for (const l of attached) {
      if (l !== winner) report.extraAttachments.push({ shardId, nodeId: l.nodeId, mode: l.config.mode, generation: l.config.generation });
    }
    const secondaryNodeIds = locations
      .filter((l) => l.config.mode === 'Secondary')
      .map((l) => l.nodeId)
      .sort(compareNodeIds);
    adopted.push({
      id: shardId,
      tenantId: parsed.tenantId,
      shardNumber: parsed.shardNumber,
      shardCount: parsed.shardCount,
      stripeSize: winner.config.shard_stripe_size ?? 0,
      attachedNodeId: winner.nodeId,
      secondaryNodeIds,
      generation: seen,
      generationNodeId: winner.nodeId,
      preferredZone: nodes.get(winner.nodeId)?.record.zone ?? null,
      policy: policyOf(undefined),
      secondaryCount: defaultSecondaryCount(secondaryNodeIds.length),
      pendingComputeNotification: false,
      tenantConfig: configOf(locations),
    });
    report.adopted.push(shardId);
  }
  if (adopted.length) await intents.create(adopted);
  for (const { shard, config } of configsRead) await intents.update(shard, { tenantConfig: config });
  const unknown = intents.sortedShards().filter((s) => s.tenantConfig === null);
  if (unknown.length)
    log.warn(
      { shards: unknown.map((s) => s.id) },
      `pageserver discovery: the config of ${unknown.length} shard(s) is unknown (no pageserver holding them answered); nothing is sent for them until one does`,
    );
  for (const intent of intents.shards.values()) {
    const here = new Map((found.get(intent.id) ?? []).map((l) => [l.nodeId, l.config.mode]));
    if (reachable.has(intent.attachedNodeId) && !ATTACHED_MODES.includes(here.get(intent.attachedNodeId) as LocationConfigMode)) {
      report.missing.push({ shardId: intent.id, nodeId: intent.attachedNodeId, role: 'attached' });
    }
    for (const s of intent.secondaryNodeIds) {
      if (reachable.has(s) && here.get(s) !== 'Secondary') report.missing.push({ shardId: intent.id, nodeId: s, role: 'secondary' });
    }
  }
  const { extraAttachments, missing, unattached } = report;
  if (extraAttachments.length || missing.length || unattached.length) {
    log.warn(
      { extraAttachments, missing, unattached },
      'pageserver discovery: observed locations differ from the persisted placement (the placement wins; the reconcile repairs them)',
    );
  }
  if (adopted.length) log.info({ count: adopted.length }, `pageserver discovery: adopted ${adopted.length} shard(s) found on the pageservers`);
}
