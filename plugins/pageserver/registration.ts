import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { BackendError } from '../../src/cluster/errors.ts';
import type { NodeRegistration } from '../../src/cluster/shard-control.ts';
import type { IntentStore } from './intent-store.ts';
import type { NodeRecord } from './intent.ts';
import type { NodeRuntime, NodeSet } from './nodes.ts';

/** Whether a host name resolves (injectable: tests decide what resolves). */
export type ResolveHost = (host: string) => Promise<boolean>;

export const resolveWithDns: ResolveHost = async (host) => {
  if (isIP(host)) return true;
  try {
    await lookup(host);
    return true;
  } catch {
    return false;
  }
};

export function registrationOf(r: NodeRecord): NodeRegistration {
  return {
    nodeId: r.id,
    listenHttpAddr: r.listenHttpAddr,
    listenHttpPort: r.listenHttpPort,
    listenHttpsPort: r.listenHttpsPort,
    listenPgAddr: r.listenPgAddr,
    listenPgPort: r.listenPgPort,
    listenGrpcAddr: r.listenGrpcAddr,
    listenGrpcPort: r.listenGrpcPort,
    availabilityZone: r.zone,
  };
}

/** The fields whose change makes a registration of a known id a conflict (neon:L1, Neon's `registration_match`). */
const IDENTITY: { key: keyof NodeRegistration; neon: string }[] = [
  { key: 'listenHttpAddr', neon: 'listen_http_addr' },
  { key: 'listenHttpPort', neon: 'listen_http_port' },
  { key: 'listenPgAddr', neon: 'listen_pg_addr' },
  { key: 'listenPgPort', neon: 'listen_pg_port' },
  { key: 'availabilityZone', neon: 'availability_zone_id' },
];

/**
 * neon:L1 (`Service::node_register`), in Neon's order: a known id registered alike changes
 * nothing, or only its HTTPS / gRPC columns (the Decision: policy and availability kept);
 * a known id with another address or zone is a conflict naming the field; an HTTP address
 * that does not resolve is Unavailable (retry later); only one of the gRPC address and
 * port is refused; a tombstoned id is a conflict. A new node is persisted before use and
 * starts OFFLINE; its first good heartbeat makes it ACTIVE.
 */
export class Registration {
  constructor(
    private readonly deps: {
      intents: IntentStore;
      nodes: NodeSet;
      now(): number;
      resolveHost: ResolveHost;
      log: { info(obj: object, msg?: string): void };
      added(node: NodeRuntime): void;
    },
  ) {}

  async register(r: NodeRegistration): Promise<'created' | 'updated' | 'unchanged'> {
    const { intents, nodes } = this.deps;
    const known = intents.nodes.get(r.nodeId);
    if (known) {
      const was = registrationOf(known);
      const differs = IDENTITY.find((f) => was[f.key] !== r[f.key]);
      if (differs) {
        throw new BackendError(
          'Conflict',
          `node ${r.nodeId} is registered with ${differs.neon} ${JSON.stringify(was[differs.key])}, not ${JSON.stringify(r[differs.key])}`,
          { kind: 'node', id: r.nodeId },
        );
      }
      if (was.listenHttpsPort === r.listenHttpsPort && was.listenGrpcAddr === r.listenGrpcAddr && was.listenGrpcPort === r.listenGrpcPort) return 'unchanged';
      const updated: NodeRecord = { ...known, listenHttpsPort: r.listenHttpsPort, listenGrpcAddr: r.listenGrpcAddr, listenGrpcPort: r.listenGrpcPort };
      await intents.putNode(updated);
      nodes.add(updated, this.deps.now());
      this.deps.log.info({ node: r.nodeId }, `pageserver ${r.nodeId} re-registered with new HTTPS/gRPC listeners`);
      return 'updated';
    }
    if (!(await this.deps.resolveHost(r.listenHttpAddr))) {
      throw new BackendError('Unavailable', `node ${r.nodeId}: listen_http_addr ${JSON.stringify(r.listenHttpAddr)} does not resolve; try again later`, {
        kind: 'node',
        id: r.nodeId,
      });
    }
    if ((r.listenGrpcAddr === null) !== (r.listenGrpcPort === null)) {
      throw new BackendError('Rejected', `node ${r.nodeId}: listen_grpc_addr and listen_grpc_port must be given together`, { kind: 'node', id: r.nodeId });
    }
    if (intents.tombstones.has(r.nodeId)) {
      throw new BackendError('Conflict', `node ${r.nodeId} was deleted (a tombstone holds its id); remove the tombstone to register it again`, {
        kind: 'node',
        id: r.nodeId,
      });
    }
    const record: NodeRecord = {
      id: r.nodeId,
      url: `http://${r.listenHttpAddr.includes(':') ? `[${r.listenHttpAddr}]` : r.listenHttpAddr}:${r.listenHttpPort}`,
      name: `pageserver-${r.nodeId}`,
      zone: r.availabilityZone,
      listenHttpAddr: r.listenHttpAddr,
      listenHttpPort: r.listenHttpPort,
      listenHttpsPort: r.listenHttpsPort,
      listenPgAddr: r.listenPgAddr,
      listenPgPort: r.listenPgPort,
      listenGrpcAddr: r.listenGrpcAddr,
      listenGrpcPort: r.listenGrpcPort,
      cordoned: false,
    };
    await intents.putNode(record);
    this.deps.added(nodes.add(record, this.deps.now()));
    this.deps.log.info({ node: r.nodeId }, `pageserver ${r.nodeId} registered (${record.url}, zone ${record.zone}); OFFLINE until its first good heartbeat`);
    return 'created';
  }
}
