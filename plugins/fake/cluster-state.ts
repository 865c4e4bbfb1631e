import { BackendError, notFound } from '../../src/cluster/errors.ts';
import type { ClusterNode, ClusterShard, ClusterVm } from '../../src/cluster/types.ts';
import type { SecondaryLagTable } from './secondary-lag.ts';
import { compareNatural, compareNodeIds, compareShards } from '../../src/domain/compare.ts';
import { HOSTNAME_LABEL, MAINTENANCE_STRATEGY_LABEL, ZONE_LABEL } from '../../src/domain/labels.ts';
import { applyStrategyLabel } from './strategy-label.ts';
import type { StateFile } from './state-file.ts';
import { shardIdOf, type Topology } from './topology.ts';

/** Labels every Kubernetes node carries, derived so a topology need not spell them out. */
function wellKnownLabels(node: Topology['nodes'][number], name: string): Record<string, string> {
  const labels: Record<string, string> = { [HOSTNAME_LABEL]: name };
  if (node.zone) labels[ZONE_LABEL] = node.zone;
  for (const role of node.roles) labels[`node-role.kubernetes.io/${role}`] = 'true';
  return { ...labels, ...node.labels };
}

/** The simulated cluster's records, keyed by id and kept in id order for stable listings. */
export class ClusterState {
  readonly nodes = new Map<string, ClusterNode>();
  readonly vms = new Map<string, ClusterVm>();
  readonly shards = new Map<string, ClusterShard>();
  /** What a fully warm secondary of each shard holds. */
  readonly shardSizes = new Map<string, number>();
  private vmOrder: ClusterVm[] = [];
  private shardOrder: ClusterShard[] = [];

  /**
   * The VMs in the listing order (`compareNatural` of ids), as references into the state:
   * sorted once, not per read. The set of records is fixed once built (actions change
   * records in place), so a change of size is the only reason to sort again.
   */
  vmsInListingOrder(): readonly ClusterVm[] {
    if (this.vmOrder.length !== this.vms.size) this.vmOrder = [...this.vms.values()].sort((a, b) => compareNatural(a.id, b.id));
    return this.vmOrder;
  }

  /** The shards in the listing order (`compareShards`), as `vmsInListingOrder`. */
  shardsInListingOrder(): readonly ClusterShard[] {
    if (this.shardOrder.length !== this.shards.size) this.shardOrder = [...this.shards.values()].sort(compareShards);
    return this.shardOrder;
  }

  static fromTopology(topology: Topology, lag: SecondaryLagTable): ClusterState {
    const state = new ClusterState();
    state.build(topology, lag);
    return state;
  }

  /** The records of a state file, which were written in id order (the file's objects are owned from here on). */
  static fromSaved(saved: StateFile): ClusterState {
    const state = new ClusterState();
    for (const node of saved.nodes) state.nodes.set(node.id, node);
    for (const vm of saved.vms) state.vms.set(vm.id, vm);
    for (const { sizeBytes, ...shard } of saved.shards) {
      state.shards.set(shard.id, shard);
      state.shardSizes.set(shard.id, sizeBytes);
    }
    return state;
  }

  private build(topology: Topology, lag: SecondaryLagTable): void {
    for (const n of [...topology.nodes].sort((a, b) => compareNodeIds(a.id, b.id))) {
      const name = n.name ?? `node-${n.id}`;
      this.nodes.set(n.id, { ...n, name, roles: [...n.roles], labels: wellKnownLabels(n, name), bootId: '1' });
    }
    for (const v of [...topology.vms].sort((a, b) => compareNatural(`${a.namespace}/${a.name}`, `${b.namespace}/${b.name}`))) {
      const id = `${v.namespace}/${v.name}`;
      const status = v.status ?? (v.nodeId === null ? 'Stopped' : 'Running');
      const vm: ClusterVm = { id, ...v, status, labels: { ...v.labels }, liveMigratableReason: v.liveMigratable ? null : v.liveMigratableReason };
      // The label and the field are one fact; a topology may give either.
      applyStrategyLabel(vm, v.maintenanceStrategyLabel ?? v.labels[MAINTENANCE_STRATEGY_LABEL] ?? null);
      this.vms.set(id, vm);
    }
    for (const s of [...topology.shards].sort((a, b) => compareNatural(shardIdOf(a), shardIdOf(b)))) {
      const id = shardIdOf(s);
      const { secondaries, sizeBytes, ...rest } = s;
      this.shards.set(id, { id, ...rest, secondaryNodeIds: secondaries.map((x) => x.nodeId) });
      this.shardSizes.set(id, sizeBytes);
      for (const sec of secondaries) {
        lag.set(id, sec.nodeId, {
          bytesTotal: Math.max(sizeBytes, sec.lagBytes),
          lagBytes: sec.lagBytes,
          bytesPerSecond: sec.downloadBytesPerSecond,
          heatmapKnown: sec.heatmapKnown,
        });
      }
    }
  }

  node(id: string): ClusterNode {
    const node = this.nodes.get(id);
    if (!node) throw notFound('node', id);
    return node;
  }

  vm(id: string): ClusterVm {
    const vm = this.vms.get(id);
    if (!vm) throw notFound('vm', id);
    return vm;
  }

  shard(id: string): ClusterShard {
    const shard = this.shards.get(id);
    if (!shard) throw notFound('shard', id);
    return shard;
  }

  /** Reads still work on an OFFLINE node; actions touching it do not (contract). */
  requireOnline(nodeId: string): ClusterNode {
    const node = this.node(nodeId);
    if (node.availability === 'OFFLINE') throw new BackendError('Unavailable', `node ${nodeId} is offline`, { kind: 'node', id: nodeId });
    return node;
  }
}
