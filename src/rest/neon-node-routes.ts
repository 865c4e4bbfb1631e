/**
 * Neon's node API: listing (neon:L8), drain and fill with their refusals (neon:E1–E4),
 * config (neon:E6), registration (neon:L1), deletes (neon:L4–L6) and tombstones (neon:L7).
 */
import { InvalidInputError, NotFoundError, PreconditionFailedError } from '../domain/errors.ts';
import type { Availability } from '../domain/storage/policy.ts';
import { ACCEPTED, OK, parseJsonBody, type Call, type NeonFacadeDeps, type Reply, type Route } from './neon-route.ts';
import { cancelRefusal, describeOperation, NeonRefusal, startRefusal, type NodeAction } from './neon-errors.ts';
import {
  compareNeonNodeIds,
  neonNodeId,
  nodeConfigureRequestSchema,
  nodeRegisterRequestSchema,
  nodeIdOfNeon,
  toNeonNode,
  toNeonSafety,
  type NeonNode,
  type NeonNodeSafety,
  type NeonNodeShard,
} from './neon-shapes.ts';

const N = '/control/v1/node/:node_id';

export function nodeRoutes(deps: NeonFacadeDeps): Route[] {
  const { storage, backend } = deps;

  async function requireNode(nodeId: string) {
    const node = await backend.getNode(nodeId);
    if (!node) throw new NeonRefusal(404, `Node ${nodeId} not registered`);
    return node;
  }

  /** Lockkeeper's additions to Neon's node object (Neon's clients ignore unknown fields). */
  async function safetyOf(nodeIds: string[]): Promise<(NeonNodeSafety | undefined)[]> {
    if (!deps.remaining) return nodeIds.map(() => undefined);
    return (await deps.remaining.ofNodes(nodeIds)).map(toNeonSafety);
  }

  /** Refusals turned into Neon's (neon:E1–E4): the start's typed error read with what runs. */
  async function start(action: 'drain' | 'fill', { params, meta }: Call): Promise<Reply> {
    const nodeId = params.node_id!;
    try {
      await (action === 'drain' ? storage.startDrain(nodeId, meta) : storage.startFill(nodeId, meta));
      return ACCEPTED;
    } catch (e) {
      throw startRefusal(action, nodeId, e, storage.runningNodeOperations(), storage.policyOf(nodeId));
    }
  }

  /** neon:E4: unknown → 404, not Active → 503 (even an offline node's drain), nothing running → 412. */
  async function cancel(action: 'drain' | 'fill', { params, meta }: Call): Promise<Reply> {
    const nodeId = params.node_id!;
    const node = await requireNode(nodeId);
    if (node.availability === 'OFFLINE') throw new NeonRefusal(503, `Node ${nodeId} is currently unavailable`);
    try {
      await (action === 'drain' ? storage.cancelDrain(nodeId, meta) : storage.cancelFill(nodeId, meta));
      return ACCEPTED;
    } catch (e) {
      throw cancelRefusal(action, nodeId, e);
    }
  }

  /**
   * neon:E6: differing ids → 400; any background operation → 412 (availability included);
   * unknown → 404; scheduling written first; `Offline` fails the node over at once (neon:H8),
   * `Active` activates it (412 when it cannot list its locations), `WarmingUp` from now.
   */
  async function configure({ params, body, meta }: Call): Promise<Reply> {
    const nodeId = params.node_id!;
    const request = parseJsonBody(body, nodeConfigureRequestSchema);
    if (nodeIdOfNeon(String(request.node_id), backend.nodeAliases) !== nodeId) {
      throw new InvalidInputError('node_id', String(request.node_id), `node_id ${request.node_id} in the body differs from node ${nodeId} in the path`);
    }
    const running = storage.runningNodeOperations();
    if (running.length) throw new NeonRefusal(412, `Ongoing background operation forbids configuring: ${describeOperation(running[0]!)}`);
    const node = await requireNode(nodeId);
    if (request.scheduling != null) await storage.configureNode(nodeId, request.scheduling, meta);
    if (request.availability != null && request.availability !== node.availability) await commandAvailability(nodeId, request.availability, meta);
    return OK;
  }

  async function commandAvailability(nodeId: string, availability: Availability, meta: Call['meta']): Promise<void> {
    if (!deps.failover) throw new PreconditionFailedError('NOT_SUPPORTED', 'this backend does not take a commanded availability');
    try {
      await deps.failover.setNodeAvailability(nodeId, availability, meta);
    } catch (e) {
      if (e instanceof NotFoundError) throw new NeonRefusal(404, `Node ${nodeId} not registered`);
      if (availability === 'ACTIVE' && !(e instanceof PreconditionFailedError)) {
        throw new NeonRefusal(412, `Failed to query node location configs, cannot activate (${e instanceof Error ? e.message : String(e)})`);
      }
      throw e;
    }
  }

  function needDeletes() {
    if (!deps.deletes) throw new PreconditionFailedError('NOT_SUPPORTED', 'this backend does not delete nodes');
    return deps.deletes;
  }

  function needRegistry() {
    if (!backend.registry) throw new PreconditionFailedError('NOT_SUPPORTED', 'nodes of this backend do not register');
    return backend.registry;
  }

  const deleteRefusal = (nodeId: string, e: unknown) => startRefusal('delete', nodeId, e, storage.runningNodeOperations(), storage.policyOf(nodeId));

  const drainOrFill = (action: 'drain' | 'fill'): Route => ({
    pattern: `${N}/${action}`,
    methods: { PUT: (c) => start(action, c), DELETE: (c) => cancel(action, c) },
    scopes: { PUT: 'operator', DELETE: 'operator' },
  });

  return [
    {
      pattern: '/control/v1/node',
      methods: {
        GET: async () => {
          const neon = (id: string) => backend.nodeAliases?.external(id) ?? id;
          const nodes = (await backend.listNodes()).sort((a, b) => compareNeonNodeIds(neon(a.id), neon(b.id)));
          const safety = await safetyOf(nodes.map((n) => n.id));
          return { status: 200, body: nodes.map((n, i) => ({ ...toNeonNode(n, storage.policyOf(n.id), backend.nodeAliases), ...safety[i] })) };
        },
        /** neon:L1: 200 null for a new or an unchanged registration. */
        POST: async ({ body }) => {
          const r = parseJsonBody(body, nodeRegisterRequestSchema);
          if ((r.listen_grpc_addr == null) !== (r.listen_grpc_port == null)) {
            throw new InvalidInputError('listen_grpc_addr', String(r.listen_grpc_addr ?? ''), 'listen_grpc_addr and listen_grpc_port must be given together');
          }
          await needRegistry().register({
            nodeId: String(r.node_id),
            listenHttpAddr: r.listen_http_addr,
            listenHttpPort: r.listen_http_port,
            listenHttpsPort: r.listen_https_port ?? null,
            listenPgAddr: r.listen_pg_addr,
            listenPgPort: r.listen_pg_port,
            listenGrpcAddr: r.listen_grpc_addr ?? null,
            listenGrpcPort: r.listen_grpc_port ?? null,
            availabilityZone: r.availability_zone_id,
          });
          return OK;
        },
      },
    },
    {
      pattern: N,
      methods: {
        GET: async ({ params }) => {
          const nodeId = params.node_id!;
          const node = await requireNode(nodeId);
          const [safety] = await safetyOf([nodeId]);
          return { status: 200, body: { ...toNeonNode(node, storage.policyOf(nodeId), backend.nodeAliases), ...safety } };
        },
        /** neon:L6 (deprecated, still routed): synchronous; an unknown node is a retry (200). */
        DELETE: async ({ params, meta }) => {
          await needDeletes().deleteNow(params.node_id!, meta);
          return OK;
        },
      },
    },
    drainOrFill('drain'),
    drainOrFill('fill'),
    { pattern: `${N}/config`, methods: { PUT: configure } },
    {
      pattern: `${N}/delete`,
      methods: {
        /** neon:L4: 200 null when accepted. */
        PUT: async ({ params, query, meta }) => {
          const nodeId = params.node_id!;
          const force = query.get('force') === 'true';
          try {
            await needDeletes().startDelete(nodeId, { force }, meta);
          } catch (e) {
            throw deleteRefusal(nodeId, e);
          }
          return OK;
        },
        /** neon:L5: 202 null; no availability check (unlike neon:E4). */
        DELETE: async ({ params, meta }) => {
          const nodeId = params.node_id!;
          try {
            await needDeletes().cancelDelete(nodeId, meta);
          } catch (e) {
            throw cancelRefusal('delete' as NodeAction, nodeId, e);
          }
          return ACCEPTED;
        },
      },
    },
    {
      pattern: `${N}/shards`,
      methods: {
        GET: async ({ params }) => {
          const nodeId = params.node_id!;
          await requireNode(nodeId);
          const [attached, secondary] = await Promise.all([backend.listShards({ attachedNodeId: nodeId }), backend.listShards({ secondaryNodeId: nodeId })]);
          // What we observe is what we intend: the backend reports one set of locations.
          const shards: NeonNodeShard[] = [
            ...attached.map((s) => ({ tenant_shard_id: s.id, is_observed_secondary: false, is_intended_secondary: false })),
            ...secondary.map((s) => ({ tenant_shard_id: s.id, is_observed_secondary: true, is_intended_secondary: true })),
          ].sort((a, b) => (a.tenant_shard_id < b.tenant_shard_id ? -1 : a.tenant_shard_id > b.tenant_shard_id ? 1 : 0));
          return { status: 200, body: { node_id: neonNodeId(nodeId, backend.nodeAliases), shards } };
        },
      },
    },
    {
      pattern: '/debug/v1/tombstone',
      methods: {
        GET: async () => {
          const list = await needRegistry().tombstones();
          const body: NeonNode[] = list
            .map((r) => ({
              id: neonNodeId(r.nodeId),
              availability: 'Offline',
              scheduling: 'Deleting',
              availability_zone_id: r.availabilityZone,
              listen_http_addr: r.listenHttpAddr,
              listen_http_port: r.listenHttpPort,
              listen_https_port: r.listenHttpsPort,
              listen_pg_addr: r.listenPgAddr,
              listen_pg_port: r.listenPgPort,
              listen_grpc_addr: r.listenGrpcAddr,
              listen_grpc_port: r.listenGrpcPort,
            }))
            .sort((a, b) => compareNeonNodeIds(String(a.id), String(b.id)));
          return { status: 200, body };
        },
      },
    },
    {
      pattern: '/debug/v1/tombstone/:node_id',
      methods: {
        DELETE: async ({ params }) => {
          await needRegistry().removeTombstone(params.node_id!);
          return OK;
        },
      },
    },
    {
      pattern: '/debug/v1/node/:node_id/drop',
      methods: {
        POST: async ({ params }) => {
          try {
            await needDeletes().dropNode(params.node_id!);
          } catch (e) {
            if (e instanceof NotFoundError) throw new NeonRefusal(404, `Node ${params.node_id} not registered`);
            throw e;
          }
          return OK;
        },
      },
    },
  ];
}
