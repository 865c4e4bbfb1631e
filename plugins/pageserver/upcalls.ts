import { isBackendError } from '../../src/cluster/errors.ts';
import { PluginStoreFencedError } from '../../src/cluster/plugin-store.ts';
import type { NodeRegistration } from '../../src/cluster/shard-control.ts';
import type { IntentStore } from './intent-store.ts';
import type { NodeAvailabilityKeeper } from './node-availability.ts';
import type { NodeSet } from './nodes.ts';
import type { ObservedState } from './observed.ts';
import type { Registration } from './registration.ts';
import type { UpcallAnswer, UpcallHandlers } from './upcall-server.ts';
import type { NodeRegisterRequest, ReAttachRequest, ReAttachResponse, ValidateRequest, ValidateResponse } from './wire.ts';

/** The HTTP status of a registration refusal inside a re-attach (as the REST facade answers it). */
function statusOf(e: unknown): number {
  if (!isBackendError(e)) return 500;
  return { Conflict: 409, Unavailable: 503, Rejected: 400, NotFound: 404, Transient: 500 }[e.code];
}

function registrationFrom(nodeId: string, r: NodeRegisterRequest): NodeRegistration {
  return {
    nodeId,
    listenHttpAddr: r.listen_http_addr,
    listenHttpPort: r.listen_http_port,
    listenHttpsPort: r.listen_https_port ?? null,
    listenPgAddr: r.listen_pg_addr,
    listenPgPort: r.listen_pg_port,
    listenGrpcAddr: r.listen_grpc_addr ?? null,
    listenGrpcPort: r.listen_grpc_port ?? null,
    availabilityZone: r.availability_zone_id,
  };
}

const REGISTER_FIELDS: [keyof NodeRegisterRequest, 'string' | 'port'][] = [
  ['listen_pg_addr', 'string'],
  ['listen_pg_port', 'port'],
  ['listen_http_addr', 'string'],
  ['listen_http_port', 'port'],
  ['availability_zone_id', 'string'],
];

/** What is wrong with a `register` object, or null. */
function invalidRegister(r: Record<string, unknown>): string | null {
  for (const [key, kind] of REGISTER_FIELDS) {
    const v = r[key];
    if (kind === 'string' ? typeof v !== 'string' || v === '' : !Number.isInteger(v) || (v as number) < 1 || (v as number) > 65535)
      return `${key} is missing or invalid`;
  }
  for (const key of ['listen_https_port', 'listen_grpc_port'] as const) {
    const v = r[key];
    if (v !== undefined && v !== null && (!Number.isInteger(v) || (v as number) < 1 || (v as number) > 65535)) return `${key} is not a port`;
  }
  if (r.listen_grpc_addr !== undefined && r.listen_grpc_addr !== null && typeof r.listen_grpc_addr !== 'string') return 'listen_grpc_addr is not a string';
  return null;
}

/**
 * The controller side of the pageservers' upcalls: re-attach (neon:L2, neon:L3, neon:H6)
 * and validate.
 */
export class Upcalls implements UpcallHandlers {
  constructor(
    private readonly deps: {
      intents: IntentStore;
      nodes: NodeSet;
      observed: ObservedState;
      availability: NodeAvailabilityKeeper;
      registration: Registration;
      now(): number;
      log: { info(obj: object, msg?: string): void };
      /** Resolves once the gateway has acted on the re-attach (its policy change recorded, neon:L3). */
      reattached(nodeId: string): Promise<void>;
    },
  ) {}

  /**
   * `POST /upcall/v1/re-attach`: a tombstoned node is refused (409 with `register`, else
   * 500); `register` is registered first (its refusal fails the re-attach); then, in one
   * transaction, every shard whose generation the node holds gets a new one and is answered
   * `AttachedSingle`, its intended secondaries `Secondary`; shards failed over elsewhere
   * are left out, so the pageserver detaches them. The node is WARMING_UP from now.
   */
  async reAttach(request: ReAttachRequest): Promise<UpcallAnswer<ReAttachResponse>> {
    const { intents, nodes, observed } = this.deps;
    const nodeId = String(request.node_id);
    if (intents.tombstones.has(nodeId)) {
      const msg = `re-attach: node ${nodeId} was deleted (tombstone)`;
      return request.register ? { status: 409, body: { msg: `Conflict: ${msg}` } } : { status: 500, body: { msg } };
    }
    if (request.register) {
      const problem = invalidRegister(request.register as unknown as Record<string, unknown>);
      if (problem) return { status: 400, body: { msg: `re-attach: register: ${problem}` } };
      try {
        await this.deps.registration.register(registrationFrom(nodeId, request.register));
      } catch (e) {
        return { status: statusOf(e), body: { msg: `re-attach: registration of node ${nodeId} refused: ${e instanceof Error ? e.message : String(e)}` } };
      }
    }
    const node = nodes.get(nodeId);
    if (!node) return { status: 404, body: { msg: `re-attach: node ${nodeId} is not one of this controller's pageservers` } };
    this.deps.availability.warmingUp(node, this.deps.now());
    let bumped: Map<string, number>;
    try {
      bumped = await intents.reAttach(nodeId);
    } catch (e) {
      // ha:L8: a deposed leader issued no generation (the fence refused it, ha:L3): 503, the pageserver retries and reaches the leader.
      if (e instanceof PluginStoreFencedError) return { status: 503, body: { msg: `Service Unavailable: re-attach of node ${nodeId}: ${e.message}; retry` } };
      throw e;
    }
    const tenants: ReAttachResponse['tenants'] = [];
    for (const shard of intents.sortedShards()) {
      const gen = bumped.get(shard.id);
      if (gen !== undefined) {
        tenants.push({ id: shard.id, gen, mode: 'AttachedSingle' });
        observed.set(shard.id, nodeId, { mode: 'AttachedSingle', generation: gen });
      } else if (shard.secondaryNodeIds.includes(nodeId)) {
        tenants.push({ id: shard.id, gen: null, mode: 'Secondary' });
        observed.set(shard.id, nodeId, { mode: 'Secondary', generation: null });
      } else {
        observed.delete(shard.id, nodeId);
      }
    }
    this.deps.log.info({ node: nodeId, shards: tenants.length }, `pageserver ${nodeId} re-attached with ${tenants.length} shard location(s)`);
    await this.deps.reattached(nodeId);
    return { status: 200, body: { tenants } };
  }

  /**
   * `POST /upcall/v1/validate`: a generation is valid only if it is the one last issued for
   * the shard. Older ones are stale; newer ones were never issued by this controller.
   */
  validate(request: ValidateRequest): ValidateResponse {
    return { tenants: request.tenants.map((t) => ({ id: t.id, valid: this.deps.intents.shards.get(t.id)?.generation === t.gen })) };
  }
}
