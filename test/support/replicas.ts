/**
 * Several gateway replicas in one test process on one PostgreSQL database (ha:L1–L5), over
 * one shared simulated cluster. Each replica reaches the cluster through a recorder that
 * notes, in one global order, every backend action it sends and the epoch it believed it led
 * at: tests assert order and ownership, never durations.
 */
import { createSimulatedCluster, type CreateSimulatedClusterOptions, type SimulatedCluster } from '../../plugins/fake/index.ts';
import type { ClusterBackend } from '../../src/cluster/backend.ts';
import { systemClock } from '../../src/cluster/clock.ts';
import { DEFAULT_CONFIG } from '../../src/config/defaults.ts';
import type { OperationSettings } from '../../src/config/schema.ts';
import { LeaseStore } from '../../src/leadership/lease-store.ts';
import { idleInTransactionTimeoutMs, PostgresLeadership } from '../../src/leadership/leadership.ts';
import { createLogger, type Logger } from '../../src/logger.ts';
import { buildApp, type App } from '../../src/server.ts';
import { openDatabase, type Database } from '../../src/store/database.ts';
import { yogaClient } from './yoga-client.ts';

interface RecordedAction {
  seq: number;
  replica: string;
  /** The epoch the replica led at when it sent the action (null: it did not think it led). */
  epoch: number | null;
  method: string;
  args: unknown[];
}

export interface Replica {
  name: string;
  app: App;
  db: Database;
  leadership: PostgresLeadership;
  lease: LeaseStore;
  gql: ReturnType<typeof yogaClient>;
  stopped: boolean;
  stop(): Promise<void>;
}

const ACTIONS = new Set(['cordonNode', 'uncordonNode', 'migrateVm', 'stopVm', 'startVm', 'setVmMaintenanceStrategyLabel', 'setVmTracking', 'cutOverShard']);

/** The shared cluster as one replica reaches it: each action is recorded before it is sent. */
function recording(cluster: SimulatedCluster, name: string, epochOf: () => number | null, log: RecordedAction[]): ClusterBackend {
  return new Proxy(cluster as ClusterBackend, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof property !== 'string' || typeof value !== 'function') return value;
      if (property === 'close') return () => Promise.resolve();
      if (!ACTIONS.has(property)) return (value as (...a: unknown[]) => unknown).bind(target);
      return (...args: unknown[]) => {
        log.push({ seq: log.length, replica: name, epoch: epochOf(), method: property, args });
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

interface ReplicaOptions {
  settings?: Partial<OperationSettings>;
  leaseTtlMs?: number;
  leaseRenewMs?: number;
  /** Each replica's logger (default: silent). */
  log?: (name: string) => Logger;
}

export interface ReplicaSet {
  cluster: SimulatedCluster;
  replicas: Replica[];
  actions: RecordedAction[];
  /** The replica that leads now (by its own view), if any. */
  leader(): Replica | undefined;
  /** Resolves with the leader once exactly one replica leads (polling real time; the leases run on it). */
  untilLeader(predicate?: (r: Replica) => boolean, timeoutMs?: number): Promise<Replica>;
  stop(): Promise<void>;
}

export async function startReplicas(
  url: string,
  count: number,
  options: ReplicaOptions & { cluster?: CreateSimulatedClusterOptions } = {},
): Promise<ReplicaSet> {
  const cluster = createSimulatedCluster({ clock: systemClock, ...options.cluster });
  const actions: RecordedAction[] = [];
  const replicas: Replica[] = [];
  for (let i = 0; i < count; i++) replicas.push(await startReplica(url, `r${i + 1}`, cluster, actions, options));
  const set: ReplicaSet = {
    cluster,
    replicas,
    actions,
    leader: () => replicas.find((r) => !r.stopped && r.leadership.status().role === 'leader'),
    untilLeader: async (predicate = () => true, timeoutMs = 60_000) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const leaders = replicas.filter((r) => !r.stopped && r.leadership.status().role === 'leader');
        if (leaders.length > 1) throw new Error(`two replicas lead at once: ${leaders.map((r) => r.name).join(', ')}`);
        if (leaders[0] && predicate(leaders[0])) return leaders[0];
        if (Date.now() > deadline) throw new Error('no leader in time');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    stop: async () => {
      for (const r of replicas) await r.stop();
      await cluster.close();
    },
  };
  return set;
}

async function startReplica(url: string, name: string, cluster: SimulatedCluster, actions: RecordedAction[], options: ReplicaOptions): Promise<Replica> {
  const leaseTtlMs = options.leaseTtlMs ?? 6000;
  const db = await openDatabase({ url, idleInTransactionTimeoutMs: idleInTransactionTimeoutMs({ leaseTtlMs }) });
  const log = options.log?.(name) ?? createLogger('silent');
  const lease = new LeaseStore(db.prisma);
  const leadership = new PostgresLeadership({
    lease,
    address: () => `http://${name}.test:4000`,
    log,
    leaseTtlMs,
    leaseRenewMs: options.leaseRenewMs ?? 1000,
  });
  const app = buildApp({
    backend: recording(cluster, name, () => leadership.status().epoch, actions),
    log,
    prisma: db.prisma,
    hotPath: db.hotPath,
    clock: systemClock,
    leadership,
    postgresUrl: url,
    config: { ...DEFAULT_CONFIG, operations: { ...DEFAULT_CONFIG.operations, ...options.settings } },
    databaseName: db.file,
    onClose: () => db.close(),
  });
  await app.ready();
  const replica: Replica = {
    name,
    app,
    db,
    leadership,
    lease,
    gql: yogaClient(app.yoga),
    stopped: false,
    stop: async () => {
      if (replica.stopped) return;
      replica.stopped = true;
      await app.stop();
    },
  };
  return replica;
}
