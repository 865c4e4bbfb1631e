import type { TenantConfig } from '../../src/domain/storage/tenant-config.ts';
import { configOf } from './discovery.ts';
import { confKey } from './location-calls.ts';
import type { ShardIntent } from './intent.ts';
import type { NodeAvailability } from '../../src/cluster/types.ts';
import { BackendError } from '../../src/cluster/errors.ts';
import { checkLocationConfigList, checkUtilization } from './checks.ts';
import { heartbeatVerdict } from './heartbeater.ts';
import type { ReconcileDeps } from './location-calls.ts';
import { CALLS } from './neon-retry.ts';
import type { NodeRuntime } from './nodes.ts';
import type { Reconciler } from './reconciler.ts';
import type { LocationConfigListResponse } from './wire.ts';

export interface AvailabilityDeps extends ReconcileDeps {
  reconciler: Reconciler;
  limits: { maxOfflineIntervalMs: number; maxWarmingUpIntervalMs: number };
  /** The node's availability changed (a `nodeChanged` event). */
  changed(node: NodeRuntime): void;
  /** The node was declared lost (a `nodeLost` event: the gateway fails its shards over, neon:H5). */
  lost(node: NodeRuntime): void;
}

/**
 * Node availability as Neon's controller keeps it (`Node::get_availability_transition`,
 * neon:H2–H4): heartbeat verdicts, the activation of a node turning ACTIVE, and what going
 * OFFLINE does to what we know of it. Failing its shards over is the gateway's FAILOVER
 * operation (neon:H5), which hears the OFFLINE through `nodeChanged`.
 */
/** The plugin-store meta key of the persisted heartbeat state (ha:L8). */
const HEARTBEATS_KEY = 'heartbeats';

export class NodeAvailabilityKeeper {
  private readonly activating = new Set<string>();
  private persisted: string | null = null;

  constructor(private readonly deps: AvailabilityDeps) {}

  /** neon:H1: one node's heartbeat, `GET /v1/utilization` with 3 retries of 1 s. */
  async probe(nodeId: string): Promise<boolean> {
    const node = this.deps.nodes.get(nodeId);
    if (!node) return false;
    try {
      await this.deps.http.request(node, 'GET', '/v1/utilization', { ...CALLS.heartbeat, check: checkUtilization });
      return true;
    } catch {
      return false;
    }
  }

  /** A heartbeat round ended: apply each node's verdict (neon:H2, neon:H3); `first`: the first round of this leadership. */
  async onRound(results: Map<string, { ok: boolean; sentAt: number }>, endedAt: number, first = false): Promise<void> {
    const offlineBefore = first ? this.deps.nodes.all().filter((n) => n.hb.availability === 'OFFLINE') : [];
    const activated: NodeRuntime[] = [];
    await Promise.all(
      [...results].map(async ([nodeId, { ok, sentAt }]) => {
        const node = this.deps.nodes.get(nodeId);
        if (!node) return;
        // A heartbeat sent before a re-attach may have reached the old process.
        if (ok && node.hb.availability === 'WARMING_UP' && sentAt < node.reattachedAt) return;
        const verdict = heartbeatVerdict(node.hb, ok, endedAt, this.deps.limits);
        if (verdict === 'available') {
          node.hb.lastOkAt = endedAt;
          // A failed activation keeps it out of ACTIVE; the next round tries again (neon:H4).
          if (node.hb.availability !== 'ACTIVE' || node.hb.inherited)
            await this.activate(node, { reconcile: false }).then(
              () => activated.push(node),
              () => {},
            );
        } else if (verdict === 'offline') {
          const why =
            node.hb.availability === 'WARMING_UP'
              ? `no good heartbeat within ${this.deps.limits.maxWarmingUpIntervalMs} ms of its re-attach`
              : `no good heartbeat for ${this.deps.limits.maxOfflineIntervalMs} ms`;
          this.deps.log.warn({ node: nodeId }, `pageserver ${nodeId} OFFLINE: ${why}`);
          this.goOffline(node);
        }
      }),
    );
    for (const node of offlineBefore) this.stillLost(node, results.get(node.nodeId)?.ok ?? false);
    // Only now, with every node of the round known: a reconcile started by the first node to
    // answer took a node still being activated for OFFLINE, so it attached directly and left
    // that node's AttachedSingle alone (the crash campaign, seed 2 round 63).
    for (const node of activated) this.reconcileActivated(node);
    await this.persist();
  }

  /**
   * neon:H5, ha:L8: a node OFFLINE when this replica began to lead, and silent in its first
   * round, is lost again if it still holds attached shards. Its OFFLINE may be the previous
   * leader's (persisted, or never seen since start-up) whose failover never got admitted (it
   * died in between); Neon's controller likewise schedules every shard off the nodes its
   * start-up heartbeat round found offline. The gateway starts no second failover of a node.
   */
  private stillLost(node: NodeRuntime, answered: boolean): void {
    if (answered || node.hb.availability !== 'OFFLINE') return;
    if (!this.deps.intents.sortedShards().some((s) => s.attachedNodeId === node.nodeId)) return;
    this.deps.log.warn({ node: node.nodeId }, `pageserver ${node.nodeId} OFFLINE at take-over with shards attached: failing them over`);
    this.deps.lost(node);
  }

  /**
   * ha:L8: each node's availability and last good heartbeat, written after every round the
   * leader runs, so that the next leader knows when a node was last seen (a node that died
   * together with the old leader still fails over under the new one).
   */
  private async persist(): Promise<void> {
    const state = Object.fromEntries(this.deps.nodes.all().map((n) => [n.nodeId, { availability: n.hb.availability, lastOkAt: n.hb.lastOkAt }]));
    const json = JSON.stringify(state);
    if (json === this.persisted) return;
    await this.deps.intents.meta.setMeta(HEARTBEATS_KEY, json);
    this.persisted = json;
  }

  /**
   * ha:L8: on taking over, each node's availability and last good heartbeat as the previous
   * leader persisted them, where this process has seen nothing better: a node the old leader
   * saw ACTIVE and that answers no more goes OFFLINE `maxOfflineIntervalMs` after its last
   * success (neon:H2) and its shards fail over; one that answers is activated (neon:H4).
   */
  async inherit(): Promise<void> {
    const raw = await this.deps.intents.meta.getMeta(HEARTBEATS_KEY);
    if (!raw) return;
    this.persisted = raw;
    let stored: Record<string, { availability?: unknown; lastOkAt?: unknown }>;
    try {
      stored = JSON.parse(raw) as typeof stored;
    } catch {
      return this.deps.log.warn({}, 'the persisted heartbeat state is not JSON: every node starts OFFLINE (neon:H4)');
    }
    for (const node of this.deps.nodes.all()) {
      const s = stored[node.nodeId];
      if (!s || typeof s.lastOkAt !== 'number' || (node.hb.lastOkAt !== null && node.hb.lastOkAt >= s.lastOkAt)) continue;
      node.hb.lastOkAt = s.lastOkAt;
      if (node.hb.availability === 'OFFLINE' && (s.availability === 'ACTIVE' || s.availability === 'WARMING_UP')) {
        node.hb.inherited = true;
        if (s.availability === 'WARMING_UP') node.hb.warmingSince ??= s.lastOkAt;
        this.set(node, s.availability);
      }
    }
  }

  /**
   * ha:R1, ha:L8: on a stand-by, each node's availability as the leader last persisted it.
   * A stand-by sends no heartbeats, so without this its nodes stayed OFFLINE from start-up
   * (neon:H4): a drain started on a stand-by was refused (`node 1 is OFFLINE`), queries there
   * said OFFLINE, and a stand-by that took over found every node OFFLINE and failed them all
   * over (ending the drain running on one, ha:R2) before its first heartbeat round. Found by
   * ha:scenario-1 (test/leadership/acceptance-kills.test.ts). Nothing is sent and nothing is
   * declared lost here: the leader does that. A node followed ACTIVE is activated again by
   * this replica's first good heartbeat as leader (`inherited`), as after `inherit()`.
   */
  async follow(): Promise<void> {
    const raw = await this.deps.intents.meta.getMeta(HEARTBEATS_KEY);
    if (!raw || raw === this.persisted) return;
    let stored: Record<string, { availability?: unknown; lastOkAt?: unknown }>;
    try {
      stored = JSON.parse(raw) as typeof stored;
    } catch {
      return;
    }
    this.persisted = raw;
    for (const node of this.deps.nodes.all()) {
      const s = stored[node.nodeId];
      if (!s || (s.availability !== 'ACTIVE' && s.availability !== 'WARMING_UP' && s.availability !== 'OFFLINE')) continue;
      node.hb.lastOkAt = typeof s.lastOkAt === 'number' ? s.lastOkAt : null;
      node.hb.inherited = s.availability !== 'OFFLINE';
      if (s.availability === 'WARMING_UP') node.hb.warmingSince ??= node.hb.lastOkAt;
      this.set(node, s.availability);
    }
  }

  /**
   * neon:H4 `Offline`/`WarmingUp` → `Active`: list the node's locations (5 retries, 5 s);
   * differing ones become unknown, shards we do not know are detached; a failure keeps
   * the node out of ACTIVE. Then ACTIVE, and its unknown locations are reconciled (by the
   * caller when `reconcile` is false: a heartbeat round, once all its nodes are activated).
   */
  /** Every shard of the tenant whose config is still unknown takes it (one write). */
  private async adoptConfig(shard: ShardIntent, config: TenantConfig): Promise<void> {
    const { intents } = this.deps;
    const same = [...intents.shards.values()].filter((s) => s.tenantId === shard.tenantId && s.tenantConfig === null);
    await intents.updateMany(same, { tenantConfig: config });
    this.deps.log.info({ tenant: shard.tenantId }, `tenant ${shard.tenantId}'s config read from a pageserver`);
  }

  async activate(node: NodeRuntime, { reconcile = true }: { reconcile?: boolean } = {}): Promise<void> {
    if (this.activating.has(node.nodeId)) return;
    this.activating.add(node.nodeId);
    try {
      const { observed, intents, http } = this.deps;
      const { json } = await http.request<LocationConfigListResponse>(node, 'GET', '/v1/location_config', {
        ...CALLS.activation,
        check: checkLocationConfigList,
      });
      const reported = new Map(json.tenant_shards);
      for (const [shardId, config] of reported) {
        if (!intents.shards.has(shardId)) {
          await http.request(node, 'PUT', `/v1/tenant/${shardId}/location_config`, {
            body: {
              mode: 'Detached',
              generation: null,
              secondary_conf: null,
              shard_number: config?.shard_number ?? 0,
              shard_count: config?.shard_count ?? 0,
              shard_stripe_size: 0,
              tenant_conf: {},
            },
            ...CALLS.activation,
          });
          this.deps.log.info({ node: node.nodeId, shard: shardId }, `detached shard ${shardId} from node ${node.nodeId}: not known to this controller`);
          continue;
        }
        const mine = observed.get(shardId, node.nodeId);
        const conf = config === null ? undefined : confKey(config.tenant_conf);
        const same =
          mine !== undefined &&
          mine !== 'unknown' &&
          config !== null &&
          mine.mode === config.mode &&
          mine.generation === config.generation &&
          (mine.conf === undefined || mine.conf === conf);
        if (!same) observed.set(shardId, node.nodeId, 'unknown');
        // neon:W10: a tenant whose config was unknown (its pageservers unreachable at start-up) takes this location's.
        const shard = intents.shards.get(shardId)!;
        if (shard.tenantConfig === null && config !== null && config.mode !== 'Detached')
          await this.adoptConfig(shard, configOf([{ nodeId: node.nodeId, config }]));
      }
      // What the node no longer holds: it holds nothing of it.
      for (const shardId of observed.shardsOn(node.nodeId)) if (!reported.has(shardId)) observed.delete(shardId, node.nodeId);
      node.hb.warmingSince = null;
      node.hb.inherited = false;
      this.set(node, 'ACTIVE');
      this.deps.log.info({ node: node.nodeId }, `pageserver ${node.nodeId} ACTIVE`);
      if (reconcile) this.reconcileActivated(node);
    } catch (e) {
      this.deps.log.warn(
        { node: node.nodeId, err: e },
        `pageserver ${node.nodeId} answers heartbeats but could not be activated: ${e instanceof Error ? e.message : String(e)}`,
      );
      throw new BackendError('Unavailable', `node ${node.nodeId} could not be activated: ${e instanceof Error ? e.message : String(e)}`, {
        kind: 'node',
        id: node.nodeId,
      });
    } finally {
      this.activating.delete(node.nodeId);
    }
  }

  /** neon:H4: after a node's activation, its unknown locations and every shard that needs it are reconciled. */
  private reconcileActivated(node: NodeRuntime): void {
    const { intents, observed, reconciler } = this.deps;
    for (const shard of intents.sortedShards()) {
      if (shard.policy === 'STOP' || reconciler.reconciling(shard.id)) continue;
      if (observed.get(shard.id, node.nodeId) === 'unknown' || reconciler.needsReconcile(shard)) reconciler.spawn(shard.id, `node ${node.nodeId} activation`);
    }
  }

  /** neon:H4 `→ Offline`: calls in flight end, every location on it becomes unknown (neon:H5a). */
  goOffline(node: NodeRuntime): void {
    if (node.hb.availability === 'OFFLINE') return;
    this.deps.http.abortNode(node.nodeId, `pageserver ${node.nodeId} went OFFLINE`);
    this.deps.observed.unknownOn(node.nodeId);
    this.set(node, 'OFFLINE');
    this.deps.lost(node);
  }

  /** A re-attach (neon:H6): WARMING_UP from now; calls in flight to the old process end; nothing is rescheduled. */
  warmingUp(node: NodeRuntime, now: number): void {
    this.deps.http.abortNode(node.nodeId, `pageserver ${node.nodeId} restarted (re-attach)`);
    node.reattachedAt = now;
    node.hb.warmingSince = now;
    this.set(node, 'WARMING_UP');
  }

  /**
   * neon:E6: an operator's availability. `OFFLINE` at once (neon:H8; the next good
   * heartbeat brings it back); `ACTIVE` through the activation (its failure is the caller's
   * error); `WARMING_UP` from now.
   */
  async command(node: NodeRuntime, availability: NodeAvailability): Promise<void> {
    if (availability === 'OFFLINE') return this.goOffline(node);
    if (availability === 'WARMING_UP') {
      node.hb.warmingSince = this.deps.clock.now();
      return this.set(node, 'WARMING_UP');
    }
    if (node.hb.availability !== 'ACTIVE') await this.activate(node);
  }

  private set(node: NodeRuntime, availability: NodeAvailability): void {
    if (node.hb.availability === availability) return;
    node.hb.availability = availability;
    this.deps.changed(node);
  }
}
