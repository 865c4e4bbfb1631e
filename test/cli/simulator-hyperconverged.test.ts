import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ClusterBackend } from '../../src/cluster/backend.ts';
import { systemClock } from '../../src/cluster/clock.ts';
import { createBackendFromConfig } from '../../src/config/plugin-registry.ts';
import { createLogger } from '../../src/logger.ts';
import { openDatabase, type Database } from '../../src/store/index.ts';
import { PrismaPluginStore } from '../../src/store/plugin-store.ts';
import { startSimulator, type RunningSimulator } from '../../simulators/simulator-process.ts';

let sim: RunningSimulator | undefined;
let backend: ClusterBackend | undefined;
let db: Database | undefined;
afterEach(async () => {
  await backend?.close();
  await sim?.close();
  await db?.close();
  backend = undefined;
  sim = undefined;
  db = undefined;
});

async function gateway(dir: string, config: { plugins: { name: string; options: Record<string, unknown> }[] }): Promise<ClusterBackend> {
  db = await openDatabase({ url: `file:${join(dir, 'lockkeeper.db')}` });
  const d = db;
  backend = await createBackendFromConfig(config.plugins, {
    clock: systemClock,
    configDir: dir,
    log: createLogger('silent'),
    storeFor: (plugin) => new PrismaPluginStore(d.prisma, plugin),
  });
  return backend;
}

/** Two nodes, one VM each, one unsharded tenant, in the layout asked for; its config as written. */
async function simulate(layout: { separateHosts?: boolean }) {
  const dir = mkdtempSync(join(tmpdir(), 'lk-sim-layout-'));
  sim = await startSimulator({ configOut: join(dir, 'lockkeeper.config.json'), nodes: 2, vmsPerNode: 1, tenants: 1, shardsPerTenant: 1, ...layout });
  return { dir, config: JSON.parse(readFileSync(sim.configFile, 'utf8')) };
}

describe('lockkeeper simulator --tenants N: hyperconverged by default, --separate-hosts on request (issue 26)', () => {
  it('by default puts pageserver N on Kubernetes node node-N: the gateway sees one node per host, with both sides', async () => {
    const { dir, config } = await simulate({});
    expect(config.plugins[1].options.pageservers.map((p: { id: number; kubernetesNode: string }) => [p.id, p.kubernetesNode])).toEqual([
      [1, 'node-1'],
      [2, 'node-2'],
    ]);
    await gateway(dir, config);
    const nodes = await backend!.listNodes();
    expect(nodes.map((n) => [n.id, n.sides?.map((s) => s.backend)])).toEqual([
      ['node-1', ['kubevirt', 'pageserver']],
      ['node-2', ['kubevirt', 'pageserver']],
    ]);
    const [shard] = await backend!.listShards();
    expect(['node-1', 'node-2']).toContain(shard!.attachedNodeId);
  });

  it('--separate-hosts: each pageserver is a host of its own, under its integer id beside the Kubernetes nodes', async () => {
    const { dir, config } = await simulate({ separateHosts: true });
    expect(config.plugins[1].options.pageservers.map((p: { id: number; kubernetesNode?: string }) => [p.id, p.kubernetesNode ?? null])).toEqual([
      [1, null],
      [2, null],
    ]);
    const nodes = await (await gateway(dir, config)).listNodes();
    expect(nodes.map((n) => n.id)).toEqual(['1', '2', 'node-1', 'node-2']);
    expect(nodes.every((n) => n.sides === undefined)).toBe(true);
  });
});
