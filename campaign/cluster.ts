/**
 * The campaign's cluster: a hyperconverged durable simulated cluster (VMs of every
 * maintenance strategy and tenant shards on every node), served by `lockkeeper serve` child
 * processes on one SQLite database, so a gateway can be killed and restarted on both.
 */
import { createWriteStream, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnLockkeeper, type ChildServer } from '../test/support/child-server.ts';

export const NODES = ['1', '2', '3', '4'];

const STRATEGIES = [null, 'ShutdownAndRestartAfterEnable', 'ShutdownAndRestartAfterDisable', 'Shutdown', null, 'Migrate'];
const RUN_STRATEGIES = ['Always', 'RerunOnFailure', 'Manual'];

/** Three VMs and four shards per node: every strategy, three run strategies, one secondary each. */
function topology() {
  const vms = NODES.flatMap((node, n) =>
    [0, 1, 2].map((i) => ({
      namespace: 'default',
      name: `vm-${node}-${i}`,
      nodeId: node,
      maintenanceStrategyLabel: STRATEGIES[(n * 3 + i) % STRATEGIES.length],
      runStrategy: RUN_STRATEGIES[(n + i) % RUN_STRATEGIES.length],
    })),
  );
  const shards = NODES.flatMap((node, n) =>
    [0, 1, 2, 3].map((i) => ({
      tenantId: `t${n}`,
      shardNumber: i,
      shardCount: 4,
      attachedNodeId: node,
      secondaries: [{ nodeId: NODES[(n + 1 + (i % 3)) % NODES.length]! }],
    })),
  );
  return { nodes: NODES.map((id, n) => ({ id, zone: n % 2 ? 'zone-b' : 'zone-a' })), vms, shards };
}

export interface CampaignCluster {
  dir: string;
  dbPath: string;
  gateway: (ChildServer & { ready: Promise<void> }) | undefined;
  start(): Promise<ChildServer>;
  kill(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Latencies long enough that kills land with moves in flight, and a gateway restart (seconds)
 * sometimes outlasts them (the move finished meanwhile) and sometimes not (killed early).
 */
export function createCampaignCluster(options: { seed: number; latencySpike?: { rate: number; factor: number }; mutant?: string }): CampaignCluster {
  const dir = mkdtempSync(join(tmpdir(), 'lk-campaign-'));
  const dbPath = join(dir, 'lockkeeper.db');
  writeFileSync(
    join(dir, 'lockkeeper.config.json'),
    JSON.stringify({
      plugins: [
        {
          name: 'fake',
          options: {
            statePath: 'cluster-state.json',
            seed: options.seed,
            latenciesMs: { migrate: 2500, stop: 400, start: 600, cutOver: 1200, cordon: 50 },
            topology: topology(),
            ...(options.latencySpike && { latencySpike: options.latencySpike }),
          },
        },
      ],
      operations: { migrationRetryDelayMs: 500, maxConcurrentMoves: 4 },
    }),
  );
  return gatewayCluster(dir, dbPath, options.mutant);
}

const MUTANT_LOADER = fileURLToPath(new URL('./mutant-loader.mjs', import.meta.url));

/** A `lockkeeper serve` child in `dir` on the SQLite database at `dbPath`: started, killed (-9) and restarted on it, stopped. */
/** `mutant`: the gateway runs with that seeded mutant (mutant-hooks.mjs). */
export function gatewayCluster(dir: string, dbPath: string, mutant?: string): CampaignCluster {
  let starts = 0;
  const cluster: CampaignCluster = {
    dir,
    dbPath,
    gateway: undefined,
    async start() {
      const g = mutant
        ? spawnLockkeeper({ LOCKKEEPER_DATABASE_URL: `file:${dbPath}`, LOCKKEEPER_CAMPAIGN_MUTANT: mutant }, dir, ['serve'], ['--import', MUTANT_LOADER])
        : spawnLockkeeper({ LOCKKEEPER_DATABASE_URL: `file:${dbPath}` }, dir);
      // Each gateway's log in the campaign's folder (gateway-1.log is the first; in a crash campaign round N's restart is N + 1).
      const log = createWriteStream(join(dir, `gateway-${++starts}.log`));
      g.child.stdout!.pipe(log, { end: false });
      g.child.stderr!.pipe(log, { end: false });
      void g.exited.then(() => log.end());
      cluster.gateway = g;
      await g.ready;
      return g;
    },
    async kill() {
      const g = cluster.gateway;
      if (!g) return;
      g.child.kill('SIGKILL');
      await g.exited;
      cluster.gateway = undefined;
    },
    async stop() {
      const g = cluster.gateway;
      if (!g) return;
      g.child.kill('SIGTERM');
      await g.exited;
      cluster.gateway = undefined;
    },
  };
  return cluster;
}
