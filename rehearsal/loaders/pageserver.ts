import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeIssues } from '../../src/cluster/zod-issues.ts';
import { haAwareTenantConfig, locationHasSecondaries } from '../../src/domain/storage/tenant-config.ts';
import { pageserverOptionsSchema, type PageserverOptions, type PageserverOptionsInput } from '../../plugins/pageserver/options.ts';
import { pageserverSnapshotSchema, type PageserverSnapshotData } from '../../plugins/pageserver/snapshot.ts';
import { STATE_FORMAT, STATE_VERSION, type ControllerStateInput } from '../../plugins/pageserver/state-file.ts';
import { ComputeHookSim } from '../../simulators/compute-hook/index.ts';
import { RequestLog } from '../../simulators/common/request-log.ts';
import { parseLsn, startPageserverFleet, type PageserverFleet } from '../../simulators/pageserver/index.ts';
import type { BackendSnapshot } from '../../src/cluster/rehearsal.ts';
import { flushMicrotasks, VirtualClock } from '../../src/cluster/virtual-clock.ts';
import type { LoadedSimulators, RehearsalLoadContext, RehearsalLoader } from './types.ts';
import { simulatorDefaultsWhereUndrawn } from './drawn.ts';

/** A snapshot or live options this loader cannot stand simulators up from; nothing is left running. */
export class PageserverRehearsalError extends Error {
  override readonly name = 'PageserverRehearsalError';
}

/** Neon's pageserver retries its re-attach upcall until it is answered; a rehearsed restart does so every second of the clock. */
const REATTACH_RETRY_MS = 1000;

/** How long (wall time) the clock waits at most for the loopback requests in flight before it moves on anyway. */
const IO_SETTLE_MAX_MS = 10_000;

/**
 * Resolves once every request in flight between the plugin and the simulators waits on the
 * clock (a long poll, a latency, a pageserver that is down), as test/support/pageserver-cluster.ts
 * waits between steps: the clock must not move while an answer is on its way over loopback, or
 * every step would last as long as the race with the next timer (the next heartbeat, up to
 * seconds of virtual time) on top of its drawn duration. `outstanding`: the plugin's own count
 * of requests not yet answered, when the loader can reach the plugin (a pageserver-only sample).
 */
function ioIdle(fleet: PageserverFleet, hook: ComputeHookSim | null, outstanding: () => number): () => Promise<void> {
  return async () => {
    const deadline = Date.now() + IO_SETTLE_MAX_MS;
    let stable = 0;
    let last = '';
    while (stable < 3 && Date.now() < deadline) {
      await flushMicrotasks();
      const out = outstanding();
      const held = fleet.waiting() + (hook?.waiting ?? 0);
      const upcalls = fleet.upcallsInFlight();
      const print = `${out}/${held}/${upcalls}/${fleet.log.position}`;
      if (out <= held && upcalls === 0 && print === last) stable++;
      else stable = 0;
      last = print;
      if (stable === 0) await new Promise((r) => setTimeout(r, 1));
    }
  };
}

/** What the tests see beyond the contract: the simulators themselves. */
export interface LoadedPageservers extends LoadedSimulators {
  options: PageserverOptionsInput;
  fleet: PageserverFleet;
  hook: ComputeHookSim | null;
}

/** A port free on loopback now, for the plugin's upcall listener (the simulators must know it before the plugin starts). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function parseInputs(snapshot: BackendSnapshot, liveOptions: unknown): { data: PageserverSnapshotData; live: PageserverOptions } {
  if (snapshot.plugin !== 'pageserver') throw new PageserverRehearsalError(`the pageserver loader was given a snapshot of plugin "${snapshot.plugin}"`);
  const data = pageserverSnapshotSchema.safeParse(snapshot.data);
  if (!data.success) throw new PageserverRehearsalError(`the pageserver snapshot is unreadable (${describeIssues(data.error, { max: 5, separator: '; ' })})`);
  const live = pageserverOptionsSchema.safeParse(liveOptions ?? {});
  if (!live.success) throw new PageserverRehearsalError(`the live pageserver options are invalid (${describeIssues(live.error, { max: 5, separator: '; ' })})`);
  const nodeIds = new Set(data.data.nodes.map((n) => n.id));
  for (const s of data.data.shards) {
    const unknown = [s.attachedNodeId, ...s.secondaryNodeIds].find((n) => !nodeIds.has(n));
    if (unknown !== undefined) throw new PageserverRehearsalError(`the pageserver snapshot places shard ${s.id} on node ${unknown}, which it does not list`);
  }
  return { data: data.data, live: live.data };
}

/** The snapshot's shards on the simulators, as the pageservers held them: attached where they were, secondaries with their download progress. */
function seedFleet(fleet: PageserverFleet, data: PageserverSnapshotData): void {
  for (const s of data.shards) {
    const config = s.tenantConfig ?? {};
    // What the controller sent each location (neon:W11), so the plugin finds nothing to correct.
    const confOf = (mode: string) => haAwareTenantConfig(config, locationHasSecondaries(mode, s.secondaryCount, s.secondaryNodeIds.length));
    const generation = /^AttachedSingle@(\d+)$/.exec(s.observed[s.attachedNodeId] ?? '')?.[1];
    fleet.sim(s.attachedNodeId).seed(s.id, {
      mode: 'AttachedSingle',
      generation: generation === undefined ? s.generation : Number(generation),
      tenantConf: confOf('AttachedSingle'),
      stripeSize: s.stripeSize,
    });
    for (const nodeId of s.secondaryNodeIds) {
      const progress = s.secondaries[nodeId];
      fleet.sim(nodeId).seed(s.id, {
        mode: 'Secondary',
        tenantConf: confOf('Secondary'),
        stripeSize: s.stripeSize,
        ...(progress && { bytesTotal: progress.bytesTotal, bytesDownloaded: progress.bytesDownloaded, heatmap: progress.heatmap }),
      });
    }
    if (s.timelines) {
      const heads = new Map<string, number>();
      for (const [tl, text] of Object.entries(s.timelines)) {
        const lsn = parseLsn(text);
        if (lsn !== null) heads.set(tl, lsn);
      }
      if (heads.size) fleet.wal.setTimelines(s.id, heads);
    }
  }
}

/**
 * The snapshot's intent in the plugin's own legacy state-file format, which it imports once
 * into a fresh database before discovery: placement, generations, policies, preferred zones,
 * tenant configs and cordons as the live controller kept them. Discovery alone would adopt the
 * shards with defaults (policy ACTIVE, preferred zone = the attached node's, secondary count =
 * secondaries found), which is not the live intent.
 */
function stateFileOf(data: PageserverSnapshotData): ControllerStateInput {
  return {
    format: STATE_FORMAT,
    version: STATE_VERSION,
    shards: data.shards.map((s) => ({
      id: s.id,
      tenantId: s.tenantId,
      shardNumber: s.shardNumber,
      shardCount: s.shardCount,
      stripeSize: s.stripeSize,
      attachedNodeId: s.attachedNodeId,
      secondaryNodeIds: s.secondaryNodeIds,
      generation: s.generation,
      preferredZone: s.preferredZone,
      policy: s.policy,
      secondaryCount: s.secondaryCount,
      pendingComputeNotification: s.pendingComputeNotification,
      tenantConfig: s.tenantConfig,
    })),
    cordoned: data.nodes.filter((n) => n.cordoned).map((n) => n.id),
  };
}

/**
 * Stands the snapshot's pageservers and compute hook up on the sample's clock (issue 33):
 * one simulated pageserver per node (an OFFLINE one stays silent), the shards where they were,
 * a compute hook when the live plugin has one, and the plugin's options pointing at them —
 * the live timings kept, every address and token replaced. Each live migration's catch-up
 * lasts the duration drawn for `SHARD_CUT_OVER` of that shard on its origin node.
 */
export async function loadPageservers(snapshot: BackendSnapshot, liveOptions: unknown, context: RehearsalLoadContext): Promise<LoadedPageservers> {
  const { data, live } = parseInputs(snapshot, liveOptions);
  const { clock } = context;
  const drawn = simulatorDefaultsWhereUndrawn(context);
  const log = new RequestLog();
  let fleet: PageserverFleet | undefined;
  let hook: ComputeHookSim | null = null;
  const dir = mkdtempSync(join(tmpdir(), 'lk-rehearsal-pageserver-'));
  const stop = async () => {
    await fleet?.close();
    await hook?.close();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    fleet = await startPageserverFleet({
      nodes: data.nodes.map((n) => ({ id: Number(n.id), zone: n.zone })),
      shards: [],
      clock,
      log,
      catchUpMs: (shardId, nodeId) => {
        // The origin is AttachedStale by now (neon:C1): the history is kept per origin node, the one drained.
        const origin = [...fleet!.sims.values()].find((sim) => sim.location(shardId)?.mode === 'AttachedStale');
        return drawn('SHARD_CUT_OVER', shardId, String(origin?.nodeId ?? nodeId));
      },
    });
    seedFleet(fleet, data);
    const hookToken = data.computeHook.tokenRequired ? randomBytes(16).toString('hex') : undefined;
    if (data.computeHook.configured) hook = await new ComputeHookSim({ clock, log, ...(hookToken && { token: hookToken }) }).start();
    const upcallPort = await freePort();
    const upcallToken = randomBytes(16).toString('hex');
    const upcallUrl = `http://127.0.0.1:${upcallPort}`;
    for (const sim of fleet.sims.values()) {
      sim.controllerUrl = upcallUrl;
      sim.controllerToken = upcallToken;
    }
    for (const n of data.nodes) if (n.availability === 'OFFLINE') fleet.sim(n.id).stopAnswering();
    const statePath = join(dir, 'intent.json');
    writeFileSync(statePath, JSON.stringify(stateFileOf(data)));
    const hosts = new Map(live.pageservers.map((p) => [String(p.id), p.kubernetesNode]));
    const options: PageserverOptionsInput = {
      pageservers: data.nodes.map((n) => {
        const kubernetesNode = hosts.get(n.id);
        return {
          id: Number(n.id),
          url: fleet!.sim(n.id).url,
          availabilityZone: n.zone,
          name: n.name,
          ...(kubernetesNode !== undefined && { kubernetesNode }),
        };
      }),
      heartbeatIntervalMs: live.heartbeatIntervalMs,
      maxOfflineIntervalMs: live.maxOfflineIntervalMs,
      maxWarmingUpIntervalMs: live.maxWarmingUpIntervalMs,
      secondaryWarmupTimeoutMs: live.secondaryWarmupTimeoutMs,
      secondaryDownloadRequestTimeoutMs: live.secondaryDownloadRequestTimeoutMs,
      backgroundReconcileIntervalMs: live.backgroundReconcileIntervalMs,
      ...(hook && { controlPlane: { url: hook.url, ...(hookToken && { token: hookToken }) } }),
      stateFile: statePath,
      upcall: { host: '127.0.0.1', port: upcallPort, token: upcallToken },
    };
    // A node of the gateway is this loader's when it is a pageserver id or the Kubernetes node one runs on (issue 26).
    const simOf = (nodeId: string) => {
      const id = [...hosts].find(([, k]) => k === nodeId)?.[0] ?? nodeId;
      return fleet!.sims.get(Number(id)) && /^\d+$/.test(id) ? fleet!.sim(id) : undefined;
    };
    let outstanding = () => 0;
    // The sample's clock waits for the loopback requests in flight before each timer.
    if (clock instanceof VirtualClock) clock.waitForIo(ioIdle(fleet, hook, () => outstanding()));
    const loaded: LoadedPageservers = {
      options,
      urls: [...[...fleet.sims.values()].map((s) => s.url), ...(hook ? [hook.url] : []), upcallUrl],
      fleet,
      hook,
      async restartNode(nodeId, downMs) {
        const sim = simOf(nodeId);
        // Another plugin's node (a hyperconverged mix hands every loader each restart).
        if (!sim) return;
        // Down now (requests in flight lost); after downMs it boots and re-attaches, as a restarted pageserver does.
        void sim.restart({ downMs, retryEveryMs: REATTACH_RETRY_MS }).catch(() => {});
      },
      attach(backend) {
        // The pageserver plugin alone is the sample's backend; combined with another plugin its count is out of reach (the simulators' side still settles).
        const plugin = backend as Partial<{ outstandingRequests(): number }>;
        if (typeof plugin.outstandingRequests === 'function') outstanding = () => plugin.outstandingRequests!();
      },
      stop,
    };
    return loaded;
  } catch (e) {
    await stop().catch(() => {});
    throw e;
  }
}

const loadPageserverSnapshot: RehearsalLoader = (snapshot, liveOptions, context) => loadPageservers(snapshot, liveOptions, context);

export default loadPageserverSnapshot;
