import type {
  BackendCapabilities,
  ClusterBackend,
  FaultSettings,
  LatencySettings,
  Page,
  PagePicker,
  ShardFilter,
  SimulationControls,
  VmFilter,
} from '../../src/cluster/backend.ts';
import type { Clock } from '../../src/cluster/clock.ts';
import type { BackendSnapshot } from '../../src/cluster/rehearsal.ts';
import type { FailoverControl } from '../../src/cluster/shard-control.ts';
import { BackendError } from '../../src/cluster/errors.ts';
import type {
  ClusterEventListener,
  ClusterNode,
  ClusterShard,
  ClusterVm,
  RunStrategy,
  SecondaryStatus,
  VmMaintenanceTracking,
} from '../../src/cluster/types.ts';
import { matchesLabels } from '../../src/domain/labels.ts';
import { ClusterState } from './cluster-state.ts';
import { snapshotState, StateSaver } from './durable-state.ts';
import { copyNode, copyShard, copyVm } from './copy.ts';
import { EventHub } from './event-hub.ts';
import { createFailoverControl, setNodeOnlineDeclaringLoss, type AttachCounter } from './failover.ts';
import { FaultInjector } from './faults.ts';
import { latencySpikes, MoveTracker } from './moves.ts';
import { settleMovesAfterCrash } from './moves-after-crash.ts';
import { NodeLifecycle } from './node-lifecycle.ts';
import { setCordoned } from './node-actions.ts';
import { latenciesSchema } from './options.ts';
import type { Runtime } from './runtime.ts';
import { SecondaryLagTable } from './secondary-lag.ts';
import { snapshotOf } from './snapshot.ts';
import * as shards from './shard-actions.ts';
import { ensureDirectoryOf, readStateFile } from './state-file.ts';
import type { Topology } from './topology.ts';
import * as vms from './vm-actions.ts';

/** Everything a SimulatedCluster is built from, already validated (see createSimulatedCluster). */
export interface SimulatedClusterConfig {
  topology: Topology;
  clock: Clock;
  latencies: LatencySettings;
  restartDelayMs: number;
  heartbeatIntervalMs: number;
  secondaryDownloadBytesPerSecond: number;
  seed: number;
  /** See the `workloadLatenciesMs` option; none when absent. */
  workloadLatencies?: Record<string, Partial<LatencySettings>>;
  /** See the `latencySpike` option; none when absent. */
  latencySpike?: { rate: number; factor: number };
  /** Where exceptions thrown by watch listeners go (they never break delivery to the others). */
  onListenerError?: (error: unknown) => void;
  /**
   * The state file (already resolved): loaded instead of `topology` when it exists, written
   * after every change otherwise. See README "Durable state".
   */
  statePath?: string;
}

const matchesVmFilter = (vm: ClusterVm, f: VmFilter) =>
  (f.nodeId === undefined || vm.nodeId === f.nodeId) && (f.namespace === undefined || vm.namespace === f.namespace) && matchesLabels(vm.labels, f.labels ?? {});

const matchesShardFilter = (s: ClusterShard, f: ShardFilter) =>
  (f.attachedNodeId === undefined || s.attachedNodeId === f.attachedNodeId) &&
  (f.secondaryNodeId === undefined || s.secondaryNodeIds.includes(f.secondaryNodeId)) &&
  (f.tenantId === undefined || s.tenantId === f.tenantId);

/**
 * Copies of the records that match, without first copying the whole map into an array: a
 * maintenance lists its node's VMs at every look, and at 10 000 VMs that array was most of a
 * rehearsal sample's garbage (bench rehearsal-scale).
 */
function copiesOfMatches<T>(records: Iterable<T>, matches: (record: T) => boolean, copy: (record: T) => T): T[] {
  const out: T[] = [];
  for (const record of records) if (matches(record)) out.push(copy(record));
  return out;
}

/** A page of a listing kept in order: only the rows picked are copied. */
function pageOfListing<T>(ordered: readonly T[], matches: ((record: T) => boolean) | null, pick: PagePicker, copy: (record: T) => T): Page<T> {
  const rows = matches ? ordered.filter(matches) : ordered;
  const { offset, limit } = pick(rows.length);
  return { rows: rows.slice(offset, offset + limit).map(copy), totalCount: rows.length };
}

const isEmpty = (filter: object) => Object.values(filter).every((v) => v === undefined);

/**
 * The in-memory simulated cluster: a hyperconverged cluster serving VMs and tenant shards.
 * All timing runs on the injected clock and all randomness on a seeded PRNG, so a test
 * with a VirtualClock replays exactly.
 */
export class SimulatedCluster implements ClusterBackend {
  readonly name = 'fake';
  readonly capabilities: BackendCapabilities = { vms: true, shards: true };
  /** Calls per method name, so tests can prove that reads are batched (DataLoader). */
  readonly callCounts = new Map<string, number>();
  readonly simulation: SimulationControls;
  readonly failover: FailoverControl & { readonly attaches: AttachCounter };

  private readonly rt: Runtime;
  private readonly lifecycle: NodeLifecycle;
  private readonly saver: StateSaver | undefined;
  private closed = false;

  constructor(config: SimulatedClusterConfig) {
    const faults = new FaultInjector(config.seed);
    const lag = new SecondaryLagTable(() => config.clock.now(), config.secondaryDownloadBytesPerSecond);
    this.saver = config.statePath === undefined ? undefined : new StateSaver(config.statePath);
    const saved = this.saver ? readStateFile(this.saver.path) : null;
    this.rt = {
      clock: config.clock,
      state: saved ? ClusterState.fromSaved(saved) : ClusterState.fromTopology(config.topology, lag),
      hub: new EventHub(config.onListenerError, this.saver?.changed),
      faults,
      moves: new MoveTracker(config.clock, faults, latencySpikes(config.seed, config.latencySpike)),
      lag,
      latencies: saved ? { ...saved.latencies } : { ...config.latencies },
      workloadLatencies: config.workloadLatencies ?? {},
      restartDelayMs: config.restartDelayMs,
      heartbeatIntervalMs: config.heartbeatIntervalMs,
      changed: this.saver?.changed ?? (() => {}),
    };
    this.lifecycle = new NodeLifecycle(this.rt);
    if (saved) {
      // The cluster kept running while nobody watched: downloads went on, moves whose time
      // had come finished (before the restarts, which find the nodes as they were saved), restarts finished.
      const sinceSaveMs = Math.max(0, config.clock.now() - saved.savedAt);
      lag.restore(saved.secondaries, sinceSaveMs);
      faults.inject(saved.faults);
      settleMovesAfterCrash(this.rt, saved.moves, sinceSaveMs);
      this.lifecycle.restore(saved);
    }
    if (this.saver) {
      this.saver.attach(() => snapshotState(this.rt, this.lifecycle));
      ensureDirectoryOf(this.saver.path);
      this.saver.writeNow();
    }
    this.simulation = this.createSimulationControls();
    this.failover = createFailoverControl(this.rt, this.lifecycle);
  }

  // --- nodes

  listNodes(): Promise<ClusterNode[]> {
    return this.call('listNodes', async () => [...this.rt.state.nodes.values()].map(copyNode));
  }

  getNode(id: string): Promise<ClusterNode | null> {
    return this.call('getNode', async () => this.readNode(id));
  }

  getNodes(ids: readonly string[]): Promise<(ClusterNode | null)[]> {
    return this.call('getNodes', async () => ids.map((id) => this.readNode(id)));
  }

  cordonNode(id: string): Promise<void> {
    return this.call('cordonNode', () => setCordoned(this.rt, id, true));
  }

  uncordonNode(id: string): Promise<void> {
    return this.call('uncordonNode', () => setCordoned(this.rt, id, false));
  }

  // --- virtual machines

  listVms(filter: VmFilter = {}): Promise<ClusterVm[]> {
    return this.call('listVms', async () => copiesOfMatches(this.rt.state.vms.values(), (vm) => matchesVmFilter(vm, filter), copyVm));
  }

  pageVms(filter: VmFilter, page: PagePicker): Promise<Page<ClusterVm>> {
    const matches = isEmpty(filter) ? null : (vm: ClusterVm) => matchesVmFilter(vm, filter);
    return this.call('pageVms', () => pageOfListing(this.rt.state.vmsInListingOrder(), matches, page, copyVm));
  }

  getVm(id: string): Promise<ClusterVm | null> {
    return this.call('getVm', async () => this.readVm(id));
  }

  getVms(ids: readonly string[]): Promise<(ClusterVm | null)[]> {
    return this.call('getVms', async () => ids.map((id) => this.readVm(id)));
  }

  migrateVm(id: string, options: { fromNodeId: string; toNodeId?: string }): Promise<void> {
    return this.call('migrateVm', () => vms.migrateVm(this.rt, id, options));
  }

  stopVm(id: string): Promise<void> {
    return this.call('stopVm', () => vms.stopVm(this.rt, id));
  }

  startVm(id: string, options: { runStrategy: RunStrategy; nodeId?: string }): Promise<void> {
    return this.call('startVm', () => vms.startVm(this.rt, id, options));
  }

  setVmMaintenanceStrategyLabel(id: string, value: string | null): Promise<void> {
    return this.call('setVmMaintenanceStrategyLabel', () => vms.setVmMaintenanceStrategyLabel(this.rt, id, value));
  }

  setVmTracking(id: string, tracking: VmMaintenanceTracking | null): Promise<void> {
    return this.call('setVmTracking', () => vms.setVmTracking(this.rt, id, tracking));
  }

  // --- tenant shards

  listShards(filter: ShardFilter = {}): Promise<ClusterShard[]> {
    return this.call('listShards', async () => copiesOfMatches(this.rt.state.shards.values(), (s) => matchesShardFilter(s, filter), copyShard));
  }

  pageShards(filter: ShardFilter, page: PagePicker): Promise<Page<ClusterShard>> {
    const matches = isEmpty(filter) ? null : (s: ClusterShard) => matchesShardFilter(s, filter);
    return this.call('pageShards', () => pageOfListing(this.rt.state.shardsInListingOrder(), matches, page, copyShard));
  }

  getShard(id: string): Promise<ClusterShard | null> {
    return this.call('getShard', () => this.readShard(id));
  }

  getShards(ids: readonly string[]): Promise<(ClusterShard | null)[]> {
    return this.call('getShards', async () => ids.map((id) => this.readShard(id)));
  }

  getSecondaryStatus(shardId: string, nodeId: string): Promise<SecondaryStatus> {
    return this.call('getSecondaryStatus', () => shards.getSecondaryStatus(this.rt, shardId, nodeId));
  }

  cutOverShard(id: string, options: { fromNodeId: string; toNodeId: string }): Promise<void> {
    return this.call('cutOverShard', () => shards.cutOverShard(this.rt, id, options));
  }

  // --- rehearsal (issue 33)

  snapshot(): Promise<BackendSnapshot[]> {
    return this.call('snapshot', () => [snapshotOf(this.rt, { restartDelayMs: this.rt.restartDelayMs, heartbeatIntervalMs: this.rt.heartbeatIntervalMs })]);
  }

  // --- changes

  watch(listener: ClusterEventListener): () => void {
    this.count('watch');
    return this.rt.hub.watch(listener);
  }

  /** Aborts moves in flight (they reject Unavailable), stops node timers and drops listeners. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Saved first: aborting moves drops what the file records for VMs mid-move.
    this.saver?.close();
    this.rt.moves.abortAll(new BackendError('Unavailable', 'the simulated cluster was closed'));
    this.lifecycle.close();
    this.rt.hub.clear();
  }

  private readNode(id: string): ClusterNode | null {
    const node = this.rt.state.nodes.get(id);
    return node ? copyNode(node) : null;
  }

  private readVm(id: string): ClusterVm | null {
    const vm = this.rt.state.vms.get(id);
    return vm ? copyVm(vm) : null;
  }

  private readShard(id: string): ClusterShard | null {
    const shard = this.rt.state.shards.get(id);
    return shard ? copyShard(shard) : null;
  }

  private count(name: string): void {
    this.callCounts.set(name, (this.callCounts.get(name) ?? 0) + 1);
  }

  /** Counts the call and runs it; what `fn` throws becomes the rejection (a synchronous `fn` spares the hot reads an async frame each). */
  private call<T>(name: string, fn: () => T | Promise<T>): Promise<T> {
    this.count(name);
    if (this.closed) return Promise.reject(new BackendError('Unavailable', 'the simulated cluster was closed'));
    try {
      return Promise.resolve(fn());
    } catch (error) {
      return Promise.reject(error);
    }
  }

  private createSimulationControls(): SimulationControls {
    const rt = this.rt;
    const lifecycle = this.lifecycle;
    const sim = (name: string) => `simulation.${name}`;
    return {
      restartNode: (nodeId) => this.call(sim('restartNode'), () => lifecycle.restartNode(nodeId)),
      setNodeOnline: (nodeId, online) => this.call(sim('setNodeOnline'), () => setNodeOnlineDeclaringLoss(rt, lifecycle, nodeId, online)),
      removeNode: (nodeId) => this.call(sim('removeNode'), () => lifecycle.removeNode(nodeId)),
      setSecondaryLag: (shardId, nodeId, lagBytes, bytesPerSecond) =>
        this.call(sim('setSecondaryLag'), () => shards.setSecondaryLag(rt, shardId, nodeId, lagBytes, bytesPerSecond)),
      setSecondaryHeatmapKnown: (shardId, nodeId, known) =>
        this.call(sim('setSecondaryHeatmapKnown'), () => shards.setSecondaryHeatmapKnown(rt, shardId, nodeId, known)),
      setLatencies(latencies: Partial<LatencySettings>): LatencySettings {
        const parsed = latenciesSchema.safeParse(latencies);
        if (!parsed.success) throw new BackendError('Rejected', `invalid latencies: ${parsed.error.message}`);
        const given = Object.entries(parsed.data).filter(([, ms]) => ms !== undefined);
        rt.latencies = { ...rt.latencies, ...Object.fromEntries(given) };
        rt.changed();
        return { ...rt.latencies };
      },
      getLatencies: () => ({ ...rt.latencies }),
      injectFaults: (faults: Partial<FaultSettings>) => {
        const settings = rt.faults.inject(faults);
        rt.changed();
        return settings;
      },
      clearFaults: () => {
        const settings = rt.faults.clear();
        rt.changed();
        return settings;
      },
      getFaults: () => rt.faults.get(),
    };
  }
}
