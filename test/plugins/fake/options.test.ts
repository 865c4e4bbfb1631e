import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../support/virtual-clock.ts';
import fakePlugin, { createSimulatedCluster, DEFAULT_LATENCIES_MS, fakeOptionsSchema, generateTopology } from '../../../plugins/fake/index.ts';

const issues = (input: unknown) => {
  const result = fakeOptionsSchema.safeParse(input);
  expect(result.success).toBe(false);
  return JSON.stringify(result.error!.issues);
};

describe('fake plugin options', () => {
  it('defaults to the demo topology and documented timings', () => {
    expect(fakeOptionsSchema.parse({})).toEqual({
      topology: 'demo',
      latenciesMs: {},
      workloadLatenciesMs: {},
      slowdown: 1,
      restartDelayMs: 3000,
      heartbeatIntervalMs: 1000,
      secondaryDownloadBytesPerSecond: 16 * 1024 ** 2,
      seed: 1,
      latencySpike: { rate: 0, factor: 1 },
    });
  });

  it('slowdown (issue 30, point 5): 1 to 1000, refused outside', () => {
    expect(fakeOptionsSchema.parse({ slowdown: 20 }).slowdown).toBe(20);
    expect(fakeOptionsSchema.safeParse({ slowdown: 0.5 }).success).toBe(false);
    expect(fakeOptionsSchema.safeParse({ slowdown: 1001 }).success).toBe(false);
  });

  it('rejects unknown keys, naming them, at every level', () => {
    expect(issues({ topolgy: 'demo' })).toContain('topolgy');
    expect(issues({ latenciesMs: { migrat: 5 } })).toContain('migrat');
    expect(issues({ topology: { nodes: [{ id: '1', zon: 'a' }] } })).toContain('zon');
  });

  it('rejects an inline topology that refers to unknown nodes, with the path', () => {
    const text = issues({ topology: { nodes: [{ id: '1' }], vms: [{ name: 'x', nodeId: '7' }] } });
    expect(text).toContain('unknown node 7');
    expect(text).toContain('"vms",0,"nodeId"');
    expect(issues({ topology: { nodes: [{ id: '1' }], shards: [{ tenantId: 't', attachedNodeId: '1', secondaries: [{ nodeId: '1' }] }] } })).toContain(
      'another node',
    );
  });

  it('topology.generate: the generated cluster from config (the same as generateTopology), bounded and strict', async () => {
    const generate = { nodes: 6, zones: 3, vmsPerNode: 5, tenants: 10, shardsPerTenant: 4 };
    const backend = await fakePlugin.create(fakePlugin.optionsSchema.parse({ topology: { generate } }), {
      clock: new VirtualClock(),
      configDir: '.',
      log: { info: () => {}, warn: () => {} },
    });
    const nodes = await backend.listNodes();
    expect(nodes).toHaveLength(6);
    expect(new Set(nodes.map((n) => n.zone))).toEqual(new Set(['zone-a', 'zone-b', 'zone-c']));
    expect(await backend.listVms()).toHaveLength(30);
    const shards = await backend.listShards();
    expect(shards).toHaveLength(40);
    // The same cluster as from code.
    const fromCode = createSimulatedCluster({ topology: generateTopology(generate), clock: new VirtualClock() });
    expect(shards.map((s) => [s.id, s.attachedNodeId])).toEqual((await fromCode.listShards()).map((s) => [s.id, s.attachedNodeId]));
    await backend.close();
    await fromCode.close();

    expect(issues({ topology: { generate: { nodes: 2, vmsPerNod: 1 } } })).toContain('vmsPerNod');
    expect(issues({ topology: { generate: { zones: 2 } } })).toContain('nodes');
    expect(issues({ topology: { generate: { nodes: 0 } } })).toContain('nodes');
    expect(issues({ topology: { generate: { nodes: 10_000, vmsPerNode: 1_000 } } })).toContain('at most 2,000,000 workloads');
  });

  it('createSimulatedCluster validates the same way and merges partial latencies over the defaults', () => {
    expect(() => createSimulatedCluster({ seed: 1.5 })).toThrow();
    const cluster = createSimulatedCluster({ topology: 'empty', latenciesMs: { migrate: 5 }, clock: new VirtualClock() });
    expect(cluster.simulation.getLatencies()).toEqual({ ...DEFAULT_LATENCIES_MS, migrate: 5 });
  });

  it('the plugin creates a working cluster on the context clock', async () => {
    const clock = new VirtualClock();
    const warnings: unknown[] = [];
    const options = fakePlugin.optionsSchema.parse({ topology: { nodes: [{ id: '1' }] }, latenciesMs: { cordon: 100 } });
    const backend = await fakePlugin.create(options, { clock, configDir: '.', log: { info: () => {}, warn: (o) => warnings.push(o) } });
    expect(fakePlugin.name).toBe('fake');
    expect(backend.capabilities).toEqual({ vms: true, shards: true });
    const cordon = backend.cordonNode('1');
    await clock.advance(100);
    await cordon;
    expect((await backend.getNode('1'))?.cordoned).toBe(true);
    // A listener that throws is reported through the context log, not swallowed silently.
    backend.watch(() => {
      throw new Error('boom');
    });
    const uncordon = backend.uncordonNode('1');
    await clock.advance(100);
    await uncordon;
    expect(warnings).toHaveLength(1);
    await backend.close();
  });
});
