import type { ClusterNode } from '../../src/cluster/types.ts';
import { LISTEN_LABELS } from '../../src/domain/labels.ts';
import type { HeartbeatState } from './heartbeater.ts';
import type { HttpTarget } from './http-client.ts';
import type { NodeRecord } from './intent.ts';

/** A registered pageserver as the controller runs it: its record and what heartbeats say. */
export interface NodeRuntime extends HttpTarget {
  record: NodeRecord;
  numericId: number;
  hb: HeartbeatState;
  /** Heartbeats sent before this instant do not end WARMING_UP (they may have reached the old process). */
  reattachedAt: number;
}

const byNumericId = (a: NodeRuntime, b: NodeRuntime) => a.numericId - b.numericId;

/** The registered pageservers (tombstoned ones are not here). New ones start OFFLINE (neon:H4). */
export class NodeSet {
  private readonly nodes = new Map<string, NodeRuntime>();

  add(record: NodeRecord, now: number): NodeRuntime {
    const existing = this.nodes.get(record.id);
    if (existing) {
      existing.record = record;
      existing.url = record.url;
      return existing;
    }
    const node: NodeRuntime = {
      nodeId: record.id,
      url: record.url,
      record,
      numericId: Number(record.id),
      hb: { availability: 'OFFLINE', lastOkAt: null, warmingSince: null },
      reattachedAt: now,
    };
    this.nodes.set(record.id, node);
    return node;
  }

  remove(id: string): void {
    this.nodes.delete(id);
  }

  get(id: string): NodeRuntime | undefined {
    return this.nodes.get(id);
  }

  all(): NodeRuntime[] {
    return [...this.nodes.values()].sort(byNumericId);
  }

  ids(): string[] {
    return this.all().map((n) => n.nodeId);
  }

  get size(): number {
    return this.nodes.size;
  }

  /** Neon's `is_available`: ACTIVE or WARMING_UP; calls to an OFFLINE node are not made. */
  available(id: string): boolean {
    const n = this.nodes.get(id);
    return n !== undefined && n.hb.availability !== 'OFFLINE';
  }
}

export function toClusterNode(n: NodeRuntime): ClusterNode {
  const r = n.record;
  const labels: Record<string, string> = {
    [LISTEN_LABELS.httpAddr]: r.listenHttpAddr,
    [LISTEN_LABELS.httpPort]: String(r.listenHttpPort),
    [LISTEN_LABELS.pgAddr]: r.listenPgAddr,
    [LISTEN_LABELS.pgPort]: String(r.listenPgPort),
  };
  if (r.listenHttpsPort !== null) labels[LISTEN_LABELS.httpsPort] = String(r.listenHttpsPort);
  if (r.listenGrpcAddr !== null) labels[LISTEN_LABELS.grpcAddr] = r.listenGrpcAddr;
  if (r.listenGrpcPort !== null) labels[LISTEN_LABELS.grpcPort] = String(r.listenGrpcPort);
  return { id: n.nodeId, name: r.name, zone: r.zone, roles: ['storage'], availability: n.hb.availability, cordoned: r.cordoned, labels };
}
