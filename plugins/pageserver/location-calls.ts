import type { LeaseAuthority } from '../../src/cluster/authority.ts';
import type { Clock } from '../../src/cluster/clock.ts';
import { Cancelled, reasonOf } from './sleep.ts';

export { Cancelled, OperationCancelled, reasonOf, sleepUnless } from './sleep.ts';
import { BackendError } from '../../src/cluster/errors.ts';
import type { CutOverPhase, CutOverProgress } from '../../src/cluster/shard-control.ts';
import { checkLocationConfigResponse } from './checks.ts';
import type { ComputeHook, NotifyOutcome, ShardUpdate } from './compute-hook.ts';
import type { PageserverHttp } from './http-client.ts';
import type { IntentStore } from './intent-store.ts';
import type { ShardIntent } from './intent.ts';
import { CALLS } from './neon-retry.ts';
import type { NodeSet } from './nodes.ts';
import type { ObservedState } from './observed.ts';
import type { LocationConfig, LocationConfigMode } from './wire.ts';
import { haAwareTenantConfig, locationHasSecondaries, normaliseTenantConfig, type TenantConfig } from '../../src/domain/storage/tenant-config.ts';

/** What a reconcile is built from. */
export interface ReconcileDeps {
  clock: Clock;
  http: PageserverHttp;
  hook: ComputeHook;
  intents: IntentStore;
  observed: ObservedState;
  nodes: NodeSet;
  log: { info(obj: object, msg?: string): void; warn(obj: object, msg?: string): void };
  /** neon:C3 defaults outside drains and fills. */
  warmup: { timeoutMs: number; requestTimeoutMs: number };
  /** ha:L8: whether this replica leads (background reconcile passes run only then). Absent: always. */
  mayAct?: () => boolean;
  /** ha:L9: the authority a reconcile is started under (the caller's run, else the leader's epoch); it keeps it to its end. Absent: none. */
  authority?: () => LeaseAuthority;
}

/** A reconcile that failed. `issued`: a new generation had been issued to the attached node before it failed (neon:C10). */
export class ReconcileFailure extends BackendError {
  constructor(
    message: string,
    readonly shardId: string,
    readonly issued: boolean,
    readonly phase: CutOverPhase | null,
    override readonly cause: unknown,
    readonly cancelled = false,
  ) {
    super(cause instanceof BackendError ? cause.code : 'Transient', message, { kind: 'shard', id: shardId });
  }
}

/** The state of one reconcile run. */
export class ReconcileRun {
  /** A generation was issued in this run (neon:C4 or a direct attach). */
  issued = false;
  phase: CutOverPhase | null = null;
  readonly notes: string[] = [];

  constructor(
    /** Ends everything: calls in flight and waits. */
    readonly cancel: AbortSignal,
    /** An operation's cancel: ends the waits of neon:C6 and neon:C7 only. */
    readonly soft: AbortSignal | undefined,
    private readonly onProgress: ((p: CutOverProgress) => void) | undefined,
  ) {}

  progress(phase: CutOverPhase, description: string, nodeId: string | null): void {
    this.phase = phase;
    this.onProgress?.({ phase, description, nodeId });
  }

  checkCancelled(): void {
    if (this.cancel.aborted) throw new Cancelled(reasonOf(this.cancel));
  }
}

/** neon:W11: the config a location of the shard gets in `mode` (Neon's `attached_location_conf` / `secondary_location_conf`); null while unknown. */
function wantedTenantConf(shard: ShardIntent, mode: LocationConfigMode): TenantConfig | null {
  if (shard.tenantConfig === null) return null;
  return haAwareTenantConfig(shard.tenantConfig, locationHasSecondaries(mode, shard.secondaryCount, shard.secondaryNodeIds.length));
}

export const confKey = (conf: Record<string, unknown>) => JSON.stringify(normaliseTenantConfig(conf));

/** Observed holds the config the shard's location there should have (an unknown observed config counts as holding it). */
export function confHeld(deps: ReconcileDeps, shard: ShardIntent, nodeId: string): boolean {
  const o = deps.observed.get(shard.id, nodeId);
  if (o === undefined || o === 'unknown' || o.conf === undefined) return true;
  const wanted = wantedTenantConf(shard, o.mode);
  return wanted === null || o.conf === confKey(wanted);
}

/** neon:W10: nothing is sent for a tenant whose config is unknown (its pageservers were unreachable at start-up). */
class TenantConfigUnknown extends BackendError {
  constructor(shard: ShardIntent) {
    super(
      'Unavailable',
      `tenant ${shard.tenantId}'s config is unknown (its pageservers were unreachable): nothing is sent for shard ${shard.id} until it is read`,
      {
        kind: 'shard',
        id: shard.id,
      },
    );
  }
}

function locationBody(shard: ShardIntent, mode: LocationConfigMode, generation: number | null): LocationConfig {
  const conf = mode === 'Detached' ? {} : wantedTenantConf(shard, mode);
  if (conf === null) throw new TenantConfigUnknown(shard);
  return {
    mode,
    generation,
    secondary_conf: mode === 'Secondary' ? { warm: true } : null,
    shard_number: shard.shardNumber,
    shard_count: shard.shardCount,
    shard_stripe_size: shard.stripeSize,
    tenant_conf: conf,
  };
}

/**
 * `PUT /v1/tenant/:id/location_config` as Neon's `Reconciler::location_config` does it
 * (neon:C1): the observed location is unknown while the call runs and after a failure; a
 * detach of an unavailable node is skipped (the node's activation cleans it up later).
 */
export async function putLocation(
  deps: ReconcileDeps,
  run: ReconcileRun,
  shard: ShardIntent,
  nodeId: string,
  mode: LocationConfigMode,
  generation: number | null,
  query: { flushMs?: number; lazy?: boolean } = {},
): Promise<void> {
  const node = deps.nodes.get(nodeId);
  if (!node || !deps.nodes.available(nodeId)) {
    if (mode === 'Detached') return;
    throw new BackendError('Unavailable', `pageserver ${nodeId} is ${node ? 'OFFLINE' : 'not registered'}: cannot set ${mode} for shard ${shard.id}`, {
      kind: 'node',
      id: nodeId,
    });
  }
  run.checkCancelled();
  const body = locationBody(shard, mode, generation);
  deps.observed.set(shard.id, nodeId, 'unknown');
  const params = new URLSearchParams();
  if (query.flushMs !== undefined) params.set('flush_ms', String(query.flushMs));
  if (query.lazy) params.set('lazy', 'true');
  const qs = params.size ? `?${params}` : '';
  const r = await deps.http.request(node, 'PUT', `/v1/tenant/${shard.id}/location_config${qs}`, {
    body,
    check: checkLocationConfigResponse,
    ...CALLS.locationConfig,
    signal: run.cancel,
  });
  if (r.attempts > 1) run.notes.push(`retried: PUT location_config ${mode} on node ${nodeId} took ${r.attempts} attempts (${r.failures.join(', ')})`);
  if (mode === 'Detached') deps.observed.delete(shard.id, nodeId);
  else deps.observed.set(shard.id, nodeId, { mode, generation, conf: confKey(body.tenant_conf) });
}

/** One compute notification for the shard's intended attached node (neon:C12). */
export function notifyCompute(deps: ReconcileDeps, shard: ShardIntent, signal?: AbortSignal): Promise<NotifyOutcome> {
  return deps.hook.notify(shardUpdateOf(shard), signal);
}

/** What the compute hook is told of a shard: its intended attached node. */
export function shardUpdateOf(shard: ShardIntent): ShardUpdate {
  return {
    tenantId: shard.tenantId,
    shardNumber: shard.shardNumber,
    shardCount: shard.shardCount,
    stripeSize: shard.stripeSize,
    nodeId: shard.attachedNodeId,
    preferredZone: shard.preferredZone,
  };
}

export const observedAs = (deps: ReconcileDeps, shardId: string, nodeId: string, mode: LocationConfigMode, generation?: number | null) => {
  const o = deps.observed.get(shardId, nodeId);
  return o !== undefined && o !== 'unknown' && o.mode === mode && (generation === undefined || o.generation === generation);
};
