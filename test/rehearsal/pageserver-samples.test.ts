import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { BackendSnapshot } from '../../src/cluster/rehearsal.ts';
import { DEFAULT_CONFIG } from '../../src/config/defaults.ts';
import { openDatabase, type Database } from '../../src/store/database.ts';
import { formatShardId, tenantIdOf } from '../../simulators/pageserver/index.ts';
import { runSamples } from '../../rehearsal/run-samples.ts';
import { constantSampler } from '../support/rehearsal-pageservers.ts';

/**
 * Issue 33: a whole sample (rehearsal/run-samples.ts) of a pageserver-only cluster — the real
 * engines against the simulators rehearsal/loaders/pageserver.ts stands up — for a rolling
 * restart (DRAIN_FILL, WAIT_FOR_REATTACH). The pageserver backend serves no VMs: the sample
 * must not ask it for them. Each cut-over lasts the catch-up drawn for it and nothing more:
 * the sample's clock waits for the loopback requests in flight before it moves to the next
 * timer (before, a cut-over lasted its draw plus the race with the next heartbeat, up to 5 s).
 * A shard with policy PAUSE stays attached through its node's drain: the rollout pauses there,
 * the operator's one scoped resume lets it finish.
 */

let dir: string | undefined;
let db: Database | undefined;
afterEach(async () => {
  await db?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  db = undefined;
  dir = undefined;
});

const id = (tenant: number) => formatShardId(tenantIdOf(tenant), 0, 0);
const NODES = [
  { id: '1', zone: 'az-a' },
  { id: '2', zone: 'az-a' },
  { id: '3', zone: 'az-b' },
];

/** 24 shards, 8 attached on each node, each with a warm secondary on a node of the other zone (or of az-a for node 3's). */
function snapshot(paused: number[] = []): BackendSnapshot {
  const shards = Array.from({ length: 24 }, (_, k) => {
    const tenant = k + 1;
    const attached = NODES[k % 3]!.id;
    const secondary = attached === '3' ? String(1 + (k % 2)) : '3';
    return {
      id: id(tenant),
      tenantId: tenantIdOf(tenant),
      shardNumber: 0,
      shardCount: 0,
      stripeSize: 0,
      attachedNodeId: attached,
      generation: 2,
      generationNodeId: attached,
      secondaryNodeIds: [secondary],
      secondaryCount: 1,
      policy: paused.includes(tenant) ? 'PAUSE' : 'ACTIVE',
      preferredZone: NODES.find((n) => n.id === attached)!.zone,
      pendingComputeNotification: false,
      tenantConfig: { heatmap_period: '1m' },
      observed: { [attached]: 'AttachedSingle@2', [secondary]: 'Secondary' },
      timelines: { ['b'.repeat(32)]: '0/16B5A50' },
      secondaries: { [secondary]: { bytesTotal: 4 << 20, bytesDownloaded: 4 << 20, heatmap: true } },
    };
  });
  return {
    plugin: 'pageserver',
    takenAt: Date.UTC(2026, 0, 1),
    data: {
      version: 1,
      nodes: NODES.map((n) => ({ ...n, name: `pageserver-${n.id}`, availability: 'ACTIVE', cordoned: false })),
      shards,
      computeHook: { configured: true, tokenRequired: false, requestTimeoutMs: 10_000, retries: 10, concurrency: 32 },
      unread: [],
    },
  };
}

const LIVE_OPTIONS = {
  pageservers: NODES.map((n) => ({ id: Number(n.id), url: `http://ps-${n.id}.example:9898`, availabilityZone: n.zone })),
  controlPlane: { url: 'http://control-plane.example' },
};

async function sample(snapshots: BackendSnapshot[], ms: number) {
  dir = mkdtempSync(join(tmpdir(), 'lk-ps-samples-'));
  db = await openDatabase({ url: `file:${join(dir, 'sample.db')}` });
  const [s] = await runSamples(
    {
      config: { plugins: [{ name: 'pageserver', options: LIVE_OPTIONS }], operations: DEFAULT_CONFIG.operations },
      snapshots,
      history: [],
      input: { nodes: ['1', '2', '3'], action: 'DRAIN_FILL', restart: 'WAIT_FOR_REATTACH', maxUnavailable: 1 },
      samples: 1,
      seed: 1,
    },
    undefined,
    { sampler: () => constantSampler(ms), database: db },
  );
  const cutOvers = await db.prisma.operationStep.findMany({ where: { action: 'CUT_OVER', state: 'MOVED' } });
  return { s: s!, cutOvers };
}

describe('issue 33: a rehearsal sample of a pageserver rolling restart', { timeout: 120_000 }, () => {
  it('drains, restarts and fills every pageserver; each cut-over lasts the drawn catch-up, not the wait for the next heartbeat', async () => {
    const { s, cutOvers } = await sample([snapshot()], 3000);
    expect(s.outcome).toBe('SUCCEEDED');
    expect(s.pauses).toEqual([]);
    expect(s.vmsLeftStopped).toEqual([]);
    expect(s.nodes.map((n) => n.safeToRestart)).toEqual([true, true, true]);
    // Every shard is drained once; the fills bring shards back.
    expect(cutOvers.length).toBeGreaterThanOrEqual(24);
    for (const step of cutOvers) {
      const ms = step.finishedAt!.getTime() - step.startedAt!.getTime();
      expect(ms, `${step.workloadId} from ${step.fromNodeId}`).toBeGreaterThanOrEqual(3000);
      expect(ms, `${step.workloadId} from ${step.fromNodeId}`).toBeLessThan(3500);
    }
  });

  it('a PAUSE shard keeps its node unsafe to restart: one pause there, resumed once for that node, and the rollout ends', async () => {
    // Tenant 2 is attached on node 2.
    const { s } = await sample([snapshot([2])], 1000);
    expect(s.outcome).toBe('SUCCEEDED');
    expect(s.pauses.map((p) => p.key)).toEqual([`UNSAFE_TO_RESTART:2:${id(2)}`]);
    expect(s.nodes.find((n) => n.nodeId === '2')).toMatchObject({ leftOnNode: [id(2)], safeToRestart: false });
    expect(s.nodes.filter((n) => n.nodeId !== '2').map((n) => n.safeToRestart)).toEqual([true, true]);
  });
});
