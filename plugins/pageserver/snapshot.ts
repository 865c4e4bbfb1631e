import { z } from 'zod';
import { SHARD_POLICIES } from '../../src/cluster/types.ts';
import { checkSecondaryProgress } from './checks.ts';
import { HOOK, CALLS } from './neon-retry.ts';
import type { PageserverHttp } from './http-client.ts';
import type { IntentStore } from './intent-store.ts';
import { describeObserved } from './intent.ts';
import { formatLsn, readTimelineLsns } from './live-migration.ts';
import type { NodeSet, NodeRuntime } from './nodes.ts';
import type { ObservedState } from './observed.ts';
import type { SecondaryProgress } from './wire.ts';

/**
 * What a rehearsal (issue 33) reads of the pageservers: the registered nodes, each shard's
 * intent as the controller keeps it (attachment, generation, secondaries, policies, tenant
 * config), what the controller observes on each node, and, read from the pageservers now,
 * the attached location's timelines and each secondary's download progress. JSON only: no
 * address, no token (the loader, rehearsal/loaders/pageserver.ts, stands simulators up in
 * their place). Checked by the loader with this schema, so a snapshot of another version
 * fails with a clear error rather than a half-loaded fleet.
 */
const secondaryProgressSchema = z
  .object({ bytesTotal: z.number().int().nonnegative(), bytesDownloaded: z.number().int().nonnegative(), heatmap: z.boolean() })
  .strict();

export const pageserverSnapshotSchema = z
  .object({
    version: z.literal(1),
    nodes: z.array(
      z
        .object({
          id: z.string().regex(/^\d+$/, 'a pageserver node id (an integer)'),
          name: z.string(),
          zone: z.string(),
          availability: z.enum(['ACTIVE', 'WARMING_UP', 'OFFLINE']),
          cordoned: z.boolean(),
        })
        .strict(),
    ),
    shards: z.array(
      z
        .object({
          id: z.string(),
          tenantId: z.string(),
          shardNumber: z.number().int().nonnegative(),
          shardCount: z.number().int().nonnegative(),
          stripeSize: z.number().int().nonnegative(),
          attachedNodeId: z.string(),
          generation: z.number().int().nonnegative(),
          generationNodeId: z.string().nullable(),
          secondaryNodeIds: z.array(z.string()),
          secondaryCount: z.number().int().nonnegative(),
          policy: z.enum(SHARD_POLICIES),
          preferredZone: z.string().nullable(),
          pendingComputeNotification: z.boolean(),
          tenantConfig: z.record(z.string(), z.unknown()).nullable(),
          /** Per node, what the controller observes there (`Mode@generation`, `Secondary`, `unknown`). */
          observed: z.record(z.string(), z.string()),
          /** Timeline id → last record LSN (`hi/lo`) on the attached location; null: not read (its node unavailable or not answering). */
          timelines: z.record(z.string(), z.string()).nullable(),
          /** Per secondary node, its download progress; null: not read. */
          secondaries: z.record(z.string(), secondaryProgressSchema.nullable()),
        })
        .strict(),
    ),
    /** The notify-attach hook: whether one is configured and guarded by a token (neither its URL nor its token), and Neon's fixed timings. */
    computeHook: z
      .object({ configured: z.boolean(), tokenRequired: z.boolean(), requestTimeoutMs: z.number(), retries: z.number(), concurrency: z.number() })
      .strict(),
    /** What could not be read from the pageservers, in words. */
    unread: z.array(z.string()),
  })
  .strict();

export type PageserverSnapshotData = z.output<typeof pageserverSnapshotSchema>;
type SnapshotShard = PageserverSnapshotData['shards'][number];

/** Reads of the pageservers in flight at once: a snapshot of 100 000 shards must not open 200 000 sockets. */
const READ_CONCURRENCY = 32;

async function eachLimited<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

export async function readSnapshot(deps: {
  http: PageserverHttp;
  intents: IntentStore;
  nodes: NodeSet;
  observed: ObservedState;
  hook: { configured: boolean; tokenRequired: boolean };
}): Promise<PageserverSnapshotData> {
  const { http, intents, nodes, observed } = deps;
  const unread: string[] = [];
  const shards: SnapshotShard[] = intents.sortedShards().map((s) => ({
    id: s.id,
    tenantId: s.tenantId,
    shardNumber: s.shardNumber,
    shardCount: s.shardCount,
    stripeSize: s.stripeSize,
    attachedNodeId: s.attachedNodeId,
    generation: s.generation,
    generationNodeId: s.generationNodeId,
    secondaryNodeIds: [...s.secondaryNodeIds],
    secondaryCount: s.secondaryCount,
    policy: s.policy,
    preferredZone: s.preferredZone,
    pendingComputeNotification: s.pendingComputeNotification,
    tenantConfig: s.tenantConfig === null ? null : structuredClone(s.tenantConfig),
    observed: Object.fromEntries([...observed.of(s.id)].map(([n, o]) => [n, describeObserved(o)])),
    timelines: null,
    secondaries: Object.fromEntries(s.secondaryNodeIds.map((n) => [n, null])),
  }));
  const reachable = (id: string): NodeRuntime | undefined => (nodes.available(id) ? nodes.get(id) : undefined);
  const reads: (() => Promise<void>)[] = [];
  for (const shard of shards) {
    const attached = reachable(shard.attachedNodeId);
    if (attached)
      reads.push(async () => {
        try {
          const lsns = await readTimelineLsns(http, attached, shard.id);
          shard.timelines = Object.fromEntries([...lsns].map(([tl, lsn]) => [tl, formatLsn(lsn)]));
        } catch (e) {
          unread.push(`timelines of ${shard.id} on node ${attached.nodeId}: ${(e as Error).message}`);
        }
      });
    else unread.push(`timelines of ${shard.id}: node ${shard.attachedNodeId} is not available`);
    for (const nodeId of shard.secondaryNodeIds) {
      const node = reachable(nodeId);
      if (!node) {
        unread.push(`secondary of ${shard.id} on node ${nodeId}: not available`);
        continue;
      }
      reads.push(async () => {
        try {
          const { json } = await http.request<SecondaryProgress>(node, 'GET', `/v1/tenant/${shard.id}/secondary/status`, {
            ...CALLS.listing,
            check: checkSecondaryProgress,
          });
          shard.secondaries[nodeId] = {
            bytesTotal: json.bytes_total,
            bytesDownloaded: Math.min(json.bytes_downloaded, json.bytes_total),
            heatmap: json.heatmap_mtime !== null,
          };
        } catch (e) {
          unread.push(`secondary of ${shard.id} on node ${nodeId}: ${(e as Error).message}`);
        }
      });
    }
  }
  await eachLimited(reads, READ_CONCURRENCY, (read) => read());
  return {
    version: 1,
    nodes: nodes.all().map((n) => ({
      id: n.nodeId,
      name: n.record.name,
      zone: n.record.zone,
      availability: n.hb.availability,
      cordoned: n.record.cordoned,
    })),
    shards,
    computeHook: { ...deps.hook, requestTimeoutMs: HOOK.requestTimeoutMs, retries: HOOK.retries, concurrency: HOOK.concurrency },
    unread: unread.sort(),
  };
}
