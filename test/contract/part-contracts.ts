import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ClusterBackend } from '../../src/cluster/backend.ts';
import { BackendError } from '../../src/cluster/errors.ts';
import { OPTIONAL_PARTS, type OptionalPart } from '../../src/cluster/parts.ts';
import { expectCode, expectIdempotent, quiet, record, settle, STEP_MS, waitForEvent, type ContractHarness } from './cluster-backend-contract.ts';

/**
 * One contract per optional part of the plugin contract (src/cluster/parts.ts), run against
 * every backend that provides the part: each plugin alone and the composite of kubevirt +
 * pageserver. `PART_CONTRACTS` is typed by the parts table, so a part added there without a
 * contract here does not compile.
 */
interface PartFixtures {
  /** A Kubernetes node with a pod a ReplicaSet owns (evictable, no PDB). */
  podDrain?: { node: string; pod: { namespace: string; name: string } };
  /** A Kubernetes node, ACTIVE, uncordoned, without marks, Lockkeeper acting itself (no Harvester). */
  nodeMaintenance?: { node: string };
  /** A shard attached on `from` with a secondary on `to`; both nodes ACTIVE. */
  failover?: { shard: string; from: string; to: string };
  placement?: { shard: string; from: string; to: string };
  /** A registered node. */
  registry?: { node: string };
  /** A node the simulation may take offline and back. */
  simulation?: { node: string };
}

export interface PartHarness extends Pick<ContractHarness, 'backend' | 'advance' | 'quiesce' | 'actionTimeoutMs' | 'takeNodeOffline' | 'cleanup'> {
  parts: PartFixtures;
  /** A well-formed node id that does not exist. */
  unknownNode: string;
}

type Contract = (h: () => PartHarness) => void;

function fixture<K extends keyof PartFixtures>(h: PartHarness, part: K): NonNullable<PartFixtures[K]> {
  const f = h.parts[part];
  if (!f) throw new Error(`the backend provides ${part}: the harness must give parts.${part}`);
  return f;
}

async function until(h: PartHarness, what: string, cond: () => Promise<boolean>): Promise<void> {
  const limit = h.actionTimeoutMs ?? 60_000;
  for (let waited = 0; !(await cond()); waited += STEP_MS) {
    if (waited > limit) throw new Error(`${what}: not within ${limit} ms`);
    await h.advance(STEP_MS);
  }
}

const ids = (rows: { id: string }[]) => rows.map((r) => r.id);

const PART_CONTRACTS: { [K in OptionalPart]: Contract } = {
  pageVms(get) {
    it('one page of listVms in its order, and the count of all, also filtered', async () => {
      const b = get().backend;
      const all = await b.listVms();
      const page = await b.pageVms!({}, (total) => ({ offset: Math.min(1, total), limit: 2 }));
      expect(page.totalCount).toBe(all.length);
      expect(ids(page.rows)).toEqual(ids(all).slice(1, 3));
      const node = all[0]?.nodeId;
      if (node) {
        const filtered = await b.pageVms!({ nodeId: node }, (total) => ({ offset: 0, limit: total }));
        expect(ids(filtered.rows)).toEqual(ids(await b.listVms({ nodeId: node })));
      }
    });
  },
  pageShards(get) {
    it('one page of listShards in its order, and the count of all, also filtered', async () => {
      const b = get().backend;
      const all = await b.listShards();
      const page = await b.pageShards!({}, (total) => ({ offset: Math.min(1, total), limit: 2 }));
      expect(page.totalCount).toBe(all.length);
      expect(ids(page.rows)).toEqual(ids(all).slice(1, 3));
      const node = all[0]?.attachedNodeId;
      if (node) {
        const filtered = await b.pageShards!({ attachedNodeId: node }, (total) => ({ offset: 0, limit: total }));
        expect(ids(filtered.rows)).toEqual(ids(await b.listShards({ attachedNodeId: node })));
      }
    });
  },
  beforeLeading(get) {
    it('resolves and changes nothing in the cluster: no event, the same nodes and shards', async () => {
      const h = get();
      await quiet(h);
      const before = { nodes: await h.backend.listNodes(), shards: await h.backend.listShards() };
      const rec = record(h.backend);
      await settle(h, h.backend.beforeLeading!());
      await quiet(h);
      rec.stop();
      expect(rec.events).toEqual([]);
      expect({ nodes: await h.backend.listNodes(), shards: await h.backend.listShards() }).toEqual(before);
    });
  },
  simulation(get) {
    it('a node set offline reads OFFLINE, and ACTIVE again once back; latencies and faults read back what was set', async () => {
      const h = get();
      const sim = h.backend.simulation!;
      const { node } = fixture(h, 'simulation');
      await settle(h, sim.setNodeOnline(node, false));
      expect((await h.backend.getNode(node))?.availability).toBe('OFFLINE');
      await settle(h, sim.setNodeOnline(node, true));
      await until(h, `node ${node} ACTIVE`, async () => (await h.backend.getNode(node))?.availability === 'ACTIVE');
      expect(sim.setLatencies({ cordon: 7 }).cordon).toBe(7);
      expect(sim.getLatencies().cordon).toBe(7);
      expect(sim.injectFaults({ stuck: ['contract-vm'] }).stuck).toEqual(['contract-vm']);
      expect(sim.getFaults().stuck).toEqual(['contract-vm']);
      expect(sim.clearFaults().stuck).toEqual([]);
    });
  },
  failover(get) {
    it('unknown node and unknown shard reject NotFound', async () => {
      const h = get();
      const { from, to } = fixture(h, 'failover');
      await expectCode(h, h.backend.failover!.setNodeAvailability(h.unknownNode, 'OFFLINE'), 'NotFound');
      await expectCode(h, h.backend.failover!.failOverShard('00000000000000000000000000000000-0001', { fromNodeId: from, toNodeId: to }), 'NotFound');
    });

    it('neon:H5d: the shard of a lost node is attached to the node given, and emits', async () => {
      const h = get();
      const { shard, from, to } = fixture(h, 'failover');
      if (h.takeNodeOffline) await h.takeNodeOffline(from);
      else await settle(h, h.backend.failover!.setNodeAvailability(from, 'OFFLINE'));
      const rec = record(h.backend);
      await settle(h, h.backend.failover!.failOverShard(shard, { fromNodeId: from, toNodeId: to }));
      expect((await h.backend.getShard(shard))?.attachedNodeId).toBe(to);
      await waitForEvent(h, rec, (e) => e.type === 'shardChanged' && e.shard.id === shard && e.shard.attachedNodeId === to);
      rec.stop();
    });
  },
  placement(get) {
    it('describeShard: null for an unknown shard, the generation and secondaries wanted for a known one', async () => {
      const h = get();
      const { shard } = fixture(h, 'placement');
      expect(await h.backend.placement!.describeShard('00000000000000000000000000000000-0001')).toBeNull();
      const details = await h.backend.placement!.describeShard(shard);
      expect(details).toMatchObject({ id: shard, reconciling: false });
      expect(typeof details!.generation).toBe('number');
      expect(details!.secondaryCount).toBeGreaterThanOrEqual(1);
    });

    it('zone and policy persist and read back on the shard; moving nothing', async () => {
      const h = get();
      const { shard, from } = fixture(h, 'placement');
      await settle(h, h.backend.placement!.setPreferredZone(shard, 'contract-zone'));
      await settle(h, h.backend.placement!.setShardPolicy(shard, { policy: 'ESSENTIAL' }));
      expect(await h.backend.getShard(shard)).toMatchObject({ preferredZone: 'contract-zone', policy: 'ESSENTIAL', attachedNodeId: from });
    });

    it('placeShard moves the attachment to the node given and keeps the old one as the secondary', async () => {
      const h = get();
      const { shard, from, to } = fixture(h, 'placement');
      await settle(h, h.backend.placement!.placeShard(shard, { attachedNodeId: to, secondaryNodeIds: [from] }));
      await until(h, `shard ${shard} on ${to}`, async () => (await h.backend.getShard(shard))?.attachedNodeId === to);
      expect((await h.backend.getShard(shard))?.secondaryNodeIds).toEqual([from]);
    });
  },
  registry(get) {
    it('registration: null for an unknown node, the fields for a registered one; a repeat is unchanged; tombstones none; removeTombstone NotFound', async () => {
      const h = get();
      const { node } = fixture(h, 'registry');
      const registry = h.backend.registry!;
      expect(registry.registration(h.unknownNode)).toBeNull();
      const registration = registry.registration(node);
      // Neon's record keeps Neon's id: on a hyperconverged host, the pageserver's integer, not the host's name.
      expect(registration).toMatchObject({ nodeId: h.backend.nodeAliases?.external(node) ?? node });
      expect(await settle(h, registry.register(registration!))).toBe('unchanged');
      expect(await registry.tombstones()).toEqual([]);
      await expectCode(h, registry.removeTombstone(h.unknownNode), 'NotFound');
    });
  },
  podDrain(get) {
    it('k8s:K1: lists the pods of the node, narrowed by a label selector', async () => {
      const h = get();
      const { node, pod } = fixture(h, 'podDrain');
      const pods = await h.backend.podDrain!.listNodePods(node, '');
      expect(pods.map((p) => `${p.namespace}/${p.name}`)).toContain(`${pod.namespace}/${pod.name}`);
      expect(await h.backend.podDrain!.listNodePods(node, 'contract-label=none')).toEqual([]);
    });

    it('k8s:K5, k8s:K8: an eviction is EVICTED and the pod then gone; an unknown pod is GONE and gone', async () => {
      const h = get();
      const { node, pod } = fixture(h, 'podDrain');
      const listed = (await h.backend.podDrain!.listNodePods(node, '')).find((p) => p.name === pod.name && p.namespace === pod.namespace)!;
      expect(await settle(h, h.backend.podDrain!.evictPod(pod, 0))).toEqual({ kind: 'EVICTED' });
      await until(h, `pod ${pod.name} gone`, () => h.backend.podDrain!.podGone({ ...pod, uid: listed.uid }));
      const unknown = { namespace: pod.namespace, name: 'contract-no-such-pod' };
      expect(await settle(h, h.backend.podDrain!.evictPod(unknown, 0))).toEqual({ kind: 'GONE' });
      expect(await h.backend.podDrain!.podGone({ ...unknown, uid: 'contract-uid' })).toBe(true);
    });
  },
  nodeMaintenance(get) {
    it('k8s:H3, k8s:H4: REQUESTED, RUNNING, COMPLETED read back on the node, each repeat changes nothing; clear removes the mark', async () => {
      const h = get();
      const { node } = fixture(h, 'nodeMaintenance');
      const marks = h.backend.nodeMaintenance!;
      expect(marks.delegate).toBeNull();
      for (const mark of ['REQUESTED', 'RUNNING', 'COMPLETED'] as const) {
        await settle(h, marks.markMaintenance(node, mark, { forced: true }));
        await until(h, `mark ${mark}`, async () => (await h.backend.getNode(node))?.maintenanceMark === mark);
        await expectIdempotent(h, { kind: 'node', id: node }, () => marks.markMaintenance(node, mark, { forced: true }));
      }
      await settle(h, marks.clearMaintenance(node));
      await until(h, 'mark cleared', async () => (await h.backend.getNode(node))?.maintenanceMark == null);
      expect((await h.backend.getNode(node))?.cordoned).toBe(false);
    });

    it('k8s:C9: no migration of ours on the node: nothing cancelled; an unknown node is NotFound', async () => {
      const h = get();
      const { node } = fixture(h, 'nodeMaintenance');
      expect(await settle(h, h.backend.nodeMaintenance!.cancelMigrations(node))).toEqual([]);
      await expectCode(h, h.backend.nodeMaintenance!.markMaintenance(h.unknownNode, 'REQUESTED', { forced: false }), 'NotFound');
    });
  },
  hosts(get) {
    it('names only nodes the backend has, each on a host of its own', async () => {
      const h = get();
      const hosts = h.backend.hosts!();
      expect(new Set(Object.values(hosts)).size).toBe(Object.keys(hosts).length);
      for (const id of Object.keys(hosts)) expect(await h.backend.getNode(id)).not.toBeNull();
    });
  },
  nodeAliases(get) {
    it("a node's id in its member's terms and back is the same id; an id that is not aliased maps to itself", async () => {
      const h = get();
      const aliases = h.backend.nodeAliases!;
      for (const node of await h.backend.listNodes()) expect(aliases.internal(aliases.external(node.id))).toBe(node.id);
      expect(aliases.external(h.unknownNode)).toBe(h.unknownNode);
      expect(aliases.internal(h.unknownNode)).toBe(h.unknownNode);
    });
  },
  snapshot(get) {
    it('issue 33: JSON-serialisable snapshots, each naming a plugin and when it was read; changes nothing (no event)', async () => {
      const h = get();
      await quiet(h);
      // What the backend serves, read before and after: a backend serving no VMs (or no shards) refuses to list them.
      const state = async () => ({
        nodes: await h.backend.listNodes(),
        vms: h.backend.capabilities.vms ? await h.backend.listVms() : null,
        shards: h.backend.capabilities.shards ? await h.backend.listShards() : null,
      });
      const before = await state();
      const rec = record(h.backend);
      const snapshots = await settle(h, h.backend.snapshot!());
      await quiet(h);
      rec.stop();
      expect(rec.events).toEqual([]);
      expect(await state()).toEqual(before);
      expect(snapshots.length).toBeGreaterThanOrEqual(1);
      for (const s of snapshots) {
        expect(typeof s.plugin).toBe('string');
        expect(s.plugin.length).toBeGreaterThan(0);
        expect(Number.isFinite(s.takenAt)).toBe(true);
        expect(s.data).not.toBeUndefined();
      }
      // JSON only: what goes through JSON comes back the same (no functions, classes, undefined or Infinity).
      expect(JSON.parse(JSON.stringify(snapshots))).toEqual(snapshots);
      expect(structuredClone(snapshots)).toEqual(snapshots);
    });
  },
  confirmNodeDown(get) {
    it('k8s:U7: confirming an unknown node, or with node-down handling off, rejects with a BackendError', async () => {
      const h = get();
      const error = await settle(h, h.backend.confirmNodeDown!(h.unknownNode)).then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(BackendError);
      expect(['NotFound', 'Rejected']).toContain((error as BackendError).code);
    });
  },
};

/**
 * Runs the contract of every part in `provides` — the parts the backend provides, written
 * out, so that a part the backend (or a composite) lost fails the first case.
 */
export function describePartContracts(name: string, provides: readonly OptionalPart[], factory: () => Promise<PartHarness>): void {
  describe(`optional parts: ${name}`, () => {
    let h: PartHarness;
    beforeEach(async () => {
      h = await factory();
    });
    afterEach(async () => {
      await h?.cleanup();
    });

    it('provides exactly the parts it declares', () => {
      const present = OPTIONAL_PARTS.filter((part) => (h.backend as ClusterBackend)[part] !== undefined);
      expect(present.sort()).toEqual([...provides].sort());
    });

    for (const part of provides) describe(part, () => PART_CONTRACTS[part](() => h));
  });
}
