import type { BackendCapabilities, ClusterBackend, ShardFilter, VmFilter } from '../../src/cluster/backend.ts';
import type { Clock } from '../../src/cluster/clock.ts';
import { BackendError } from '../../src/cluster/errors.ts';
import type { CancelledMigration, MaintenanceDelegate, NodeMaintenanceBackend, NodeMaintenanceMark } from '../../src/cluster/node-maintenance.ts';
import type { PluginContext } from '../../src/cluster/plugin.ts';
import type { BackendSnapshot } from '../../src/cluster/rehearsal.ts';
import type {
  ClusterEventListener,
  ClusterNode,
  ClusterShard,
  ClusterVm,
  RunStrategy,
  SecondaryStatus,
  VmMaintenanceTracking,
} from '../../src/cluster/types.ts';
import { compareNodeIds } from '../../src/domain/compare.ts';
import { KubeApi } from './api.ts';
import { ClusterCache } from './cache.ts';
import { RESOURCES, type KubeClients } from './kube.ts';
import { toClusterNode } from './mapping.ts';
import { harvesterDelegate } from './harvester.ts';
import { Migrations } from './migrations.ts';
import { NodeDownController } from './node-down.ts';
import { NodeState } from './node-state.ts';
import { PodDrain } from './pod-drain.ts';
import type { KubevirtOptions } from './options.ts';
import { VmActions } from './vm-actions.ts';
import { VmReads } from './vms.ts';
import { Volumes } from './volumes.ts';
import { takeSnapshot } from './snapshot.ts';

type Log = PluginContext['log'];

const rejectShards = () => Promise.reject(new BackendError('Rejected', 'the kubevirt backend serves no tenant shards'));

/**
 * Kubernetes + KubeVirt (+ Longhorn) behind the cluster interface: a facade over the
 * informer cache and waiters (cache.ts), live reads (vms.ts), VM actions (vm-actions.ts),
 * migrations (migrations.ts), volumes (volumes.ts), node writes (node-state.ts), the pod
 * drain (pod-drain.ts), Harvester delegation (harvester.ts) and node-down handling
 * (node-down.ts). See README.md beside this file.
 */
export class KubevirtBackend implements ClusterBackend {
  readonly name = 'kubevirt';
  readonly capabilities: BackendCapabilities = { vms: true, shards: false };
  private readonly api: KubeApi;
  private readonly cache: ClusterCache;
  private readonly volumes: Volumes;
  private readonly reads: VmReads;
  private readonly actions: VmActions;
  private readonly migrations: Migrations;
  private readonly nodeState: NodeState;
  private delegate: MaintenanceDelegate | null = null;
  private nodeDown: NodeDownController | null = null;
  readonly podDrain: PodDrain;
  readonly nodeMaintenance: NodeMaintenanceBackend;

  constructor(
    k: KubeClients,
    private readonly options: KubevirtOptions,
    private readonly clock: Clock,
    private readonly log: Log,
    /** ha:L8: the gateway's leadership; background work (node-down handling) runs only on the leader. */
    private readonly leadership: Pick<PluginContext, 'mayAct' | 'onLeaderChange'> = {},
  ) {
    this.api = new KubeApi(k, options);
    this.cache = new ClusterCache(this.api, options, clock, log);
    this.volumes = new Volumes(this.api, this.cache, this.capabilities, options.longhornNamespace, log);
    this.reads = new VmReads(this.api, this.cache, this.volumes);
    this.actions = new VmActions(this.api, this.cache, this.reads, options, clock, log);
    this.migrations = new Migrations(this.api, this.cache, this.reads, options, clock, log);
    this.nodeState = new NodeState(this.api, this.cache, options, clock, log);
    this.podDrain = new PodDrain(this.api, log);
    const delegate = () => this.delegate;
    this.nodeMaintenance = {
      markMaintenance: (id: string, mark: NodeMaintenanceMark, o: { forced: boolean }) => this.nodeState.markMaintenance(id, mark, o),
      clearMaintenance: (id: string) => this.nodeState.clearMaintenance(id),
      cancelMigrations: (id: string): Promise<CancelledMigration[]> => this.migrations.cancelMigrations(id),
      get delegate() {
        return delegate();
      },
    };
  }

  /** Starts the watches and waits for their first lists (failing fast on, e.g., missing RBAC). */
  async start(): Promise<void> {
    try {
      await this.cache.start();
      // Whether Longhorn is installed is known before the first plan (and re-checked on every VM read).
      await this.volumes.longhornReplicas();
      await this.podDrain.discover();
      // k8s:H9: detected once, at start (or forced by the config).
      this.delegate = await harvesterDelegate(this.api, this.options.harvester);
    } catch (e) {
      await this.close();
      throw e;
    }
    this.log.info(
      { mode: this.delegate ? 'delegate' : 'act' },
      this.delegate
        ? `kubevirt: maintenance is delegated to Harvester's controllers (${this.delegate.reason})`
        : 'kubevirt: Lockkeeper does maintenance itself (no Harvester)',
    );
    await this.listVms().catch((e: unknown) => this.log.warn({ err: e }, 'kubevirt: reading volumes at start failed'));
    this.cache.prime();
    if (this.options.nodeDown.enable) {
      // k8s:U7: not on Harvester clusters, where Harvester's own node-down controller acts.
      if (this.delegate) this.log.warn({}, "kubevirt: nodeDown.enable is ignored: on a Harvester cluster Harvester's node-down controller acts");
      else {
        this.nodeDown = new NodeDownController(this.api, this.cache, this.options.nodeDown, this.clock, this.log, this.leadership);
        this.nodeDown.start();
      }
    }
  }

  /** k8s:U7 (Decision): a person confirms that a node that stopped reporting is down; stage 2 may then run. */
  async confirmNodeDown(nodeId: string): Promise<void> {
    if (!this.nodeDown) {
      throw new BackendError(
        'Rejected',
        this.delegate
          ? "node-down handling is Harvester's on this cluster (k8s:H9): confirm with Harvester"
          : 'node-down handling is off: set the kubevirt plugin option nodeDown.enable',
        { kind: 'node', id: nodeId },
      );
    }
    await this.nodeDown.confirm(nodeId);
  }

  // --- nodes

  async listNodes(): Promise<ClusterNode[]> {
    const { items } = await this.api.listRaw(RESOURCES.nodes, undefined);
    return items.map(toClusterNode).sort((a, b) => compareNodeIds(a.id, b.id));
  }

  getNode(id: string): Promise<ClusterNode | null> {
    return this.reads.getNode(id);
  }

  async getNodes(ids: readonly string[]): Promise<(ClusterNode | null)[]> {
    if (ids.length === 0) return [];
    const byId = new Map((await this.listNodes()).map((n) => [n.id, n]));
    return ids.map((id) => (byId.has(id) ? structuredClone(byId.get(id)!) : null));
  }

  cordonNode(id: string): Promise<void> {
    return this.nodeState.setCordoned(id, true);
  }

  uncordonNode(id: string): Promise<void> {
    return this.nodeState.setCordoned(id, false);
  }

  // --- VMs

  listVms(filter: VmFilter = {}): Promise<ClusterVm[]> {
    return this.reads.listVms(filter);
  }

  getVm(id: string): Promise<ClusterVm | null> {
    return this.reads.getVm(id);
  }

  async getVms(ids: readonly string[]): Promise<(ClusterVm | null)[]> {
    if (ids.length === 0) return [];
    const byId = new Map((await this.listVms()).map((v) => [v.id, v]));
    return ids.map((id) => (byId.has(id) ? structuredClone(byId.get(id)!) : null));
  }

  stopVm(id: string): Promise<void> {
    return this.actions.stopVm(id);
  }

  startVm(id: string, options: { runStrategy: RunStrategy; nodeId?: string }): Promise<void> {
    return this.actions.startVm(id, options);
  }

  migrateVm(id: string, options: { fromNodeId: string; toNodeId?: string }): Promise<void> {
    return this.migrations.migrateVm(id, options);
  }

  setVmMaintenanceStrategyLabel(id: string, value: string | null): Promise<void> {
    return this.actions.setVmMaintenanceStrategyLabel(id, value);
  }

  setVmTracking(id: string, tracking: VmMaintenanceTracking | null): Promise<void> {
    return this.actions.setVmTracking(id, tracking);
  }

  // --- shards: not served

  listShards(_filter?: ShardFilter): Promise<ClusterShard[]> {
    return rejectShards();
  }
  getShard(_id: string): Promise<ClusterShard | null> {
    return rejectShards();
  }
  getShards(_ids: readonly string[]): Promise<(ClusterShard | null)[]> {
    return rejectShards();
  }
  getSecondaryStatus(_shardId: string, _nodeId: string): Promise<SecondaryStatus> {
    return rejectShards();
  }
  cutOverShard(_id: string, _options: { fromNodeId: string; toNodeId: string }): Promise<void> {
    return rejectShards();
  }

  // --- rehearsal (issue 33)

  /** The cluster as a rehearsal loads it into the simulator (snapshot.ts; JSON, no credentials). */
  async snapshot(): Promise<BackendSnapshot[]> {
    const taken = await takeSnapshot(this.api, this.cache, () => this.volumes.longhornReplicas(), this.options, this.delegate !== null, this.clock.now());
    return [taken];
  }

  // --- events, lifecycle

  watch(listener: ClusterEventListener): () => void {
    return this.cache.events.add(listener);
  }

  /** Watch statistics, for tests of reconnects (see KubevirtCache.watchStats). */
  get watchStats(): { watchesStarted: number; relists: number; seenResourceVersion: number } {
    return this.cache.watchStats;
  }

  /** Node-down reconciles queued or running, 0 without the controller (see NodeDownController.busy); for tests. */
  get nodeDownBusy(): number {
    return this.nodeDown?.busy ?? 0;
  }

  async close(): Promise<void> {
    this.nodeDown?.stop();
    this.cache.close();
  }
}
