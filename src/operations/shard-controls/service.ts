import { randomUUID } from 'node:crypto';
import type { CutOverResult } from '../../cluster/backend.ts';
import { BackendError } from '../../cluster/errors.ts';
import type { PlacementControl, ShardDetails } from '../../cluster/shard-control.ts';
import type { ClusterShard } from '../../cluster/types.ts';
import { compareNodeIds } from '../../domain/compare.ts';
import {
  ConflictError,
  InvalidInputError,
  LockkeeperError,
  NotFoundError,
  PreconditionFailedError,
  ReconcileFailedError,
  TimeoutError,
  UnavailableError,
} from '../../domain/errors.ts';
import { countsOf, newOperation, type OperationOutcome, type OperationSnapshot, type RequestMeta, type StepRecord } from '../../domain/operations.ts';
import { betterScoringNode, locationLoad, withSecondaryCount } from '../../domain/storage/scheduling.ts';
import type { PlanNode, ShardPolicy } from '../../domain/storage/shards.ts';
import { applyTenantConfigPatch, type TenantConfig } from '../../domain/storage/tenant-config.ts';
import type { InterruptedOperation } from '../../store/operation-repository.ts';
import type { EngineDeps } from '../core/engine-deps.ts';
import type { OperationKindEngine } from '../core/operation-kind.ts';
import type { StorageEngine } from '../storage/engine.ts';
import { MigrateRun, type MigrateParams, type MigrateRunHost } from './migrate-run.ts';

const KINDS = ['MIGRATE'] as const;
/** neon:W4: how long a per-shard call waits for its reconcile (`RECONCILE_TIMEOUT`). */
const RECONCILE_TIMEOUT_MS = 30_000;
/** neon:W6: how long a cancel waits for the reconcile to stop (`SHORT_RECONCILE_TIMEOUT`). */
const SHORT_RECONCILE_TIMEOUT_MS = 5_000;
/** How often a prewarming migration asks whether the target's secondary is warm. */
const WARM_POLL_MS = 5_000;

export interface MigrateRequest {
  shardId: string;
  nodeId: string;
  originNodeId?: string | null;
  /** neon:W1 `migration_config`. */
  overrideScheduler?: boolean;
  prewarm?: boolean;
  warmup?: { timeoutMs: number; requestTimeoutMs: number } | null;
}

export interface MigrateResult {
  shard: ClusterShard;
  /** The MIGRATE operation that does the rest of a prewarmed migration (neon:W2), if one was started. */
  operation: OperationSnapshot | null;
}

/** What a tenant's describe shows (Neon's `TenantDescribeResponse`, the fields Lockkeeper has). */
export interface TenantDescription {
  tenantId: string;
  shards: (ClusterShard & { details: ShardDetails | null })[];
}

/**
 * Per-shard controls (neon:W1–W9) under the Decision "no optimiser": migrate (prewarmed as
 * an operation of kind MIGRATE, or at once), migrate a secondary, cancel a reconcile, a
 * tenant's policy and secondary count, preferred zones. Backends without
 * `placement` refuse with `NOT_SUPPORTED`.
 */
export class ShardControls implements OperationKindEngine {
  readonly kinds = KINDS;
  private readonly host: MigrateRunHost;

  constructor(private readonly deps: EngineDeps & { storage: StorageEngine }) {
    this.host = {
      backend: deps.backend,
      clock: deps.clock,
      journal: deps.operations.journal,
      observer: deps.observer,
      log: deps.log,
      pollMs: WARM_POLL_MS,
      finish: (run, outcome, failure) => this.finish(run, outcome, failure),
    };
    deps.operations.register(this);
  }

  private get core() {
    return this.deps.operations;
  }

  async prepare(): Promise<boolean> {
    return Boolean(this.deps.backend.placement);
  }

  resume({ snapshot: stored, steps, params }: InterruptedOperation): void {
    const step = steps[0];
    if (!step) return;
    const snapshot = { ...stored, counts: countsOf(steps), waitingOn: null };
    this.core.launch(new MigrateRun(this.host, snapshot, step, params as unknown as MigrateParams));
  }

  stop(): void {}

  private placement(): PlacementControl {
    const p = this.deps.backend.placement;
    if (!p) throw new PreconditionFailedError('NOT_SUPPORTED', 'this backend takes no per-shard placements');
    return p;
  }

  private async planNodes(): Promise<Map<string, PlanNode>> {
    const nodes = await this.deps.backend.listNodes();
    return new Map(nodes.map((n) => [n.id, { id: n.id, zone: n.zone, availability: n.availability, policy: this.deps.storage.policyOf(n.id) }]));
  }

  private async requireShard(id: string): Promise<ClusterShard> {
    const shard = await this.deps.backend.getShard(id);
    if (!shard) throw new NotFoundError('shard', id);
    return shard;
  }

  /** The MIGRATE operation running for the shard, if any. */
  pendingMigration(shardId: string): MigrateRun | undefined {
    return this.core.live.all(KINDS).find((r) => (r as MigrateRun).params.shardId === shardId) as MigrateRun | undefined;
  }

  /**
   * neon:W1–W4, checked in Neon's order: unknown node (invalid input), unavailable node
   * without `overrideScheduler`, unknown shard, a better-scoring node (the drain target
   * order of storage:D3) without `overrideScheduler`, a wrong `originNodeId`; a target
   * already attached moves nothing and cancels a pending migration.
   */
  async migrate(request: MigrateRequest, meta: RequestMeta): Promise<MigrateResult> {
    const placement = this.placement();
    const { nodeId, shardId } = request;
    const nodes = await this.planNodes();
    const target = nodes.get(nodeId);
    if (!target) throw new InvalidInputError('node_id', nodeId, `node ${nodeId} is not registered`);
    if (target.availability !== 'ACTIVE' && !request.overrideScheduler) {
      throw new PreconditionFailedError('NODE_UNAVAILABLE', `node ${nodeId} is ${target.availability}; migrate to it with overrideScheduler`);
    }
    const shard = await this.requireShard(shardId);
    if (!request.overrideScheduler && shard.attachedNodeId !== nodeId) {
      const better = betterScoringNode(shard, nodeId, nodes);
      if (better !== null)
        throw new PreconditionFailedError(
          'WORSE_SCORING_NODE',
          `Migration to a worse-scoring node: node ${better} scores better for shard ${shardId} than node ${nodeId}`,
        );
    }
    if (request.originNodeId != null && request.originNodeId !== shard.attachedNodeId) {
      throw new PreconditionFailedError('ORIGIN_MISMATCH', `shard ${shardId} is attached to node ${shard.attachedNodeId}, not node ${request.originNodeId}`);
    }
    const pending = this.pendingMigration(shardId);
    if (shard.attachedNodeId === nodeId) {
      if (pending) await this.cancelMigration(pending, meta);
      return { shard, operation: null };
    }
    if (pending) await this.cancelMigration(pending, meta);
    const details = await placement.describeShard(shardId);
    const wanted = details?.secondaryCount ?? shard.secondaryNodeIds.length;
    const warmup = request.warmup ?? undefined;
    if (request.prewarm ?? true) {
      const status = shard.secondaryNodeIds.includes(nodeId) ? await this.deps.backend.getSecondaryStatus(shardId, nodeId).catch(() => null) : null;
      const warm = status !== null && status.heatmapMtime !== null && status.bytesDownloaded >= status.bytesTotal;
      if (warm) {
        // neon:W2: the target holds a warm secondary, so the first step is the cut-over itself.
        await this.placeAndWait(
          shardId,
          { attachedNodeId: nodeId, secondaryNodeIds: [...shard.secondaryNodeIds.filter((n) => n !== nodeId), shard.attachedNodeId] },
          warmup,
        );
        return { shard: await this.requireShard(shardId), operation: null };
      }
      const keep = [...shard.secondaryNodeIds];
      if (!keep.includes(nodeId)) await this.placeAndWait(shardId, { attachedNodeId: shard.attachedNodeId, secondaryNodeIds: [...keep, nodeId] }, warmup);
      const operation = await this.startMigration(
        shard,
        nodeId,
        keep.filter((n) => n !== nodeId),
        warmup ?? null,
        meta,
      );
      return { shard: await this.requireShard(shardId), operation };
    }
    // neon:W3: the intent at once — the target attached, the old attached node a secondary under Attached(n > 0).
    const rest = shard.secondaryNodeIds.filter((n) => n !== nodeId);
    const secondaries = wanted > 0 ? [shard.attachedNodeId, ...rest].slice(0, wanted) : [];
    if (shard.policy === 'STOP') {
      // neon:W4: a Stop shard's intent changes; no reconcile runs (the backend makes no calls for it).
      await placement.placeShard(shardId, { attachedNodeId: nodeId, secondaryNodeIds: secondaries }).catch(() => {});
      return { shard: await this.requireShard(shardId), operation: null };
    }
    await this.placeAndWait(shardId, { attachedNodeId: nodeId, secondaryNodeIds: secondaries }, warmup);
    return { shard: await this.requireShard(shardId), operation: null };
  }

  /** neon:W5: every secondary replaced by one at `nodeId` (an unavailable node is accepted). */
  async migrateSecondary(shardId: string, nodeId: string): Promise<ClusterShard> {
    this.placement();
    const nodes = await this.planNodes();
    if (!nodes.has(nodeId)) throw new InvalidInputError('node_id', nodeId, `node ${nodeId} is not registered`);
    const shard = await this.requireShard(shardId);
    const onlySecondary = shard.secondaryNodeIds.length === 1 && shard.secondaryNodeIds[0] === nodeId;
    if (onlySecondary || shard.attachedNodeId === nodeId) return shard;
    await this.placeAndWait(shardId, { attachedNodeId: shard.attachedNodeId, secondaryNodeIds: [nodeId] }, undefined);
    return this.requireShard(shardId);
  }

  /** neon:W6: stops the shard's reconcile in flight (up to 5 s); the next background pass starts another unless the shard is `Stop`. */
  async cancelReconcile(shardId: string): Promise<ClusterShard> {
    const placement = this.placement();
    const shard = await this.requireShard(shardId);
    const stopped = placement.cancelReconcile(shardId);
    const timedOut = await this.within(stopped, SHORT_RECONCILE_TIMEOUT_MS);
    if (timedOut) throw new TimeoutError(`the reconcile of shard ${shardId} did not stop within ${SHORT_RECONCILE_TIMEOUT_MS / 1000} s`);
    return shard;
  }

  /**
   * neon:W7: a tenant's shard policy and, with `secondaryCount`, its placement `Attached(n)`,
   * persisted first for every shard, then each shard rescheduled and reconciled without
   * waiting. Neon's `Detached` and `Secondary` placements are refused: Lockkeeper never
   * leaves a shard without an attached location.
   */
  async setTenantPolicy(tenantId: string, change: { policy?: ShardPolicy; secondaryCount?: number }): Promise<ClusterShard[]> {
    const placement = this.placement();
    const shards = await this.deps.backend.listShards({ tenantId });
    if (!shards.length) throw new NotFoundError('shard', tenantId);
    if (change.secondaryCount !== undefined && (!Number.isInteger(change.secondaryCount) || change.secondaryCount < 0)) {
      throw new InvalidInputError('placement', String(change.secondaryCount), 'Attached(n) needs a non-negative integer n');
    }
    for (const s of shards) await placement.setShardPolicy(s.id, change);
    if (change.secondaryCount !== undefined) {
      const nodes = await this.planNodes();
      const load = locationLoad(await this.deps.backend.listShards());
      for (const s of shards) {
        if (s.policy === 'STOP' && change.policy === undefined) continue;
        const next = withSecondaryCount(s, change.secondaryCount, nodes, load);
        if (next.secondaryNodeIds.join() === [...s.secondaryNodeIds].sort(compareNodeIds).join()) continue;
        for (const n of next.secondaryNodeIds) if (!s.secondaryNodeIds.includes(n)) load.set(n, (load.get(n) ?? 0) + 1);
        placement
          .placeShard(s.id, next)
          .catch((e: unknown) => this.deps.log.warn({ shard: s.id, err: e }, `shard ${s.id}: reconcile after a policy change failed`));
      }
    }
    return this.deps.backend.listShards({ tenantId });
  }

  /** neon:W9: preferred zones, unchecked names, unknown shards left out; nothing moves now (later fills, failovers and migrations use them). */
  async setPreferredZones(zones: Record<string, string | null>): Promise<string[]> {
    const placement = this.placement();
    const updated: string[] = [];
    for (const [id, zone] of Object.entries(zones)) {
      if (!(await this.deps.backend.getShard(id))) continue;
      await placement.setPreferredZone(id, zone);
      updated.push(id);
    }
    return updated;
  }

  private tenantConfigs(): Required<Pick<PlacementControl, 'getTenantConfig' | 'setTenantConfig'>> {
    const p = this.placement();
    if (!p.getTenantConfig || !p.setTenantConfig) throw new PreconditionFailedError('NOT_SUPPORTED', 'this backend keeps no tenant config');
    return { getTenantConfig: p.getTenantConfig.bind(p), setTenantConfig: p.setTenantConfig.bind(p) };
  }

  /** neon:W10: the tenant's stored config; Unavailable while it is unknown (its pageservers unreachable since start-up). */
  async getTenantConfig(tenantId: string): Promise<TenantConfig> {
    const config = await this.tenantConfigs()
      .getTenantConfig(tenantId)
      .catch((e: unknown) => {
        if (e instanceof BackendError && e.code === 'NotFound') throw new NotFoundError('tenant', tenantId);
        throw e;
      });
    if (config === null) throw new UnavailableError(`tenant ${tenantId}'s config is unknown: no pageserver holding it has answered since start-up`, null);
    return config;
  }

  /** neon:W10 (PUT): the whole config, stored for every shard, then reconciled (answered once stored). */
  async setTenantConfig(tenantId: string, config: TenantConfig): Promise<TenantConfig> {
    await this.tenantConfigs()
      .setTenantConfig(tenantId, config)
      .catch((e: unknown) => {
        if (e instanceof BackendError && e.code === 'NotFound') throw new NotFoundError('tenant', tenantId);
        throw e;
      });
    return this.getTenantConfig(tenantId);
  }

  /** neon:W10 (PATCH): Neon's field-patch rules on the stored config (`null` removes a field, one left out is kept). */
  async patchTenantConfig(tenantId: string, patch: Record<string, unknown>): Promise<TenantConfig> {
    const base = await this.getTenantConfig(tenantId);
    return this.setTenantConfig(tenantId, applyTenantConfigPatch(base, patch));
  }

  async describeTenant(tenantId: string): Promise<TenantDescription> {
    const shards = await this.deps.backend.listShards({ tenantId });
    if (!shards.length) throw new NotFoundError('shard', tenantId);
    const placement = this.deps.backend.placement;
    return { tenantId, shards: await Promise.all(shards.map(async (s) => ({ ...s, details: placement ? await placement.describeShard(s.id) : null }))) };
  }

  /** neon:W4: the reconcile within 30 s (TimeoutError, it goes on) or its failure (ReconcileFailedError). */
  private async placeAndWait(
    shardId: string,
    target: { attachedNodeId: string; secondaryNodeIds: string[] },
    warmup: MigrateRequest['warmup'] | undefined,
  ): Promise<CutOverResult | void> {
    const placing = this.placement().placeShard(shardId, target, { keepIntent: true, ...(warmup && { warmup }) });
    placing.catch(() => {});
    let result: CutOverResult | void = undefined;
    const timedOut = await this.within(
      placing.then((r) => {
        result = r;
      }),
      RECONCILE_TIMEOUT_MS,
    ).catch((e: unknown) => {
      if (e instanceof LockkeeperError) throw e;
      // neon:W1, neon:W4: a reconcile of the shard that failed because a node is unavailable (attaching an OFFLINE
      // node, which override_scheduler allows) is a reconcile error, 500 as Neon answers it; the intent stays and a
      // later reconcile completes it. Unavailable about nothing in particular (the backend itself) stays 503.
      if (e instanceof BackendError && e.code === 'Unavailable' && (e.subject?.kind === 'shard' || e.subject?.kind === 'node'))
        throw new ReconcileFailedError(e.message);
      if (e instanceof BackendError && e.code === 'Unavailable') throw new UnavailableError(e.message, null);
      if (e instanceof BackendError && e.code === 'Conflict') throw new ConflictError(e.message);
      throw new ReconcileFailedError(e instanceof Error ? e.message : String(e));
    });
    if (timedOut) throw new TimeoutError(`shard ${shardId} was not reconciled within ${RECONCILE_TIMEOUT_MS / 1000} s; the reconcile goes on`);
    return result;
  }

  /** True when `ms` of the clock passed first; rethrows the promise's error. */
  private async within(promise: Promise<unknown>, ms: number): Promise<boolean> {
    let cancel = () => {};
    const timer = new Promise<'timeout'>((resolve) => (cancel = this.deps.clock.setTimer(ms, () => resolve('timeout'))));
    try {
      return (await Promise.race([promise.then(() => 'done' as const), timer])) === 'timeout';
    } finally {
      cancel();
    }
  }

  private startMigration(
    shard: ClusterShard,
    targetNodeId: string,
    keep: string[],
    warmup: MigrateParams['warmup'],
    meta: RequestMeta,
  ): Promise<OperationSnapshot> {
    return this.core.exclusive(async () => {
      const { store, clock } = this.deps;
      const now = clock.now();
      const step: StepRecord = {
        workloadKind: 'shard',
        workloadId: shard.id,
        action: 'MIGRATE',
        state: 'PLANNED',
        reason: null,
        error: null,
        fromNodeId: shard.attachedNodeId,
        toNodeId: targetNodeId,
        seq: 0,
        startedAt: null,
        finishedAt: null,
      };
      const params: MigrateParams = { shardId: shard.id, originNodeId: shard.attachedNodeId, targetNodeId, keepSecondaryNodeIds: keep, warmup };
      const snapshot = newOperation({ id: randomUUID(), kind: 'MIGRATE', nodeId: targetNodeId, meta, steps: [step], now });
      await store.commit([
        store.operations.create(snapshot, params, [step]),
        store.events.append({
          at: now,
          type: 'OPERATION_STARTED',
          nodeId: targetNodeId,
          operationId: snapshot.id,
          payload: { kind: 'MIGRATE', actor: meta.actor, reason: meta.reason, shard: shard.id, from: shard.attachedNodeId, to: targetNodeId },
        }),
      ]);
      this.deps.observer.operationStarted('MIGRATE');
      this.core.launch(new MigrateRun(this.host, snapshot, step, params));
      this.core.publishProgress(snapshot, [step]);
      return snapshot;
    });
  }

  private cancelMigration(run: MigrateRun, meta: RequestMeta): Promise<void> {
    return this.core.exclusive(async () => {
      if (run.snapshot.state === 'RUNNING')
        await this.core.changeState(run, 'CANCELLING', { type: 'OPERATION_CANCELLING', payload: { actor: meta.actor, reason: meta.reason } });
    });
  }

  private async finish(run: MigrateRun, outcome: OperationOutcome, failure: string | null): Promise<void> {
    if (this.core.stopped) return;
    await this.core.journal.flush();
    await this.core.exclusive(() => this.core.close(run, outcome, failure));
  }
}
