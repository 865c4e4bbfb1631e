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
});

describe('lockkeeper simulator --tenants N --hyperconverged (issue 26)', () => {
  it('puts pageserver N on Kubernetes node node-N: the gateway sees one node per host, with both sides', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lk-sim-hc-'));
    sim = await startSimulator({
      configOut: join(dir, 'lockkeeper.config.json'),
      nodes: 2,
      vmsPerNode: 1,
      tenants: 1,
      shardsPerTenant: 1,
      hyperconverged: true,
    });
    const config = JSON.parse(readFileSync(sim.configFile, 'utf8'));
    expect(config.plugins[1].options.pageservers.map((p: { id: number; kubernetesNode: string }) => [p.id, p.kubernetesNode])).toEqual([
      [1, 'node-1'],
      [2, 'node-2'],
    ]);
    db = await openDatabase({ url: `file:${join(dir, 'lockkeeper.db')}` });
    const d = db;
    backend = await createBackendFromConfig(config.plugins, {
      clock: systemClock,
      configDir: dir,
      log: createLogger('silent'),
      storeFor: (plugin) => new PrismaPluginStore(d.prisma, plugin),
    });
    const nodes = await backend.listNodes();
    expect(nodes.map((n) => [n.id, n.sides?.map((s) => s.backend)])).toEqual([
      ['node-1', ['kubevirt', 'pageserver']],
      ['node-2', ['kubevirt', 'pageserver']],
    ]);
    const [shard] = await backend.listShards();
    expect(['node-1', 'node-2']).toContain(shard!.attachedNodeId);
  });
});
