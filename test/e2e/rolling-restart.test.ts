/** Runs examples/rolling-restart*.ts as docs/operations.md shows them (that block is marked run-by this file). */
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import { startLockkeeper, type Started } from '../../src/start.ts';
import { PROJECT_ROOT } from '../support/child-server.ts';

let started: Started | undefined;
afterEach(async () => {
  await started?.app.stop();
});

async function startDemo(options: object): Promise<Started> {
  const cwd = mkdtempSync(join(tmpdir(), 'lk-rolling-'));
  writeFileSync(join(cwd, 'lockkeeper.config.json'), JSON.stringify({ plugins: [{ name: 'fake', options }] }));
  started = await startLockkeeper({ log: createLogger('silent'), env: {}, cwd, port: 0 });
  return started;
}

function runExample(file: string, url: string) {
  return new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(PROJECT_ROOT, file), url], { cwd: PROJECT_ROOT });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('exit', (code) => resolve({ code, out, err }));
  });
}

async function query(url: string, q: string): Promise<any> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: q }) });
  return ((await res.json()) as any).data;
}

describe('examples/rolling-restart.ts: one DRAIN_FILL rollout', () => {
  it('restarts every storage node in turn through one startRollout and ends with every node ACTIVE and every shard attached', async () => {
    const nodes = ['1', '2', '3', '4'].map((id) => ({ id, zone: id <= '2' ? 'zone-a' : 'zone-b', roles: ['worker', 'storage'] }));
    const shards = Array.from({ length: 40 }, (_, i) => ({
      tenantId: `t${i}`,
      attachedNodeId: String((i % 4) + 1),
      secondaries: [{ nodeId: String(((i + 1) % 4) + 1) }],
    }));
    const s = await startDemo({ topology: { nodes, shards }, latenciesMs: { cutOver: 20 }, restartDelayMs: 100, heartbeatIntervalMs: 100 });
    const output = await runExample('examples/rolling-restart.ts', s.url);
    expect(output.err).toBe('');
    expect(output.code).toBe(0);
    expect(output.out).toMatch(/rollout \S+ started: waves 1 → 2 → 3 → 4/);
    for (const id of ['1', '2', '3', '4']) expect(output.out).toContain(`node ${id} drained: restarting it`);
    expect(output.out).toContain('SUCCEEDED 4/4 nodes');
    expect(output.out).toContain('rolling restart done');
    const data = await query(
      s.url,
      '{ nodes { edges { node { schedulingPolicy availability } } } shards(first: 1000) { totalCount } operations(first: 100) { totalCount edges { node { kind state } } } }',
    );
    expect(data.nodes.edges.every((e: any) => e.node.schedulingPolicy === 'ACTIVE' && e.node.availability === 'ACTIVE')).toBe(true);
    expect(data.shards.totalCount).toBe(40);
    // The rollout, and a drain and a fill per node.
    expect(data.operations.edges.map((e: any) => e.node.kind).sort()).toEqual(['DRAIN', 'DRAIN', 'DRAIN', 'DRAIN', 'FILL', 'FILL', 'FILL', 'FILL', 'ROLLOUT']);
    expect(data.operations.edges.every((e: any) => e.node.state === 'SUCCEEDED')).toBe(true);
  });
});

/** Four storage nodes in two zones, 40 shards each with a warm secondary on the next node: nothing to skip. */
function storageCluster() {
  const nodes = ['1', '2', '3', '4'].map((id) => ({ id, zone: id <= '2' ? 'zone-a' : 'zone-b', roles: ['worker', 'storage'] }));
  const shards = Array.from({ length: 40 }, (_, i) => ({
    tenantId: `t${i}`,
    attachedNodeId: String((i % 4) + 1),
    secondaries: [{ nodeId: String(((i + 1) % 4) + 1) }],
  }));
  return { nodes, shards };
}

describe('examples stop at a node that would still serve workloads', () => {
  it('rolling-restart-script.ts on the demo cluster: the first drain SUCCEEDED but left VMs and a shard whose secondary’s lag is unknown, so it restarts nothing and exits 5 naming them', async () => {
    const s = await startDemo({ latenciesMs: { cutOver: 20, migrate: 20, stop: 20, start: 20, cordon: 5 }, restartDelayMs: 100, heartbeatIntervalMs: 100 });
    const output = await runExample('examples/rolling-restart-script.ts', s.url);
    expect(output.code).toBe(5);
    expect(output.out).toMatch(/drain: SUCCEEDED \d+\/\d+ moved, [1-9]\d* skipped/);
    expect(output.out).toMatch(/still on node 1: shard \S+: SECONDARY_STATUS_UNKNOWN: still attached to node 1 \(left: SECONDARY_STATUS_UNKNOWN\)/);
    expect(output.out).toMatch(/still on node 1: vm prod\/web-1: VM_RUNNING: still running on node 1/);
    expect(output.out).not.toContain('restarting');
    expect(output.err).toMatch(/^rolling restart stopped: node 1 is not safe to restart: /);
    const data = await query(s.url, '{ node(id: "1") { ... on ClusterNode { availability safeToRestart } } }');
    expect(data.node).toMatchObject({ availability: 'ACTIVE', safeToRestart: false });
  });

  it('rolling-restart.ts on the demo cluster: the rollout pauses at the first node, names what it would interrupt and exits 4', async () => {
    const s = await startDemo({ latenciesMs: { cutOver: 20 }, restartDelayMs: 100, heartbeatIntervalMs: 100 });
    const output = await runExample('examples/rolling-restart.ts', s.url);
    expect(output.code).toBe(4);
    expect(output.out).toMatch(/node 1 not restarted: prod\/ledger: still running on node 1/);
    expect(output.out).toContain('rolling restart PAUSED');
  });
});

describe('examples/rolling-restart-script.ts: the same loop by hand', () => {
  it('restarts every storage node in turn and ends with every node ACTIVE and every shard attached', async () => {
    const s = await startDemo({ topology: storageCluster(), latenciesMs: { cutOver: 20 }, restartDelayMs: 100, heartbeatIntervalMs: 100 });
    const output = await runExample('examples/rolling-restart-script.ts', s.url);
    expect(output.err).toBe('');
    expect(output.code).toBe(0);
    expect(output.out).toContain('rolling restart of 4 storage node(s)');
    for (const id of ['1', '2', '3', '4']) expect(output.out).toContain(`node node-${id}: PAUSE_FOR_RESTART, restarting`);
    expect(output.out).toMatch(/drain: SUCCEEDED \d+\/\d+ moved/);
    expect(output.out).toContain('rolling restart done');
    const res = await fetch(s.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        query:
          '{ nodes { edges { node { schedulingPolicy availability } } } shards(first: 1000) { totalCount } operations(first: 100) { totalCount edges { node { state } } } }',
      }),
    });
    const { data } = (await res.json()) as any;
    expect(data.nodes.edges.every((e: any) => e.node.schedulingPolicy === 'ACTIVE' && e.node.availability === 'ACTIVE')).toBe(true);
    expect(data.shards.totalCount).toBe(40);
    expect(data.operations.totalCount).toBe(8);
    expect(data.operations.edges.every((e: any) => e.node.state === 'SUCCEEDED')).toBe(true);
  });
});
