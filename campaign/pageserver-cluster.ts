/**
 * The campaign's pageserver cluster (issue 16 point 1, `--backend pageserver`): four
 * simulated pageservers (simulators/pageserver, the code `lockkeeper simulator --tenants`
 * serves) and a simulated compute control plane (the notify-attach hook) run in the
 * campaign's own process on the wall clock, and the gateway — `lockkeeper serve` with the
 * real `pageserver` plugin, its intent and generations in the gateway's SQLite database — is
 * a child process that is killed and restarted on the same database. The simulators outlive
 * every kill, as real pageservers do, so what they hold after a restart is what the resumed
 * gateway must find out.
 *
 * Every location a pageserver is told to hold passes the simulators' safety checker, which
 * this subclass also records: the most direct evidence of which generation was issued to
 * which node (`generationsIssuedTwice`).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPrng } from '../src/domain/prng.ts';
import { ComputeHookSim } from '../simulators/compute-hook/index.ts';
import {
  parseShardId,
  roundRobinShards,
  SafetyChecker,
  startPageserverFleet,
  type LocationView,
  type PageserverFleet,
  type SimShardSpec,
} from '../simulators/pageserver/index.ts';
import { gatewayCluster, type CampaignCluster } from './cluster.ts';
import type { ClusterView } from './invariants.ts';
import { MARKS } from './order-invariants.ts';

export const PAGESERVER_NODES = ['1', '2', '3', '4'];

/** The fault campaign's rates (issue 16 point 2), as on the simulated cluster. */
const FAULTS = { failureRate: 0.1, spikeRate: 0.05, spikeFactor: 10 };

/** The safety checker, also keeping every attached location a pageserver was told to hold, with its generation. */
export class GenerationRecorder extends SafetyChecker {
  /** Per shard, per generation, the nodes that held an attached location (AttachedSingle/Multi/Stale) with it. */
  readonly attachedWith = new Map<string, Map<number, Set<string>>>();

  override record(nodeId: string, shardId: string, view: LocationView | null): void {
    if (view?.mode.startsWith('Attached') && view.generation !== null) {
      const byGen = this.attachedWith.get(shardId) ?? new Map<number, Set<string>>();
      this.attachedWith.set(shardId, byGen);
      const nodes = byGen.get(view.generation) ?? new Set<string>();
      byGen.set(view.generation, nodes);
      nodes.add(nodeId);
    }
    super.record(nodeId, shardId, view);
  }

  /** Sentences naming each generation of a shard that two pageservers were told to attach with. */
  generationsIssuedTwice(): string[] {
    const out: string[] = [];
    for (const [shard, byGen] of this.attachedWith)
      for (const [gen, nodes] of byGen)
        if (nodes.size > 1) out.push(`shard ${shard}: generation ${gen} was issued to nodes ${[...nodes].sort().join(' and ')}`);
    return out;
  }
}

export interface PageserverCampaignCluster extends CampaignCluster {
  fleet: PageserverFleet;
  safety: GenerationRecorder;
  hook: ComputeHookSim;
  /** Faults injected so far (the fault campaign), by kind. */
  faults: { failures: number; spikes: number };
  /** The pageserver restarts after its drain (its re-attach makes it ACTIVE again, neon:L3). */
  restartNode(nodeId: string): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * Four pageservers; by default four tenants of four shards, attached round-robin with one secondary each. Every
 * `PUT …/location_config` takes `putLatencyMs`, so that a cut-over (several of them, neon:C1–C9)
 * is in flight long enough for kills to land between its steps. With `faultSeed` (the fault
 * campaign), every request to a pageserver or the compute hook fails transiently (503) one
 * time in ten, and one `location_config` or notification in twenty takes ten times as long.
 */
export async function createPageserverCampaignCluster(
  options: { putLatencyMs?: number; shards?: SimShardSpec[]; faultSeed?: number; mutant?: string } = {},
): Promise<PageserverCampaignCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'lk-campaign-ps-'));
  const dbPath = join(dir, 'lockkeeper.db');
  const ids = PAGESERVER_NODES.map(Number);
  const safety = new GenerationRecorder();
  const fleet = await startPageserverFleet({ nodes: ids.map((id) => ({ id })), shards: options.shards ?? roundRobinShards(ids, 4, 4), safety });
  // One request log for the pageservers and the hook: the order invariants read one order (order-invariants.ts).
  const hook = await new ComputeHookSim({ log: fleet.log }).start();
  const putLatencyMs = options.putLatencyMs ?? 250;
  const faults = { failures: 0, spikes: 0 };
  for (const sim of fleet.sims.values()) sim.setLatency(putLatencyMs);
  if (options.faultSeed !== undefined) {
    const random = createPrng(options.faultSeed);
    const onFault = (kind: 'failure' | 'spike') => void (kind === 'failure' ? faults.failures++ : faults.spikes++);
    for (const sim of fleet.sims.values()) sim.setChaos({ random, ...FAULTS, onFault });
    hook.answerWith(() => {
      const kind = random() < FAULTS.failureRate ? 'failure' : random() < FAULTS.spikeRate ? 'spike' : null;
      if (kind) onFault(kind);
      return kind === 'failure' ? { status: 503 } : kind === 'spike' ? { status: 200, delayMs: putLatencyMs * FAULTS.spikeFactor } : { status: 200 };
    });
  }
  // A fixed upcall port, so that a restarted gateway is where the pageservers' re-attach goes.
  const upcallPort = await freePort();
  for (const sim of fleet.sims.values()) sim.controllerUrl = `http://127.0.0.1:${upcallPort}`;
  writeFileSync(
    join(dir, 'lockkeeper.config.json'),
    JSON.stringify({
      plugins: [
        {
          name: 'pageserver',
          options: {
            pageservers: ids.map((id) => ({ id, url: fleet.sim(id).url, availabilityZone: id % 2 ? 'zone-a' : 'zone-b' })),
            controlPlane: { url: hook.url },
            upcall: { host: '127.0.0.1', port: upcallPort },
            heartbeatIntervalMs: 1000,
            backgroundReconcileIntervalMs: 2000,
          },
        },
      ],
    }),
  );
  const gateway = gatewayCluster(dir, dbPath, options.mutant);
  const stopGateway = gateway.stop.bind(gateway);
  const killGateway = gateway.kill.bind(gateway);
  const cluster: PageserverCampaignCluster = Object.assign(gateway, {
    fleet,
    safety,
    hook,
    faults,
    async stop() {
      await stopGateway();
      await fleet.close();
      await hook.close();
    },
    async kill() {
      await killGateway();
      fleet.log.mark('campaign', MARKS.gatewayKilled, Date.now());
    },
    async restartNode(nodeId: string) {
      fleet.log.mark('campaign', MARKS.restarted(nodeId), Date.now());
      // The re-attach upcall fails while the gateway is down (killed): the pageserver retries, as Neon's does.
      await fleet
        .sim(nodeId)
        .restart({ downMs: 200 })
        .catch(() => fleet.sim(nodeId).boot({ retryEveryMs: 500 }));
    },
  });
  return cluster;
}

/**
 * The pageserver invariants, once the run has quiesced: what the simulators hold (not what
 * the gateway says) — every shard exactly one `AttachedSingle`, every other location
 * `Secondary` (Detached ones are gone), on the node the gateway reports; the computes told
 * that node (neon:C7); no generation issued twice; and whatever the safety checker saw
 * during the run (two AttachedSingle at once, a generation going back, a shard left with
 * no attached location).
 */
export function findPageserverViolations(cluster: PageserverCampaignCluster, view: ClusterView): string[] {
  const out = [...cluster.safety.violations.splice(0), ...cluster.safety.generationsIssuedTwice()];
  const held = cluster.fleet.view();
  for (const [shardId, byNode] of Object.entries(held)) {
    const singles = Object.entries(byNode).filter(([, v]) => v.startsWith('AttachedSingle@'));
    const others = Object.entries(byNode).filter(([, v]) => !v.startsWith('AttachedSingle@') && v !== 'Secondary@-');
    if (singles.length !== 1) out.push(`shard ${shardId}: ${singles.length} AttachedSingle locations (${JSON.stringify(byNode)})`);
    for (const [node, v] of others) out.push(`shard ${shardId}: node ${node} holds ${v} after the run quiesced`);
    const gateway = view.shards.get(shardId);
    if (!gateway) out.push(`shard ${shardId} is held by the pageservers but the gateway does not list it`);
    else if (singles.length === 1 && gateway.attachedNodeId !== singles[0]![0])
      out.push(`shard ${shardId}: the gateway says attached on node ${gateway.attachedNodeId}, the pageservers on node ${singles[0]![0]}`);
  }
  out.push(...computeMismatches(cluster));
  return out;
}

/**
 * Locations the background reconcile has still to bring to the intent (a cut-over a kill cut
 * off leaves its old location `AttachedStale` until the resumed gateway's reconcile makes it
 * `Secondary`): the campaign waits for these, as for the computes, before it checks.
 */
export function unsettledLocations(cluster: PageserverCampaignCluster): string[] {
  const out: string[] = [];
  for (const [shardId, byNode] of Object.entries(cluster.fleet.view())) {
    const locations = Object.values(byNode);
    if (locations.filter((v) => v.startsWith('AttachedSingle@')).length !== 1) out.push(shardId);
    else if (locations.some((v) => !v.startsWith('AttachedSingle@') && v !== 'Secondary@-')) out.push(shardId);
  }
  return out;
}

/**
 * neon:C7: per tenant, the shards the computes were last told (the hook's last 2xx answer)
 * against where the pageservers hold them `AttachedSingle`. A notification a kill cut off is
 * sent again by the resumed gateway's reconcile, so the campaign waits for this to be empty.
 */
export function computeMismatches(cluster: PageserverCampaignCluster): string[] {
  const out: string[] = [];
  const held = cluster.fleet.view();
  for (const [tenant, body] of cluster.hook.applied) {
    for (const s of body.shards) {
      const byNode = Object.entries(held).find(([id]) => id.startsWith(`${tenant}-`) && parseShardId(id)?.shardNumber === s.shard_number)?.[1];
      const single = byNode && Object.entries(byNode).find(([, v]) => v.startsWith('AttachedSingle@'));
      if (single && single[0] !== String(s.node_id))
        out.push(`tenant ${tenant} shard ${s.shard_number}: the computes were last told node ${s.node_id}, it is attached on node ${single[0]} (neon:C7)`);
    }
  }
  return out;
}
