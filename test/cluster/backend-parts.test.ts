import { describe, expect, it } from 'vitest';
import type { ClusterBackend } from '../../src/cluster/backend.ts';
import { combineBackends } from '../../src/cluster/composite.ts';
import { BackendError } from '../../src/cluster/errors.ts';
import { BACKEND_PARTS, OPTIONAL_PARTS, PartConflictError } from '../../src/cluster/parts.ts';
import { inProcessPlugins } from '../../src/config/plugin-registry.ts';
import { leaderOnlyBackend } from '../../src/leadership/leader-only-backend.ts';
import { HostConflictError, nodeAliases } from '../../src/cluster/hyperconverged.ts';

/** A backend serving `serves`, with every optional part given as a recognisable value. */
function stub(name: string, serves: { vms: boolean; shards: boolean }, parts: readonly string[]): ClusterBackend {
  const backend: Record<string, unknown> = { name, capabilities: serves, watch: () => () => {}, close: async () => {} };
  for (const part of parts) {
    backend[part] =
      BACKEND_PARTS[part as keyof typeof BACKEND_PARTS].shape.kind === 'object'
        ? { owner: name, act: async () => `${name}.${part}.act`, listThings: async () => `${name}.${part}.list` }
        : async function (this: { name: string }) {
            return `${this.name}.${part}`;
          };
  }
  return backend as unknown as ClusterBackend;
}

const ALL = [
  'beforeLeading',
  'confirmNodeDown',
  'failover',
  'hosts',
  'nodeAliases',
  'nodeMaintenance',
  'pageShards',
  'pageVms',
  'placement',
  'podDrain',
  'registry',
  'simulation',
  'snapshot',
] as const;

describe('the table of optional backend parts (issue 26)', () => {
  it('names every optional member of ClusterBackend, each with an owner, a shape and a contract', () => {
    expect([...OPTIONAL_PARTS].sort()).toEqual(ALL);
    for (const part of ALL) {
      expect(['vms', 'shards', 'sole', 'every']).toContain(BACKEND_PARTS[part].owner);
      expect(BACKEND_PARTS[part].contract.length).toBeGreaterThan(10);
    }
  });

  it('combineBackends forwards each part from its owner: shard controls from the shard backend, the Kubernetes parts from the one that has them', async () => {
    // kubevirt-like: VMs, pods, Harvester marks, node-down; pageserver-like: shards and their controls.
    const vms = stub('vm-side', { vms: true, shards: false }, ['pageVms', 'beforeLeading', 'podDrain', 'nodeMaintenance', 'confirmNodeDown']);
    const shards = stub('shard-side', { vms: false, shards: true }, ['pageShards', 'failover', 'placement', 'registry', 'simulation']);
    const both = combineBackends([vms, shards]);
    const owners: Record<string, string> = {};
    for (const part of ALL) {
      const value = both[part] as unknown;
      if (value === undefined) owners[part] = 'missing';
      else if (typeof value === 'function') owners[part] = String(await (value as () => Promise<unknown>)());
      else owners[part] = (value as { owner: string }).owner;
    }
    expect(owners).toEqual({
      beforeLeading: 'vm-side.beforeLeading',
      confirmNodeDown: 'vm-side.confirmNodeDown',
      failover: 'shard-side',
      // Not given by either stub: hosts is applied (and hidden) by the composite, which then sets nodeAliases itself.
      hosts: 'missing',
      nodeAliases: 'missing',
      nodeMaintenance: 'vm-side',
      pageShards: 'shard-side.pageShards',
      pageVms: 'vm-side.pageVms',
      placement: 'shard-side',
      podDrain: 'vm-side',
      registry: 'shard-side',
      simulation: 'shard-side',
      snapshot: 'missing',
    });
  });

  it('beforeLeading reaches every backend that has it', async () => {
    const calls: string[] = [];
    const a = { ...stub('a', { vms: true, shards: false }, []), beforeLeading: async () => void calls.push('a') };
    const b = { ...stub('b', { vms: false, shards: true }, []), beforeLeading: async () => void calls.push('b') };
    await combineBackends([a, b]).beforeLeading!();
    expect(calls.sort()).toEqual(['a', 'b']);
  });

  it('issue 33: snapshot gives every backend’s snapshots, concatenated in config order, also through a hyperconverged alias', async () => {
    const snap = (plugin: string, n: number) => Array.from({ length: n }, (_, i) => ({ plugin, takenAt: i, data: { i } }));
    const a = { ...stub('a', { vms: true, shards: false }, []), snapshot: async () => snap('a', 1) };
    const b = { ...stub('b', { vms: false, shards: true }, []), snapshot: async () => snap('b', 2), hosts: () => ({ '1': 'n1' }) };
    const c = stub('c', { vms: false, shards: false }, []);
    expect(await combineBackends([a, c, b]).snapshot!()).toEqual([
      { plugin: 'a', takenAt: 0, data: { i: 0 } },
      { plugin: 'b', takenAt: 0, data: { i: 0 } },
      { plugin: 'b', takenAt: 1, data: { i: 1 } },
    ]);
    expect(await combineBackends([c, b]).snapshot!()).toEqual(snap('b', 2));
    expect(combineBackends([c, stub('d', { vms: true, shards: false }, [])]).snapshot).toBeUndefined();
  });

  it('clearing the maintenance marks (one side’s) uncordons the node on every other side that has it: a hyperconverged host’s pageserver does not stay cordoned', async () => {
    const calls: string[] = [];
    const side = (name: string, serves: { vms: boolean; shards: boolean }, nodes: string[]) => ({
      ...stub(name, serves, []),
      getNode: async (id: string) => (nodes.includes(id) ? { id } : null),
      uncordonNode: async (id: string) => void calls.push(`${name}.uncordon ${id}`),
    });
    const marks = { delegate: false, owner: 'k', clearMaintenance: async (id: string) => void calls.push(`k.clear ${id}`) };
    const k = { ...side('k', { vms: true, shards: false }, ['n1', 'n2']), nodeMaintenance: marks } as unknown as ClusterBackend;
    const ps = side('ps', { vms: false, shards: true }, ['n1']) as unknown as ClusterBackend;
    const both = combineBackends([k, ps]);
    await both.nodeMaintenance!.clearMaintenance('n1');
    await both.nodeMaintenance!.clearMaintenance('n2');
    // The marks' side clears (uncordon included) in one update; only the other side is uncordoned, and only where it has the node.
    expect(calls).toEqual(['k.clear n1', 'ps.uncordon n1', 'k.clear n2']);
    // Everything else is the owner's object as it was.
    expect(both.nodeMaintenance!.delegate).toBe(false);
    expect((both.nodeMaintenance as unknown as { owner: string }).owner).toBe('k');
  });

  it('two backends that both provide a part with one owner are refused, not one of them silently dropped', () => {
    const a = stub('a', { vms: true, shards: false }, ['podDrain']);
    const b = stub('b', { vms: false, shards: true }, ['podDrain']);
    expect(() => combineBackends([a, b])).toThrow(PartConflictError);
    expect(() => combineBackends([a, b])).toThrow('plugins: more than one plugin provides podDrain (a, b); it has one owner');
  });

  it('the leader gate gates each part as the table says: reads pass on a stand-by, actions are refused', async () => {
    const backend = stub('k', { vms: true, shards: true }, ALL);
    const gated = leaderOnlyBackend(backend, () => false);
    // Method parts: pageVms, pageShards, beforeLeading and snapshot are reads; confirmNodeDown is an action.
    expect(await gated.pageVms!({}, () => ({ offset: 0, limit: 1 }))).toBe('k.pageVms');
    expect(await gated.pageShards!({}, () => ({ offset: 0, limit: 1 }))).toBe('k.pageShards');
    expect(await gated.beforeLeading!()).toBe('k.beforeLeading');
    expect(await gated.snapshot!()).toBe('k.snapshot');
    await expect(gated.confirmNodeDown!('n')).rejects.toThrow('confirmNodeDown refused: this replica is not the leader (ha:L2)');
    // Object parts: list* is a read on the Kubernetes parts, an action on the shard controls; the simulation is the test's.
    const object = (part: string) => gated[part as 'podDrain'] as unknown as { act(): Promise<string>; listThings(): Promise<string> };
    expect(await object('podDrain').listThings()).toBe('k.podDrain.list');
    expect(await object('nodeMaintenance').listThings()).toBe('k.nodeMaintenance.list');
    await expect(object('failover').listThings()).rejects.toBeInstanceOf(BackendError);
    expect(await object('simulation').act()).toBe('k.simulation.act');
    for (const part of ['podDrain', 'nodeMaintenance', 'failover', 'placement', 'registry']) {
      await expect(object(part).act()).rejects.toThrow('act refused: this replica is not the leader (ha:L2)');
    }
  });

  it('an object member the table does not list is gated whole, not handed back ungated', async () => {
    const backend = { ...stub('k', { vms: true, shards: false }, []), extra: { doSomething: async () => 'done' } } as unknown as ClusterBackend;
    const gated = leaderOnlyBackend(backend, () => false) as unknown as { extra: { doSomething(): Promise<string> } };
    await expect(gated.extra.doSomething()).rejects.toThrow('doSomething refused: this replica is not the leader (ha:L2)');
  });
});

describe('in-process backends are what a plugin declares (ha:B3)', () => {
  it('the fake plugin declares it; kubevirt and pageserver do not', async () => {
    expect(
      await inProcessPlugins([
        { name: 'kubevirt', options: {} },
        { name: 'fake', options: {} },
        { name: 'pageserver', options: {} },
      ]),
    ).toEqual(['fake']);
    expect(await inProcessPlugins([{ name: 'kubevirt', options: {} }])).toEqual([]);
  });
});

describe('hyperconverged hosts (issue 26)', () => {
  it('two pageservers named on one Kubernetes node are refused, naming both', () => {
    expect(() => nodeAliases({ '1': 'n1', '2': 'n1' })).toThrow(HostConflictError);
    expect(() => nodeAliases({ '1': 'n1', '2': 'n1' })).toThrow('pageservers 1 and 2 are both on Kubernetes node n1: one host runs one pageserver');
    const aliases = nodeAliases({ '1': 'n1', '2': 'n2' });
    expect([aliases.external('n1'), aliases.internal('2'), aliases.external('3'), aliases.internal('n9')]).toEqual(['1', 'n2', '3', 'n9']);
  });
});
