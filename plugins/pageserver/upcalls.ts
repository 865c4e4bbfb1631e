import { isBackendError } from '../../src/cluster/errors.ts';
import { PluginStoreFencedError } from '../../src/cluster/plugin-store.ts';
import type { NodeRegistration } from '../../src/cluster/shard-control.ts';
import type { IntentStore } from './intent-store.ts';
import type { NodeAvailabilityKeeper } from './node-availability.ts';
import type { NodeSet } from './nodes.ts';
import type { ObservedState } from './observed.ts';
import type { Registration } from './registration.ts';
import type { NodeUpcall } from '../../src/cluster/types.ts';
import type { UpcallAnswer, UpcallHandlers } from './upcall-server.ts';

/** neon:L10: at most this many re-attaches of one node in any window of RE_ATTACH_WINDOW_MS. */
const RE_ATTACH_LIMIT = 10;
const RE_ATTACH_WINDOW_MS = 60_000;
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
      /** neon:L10: every upcall, answered or refused, for the gateway to record (event and audit). */
      record(upcall: NodeUpcall): void;
    },
  ) {}

  /** neon:L10: per node, when its recent re-attaches were answered (a sliding window). */
  private readonly reAttaches = new Map<string, number[]>();

  refused(kind: 'RE_ATTACH' | 'VALIDATE', caller: string, status: number, why: string): void {
    this.deps.record({ kind, nodeId: null, caller, outcome: 'UNAUTHORIZED', status, detail: why });
  }

  /**
   * neon:L10: the re-attach, rate-limited per node (at most RE_ATTACH_LIMIT in any
   * RE_ATTACH_WINDOW_MS: a pageserver in a restart loop, or anyone who reaches the port,
   * cannot bump generations without end; a refused one is answered 429, which a pageserver
   * retries), and recorded with the caller's address.
   */
  async reAttach(request: ReAttachRequest, caller: string): Promise<UpcallAnswer<ReAttachResponse>> {
    const nodeId = String(request.node_id);
    const now = this.deps.now();
    const recent = (this.reAttaches.get(nodeId) ?? []).filter((t) => now - t < RE_ATTACH_WINDOW_MS);
    if (recent.length >= RE_ATTACH_LIMIT) {
      this.reAttaches.set(nodeId, recent);
      const detail = `re-attach of node ${nodeId} rate-limited: ${RE_ATTACH_LIMIT} in the last ${RE_ATTACH_WINDOW_MS / 1000} s`;
      this.deps.record({ kind: 'RE_ATTACH', nodeId, caller, outcome: 'RATE_LIMITED', status: 429, detail });
      return { status: 429, body: { msg: `Too Many Requests: ${detail}; retry later` } };
    }
    let answer: UpcallAnswer<ReAttachResponse>;
    try {
      answer = await this.answerReAttach(request);
    } catch (e) {
      this.deps.record({ kind: 'RE_ATTACH', nodeId, caller, outcome: 'ERROR', status: 500, detail: e instanceof Error ? e.message : String(e) });
      throw e;
    }
    if (answer.status === 200) {
      recent.push(now);
      const tenants = (answer.body as ReAttachResponse).tenants;
      const bumped = tenants.filter((t) => t.gen !== null).length;
      this.deps.record({
        kind: 'RE_ATTACH',
        nodeId,
        caller,
        outcome: 'OK',
        status: 200,
        detail: `${bumped} generation(s) bumped, ${tenants.length} location(s) answered`,
      });
    } else {
      this.deps.record({ kind: 'RE_ATTACH', nodeId, caller, outcome: 'REFUSED', status: answer.status, detail: (answer.body as { msg: string }).msg });
    }
    this.reAttaches.set(nodeId, recent);
    return answer;
  }

  /**
   * `POST /upcall/v1/re-attach`: a tombstoned node is refused (409 with `register`, else
   * 500); `register` is registered first (its refusal fails the re-attach); then, in one
   * transaction, every shard whose generation the node holds gets a new one and is answered
   * `AttachedSingle`, its intended secondaries `Secondary`; shards failed over elsewhere
   * are left out, so the pageserver detaches them. The node is WARMING_UP from now.
   */
  private async answerReAttach(request: ReAttachRequest): Promise<UpcallAnswer<ReAttachResponse>> {
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
  /** Neon's validate body names no node: the registered node listening at the caller's address, when exactly one does. */
  private nodeAt(caller: string): string | null {
    const ip = caller.slice(0, caller.lastIndexOf(':')).replace(/^::ffff:/, '');
    const at = [...this.deps.intents.nodes.values()].filter((n) => n.listenHttpAddr === ip);
    return at.length === 1 ? at[0]!.id : null;
  }

  async validate(request: ValidateRequest, caller: string): Promise<ValidateResponse> {
    // neon:L9: from the database, in the read that checks the lease: never a deposed leader's memory.
    const stored = await this.deps.intents.leaderGenerations(request.tenants.map((t) => t.id));
    const answer = { tenants: request.tenants.map((t) => ({ id: t.id, valid: stored.get(t.id) === t.gen })) };
    const invalid = answer.tenants.filter((t) => !t.valid).length;
    this.deps.record({
      kind: 'VALIDATE',
      nodeId: this.nodeAt(caller),
      caller,
      outcome: 'OK',
      status: 200,
      detail: `${request.tenants.length} generation(s) checked, ${invalid} not valid`,
    });
    return answer;
  }
}
