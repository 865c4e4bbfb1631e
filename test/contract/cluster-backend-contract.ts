import { afterEach, beforeEach, describe, expect, it, type TestContext } from 'vitest';
import type { ClusterBackend } from '../../src/cluster/backend.ts';
import { BackendError, type BackendErrorCode } from '../../src/cluster/errors.ts';
import type { ClusterEvent, VmMaintenanceTracking } from '../../src/cluster/types.ts';

/**
 * Ids that exist in the backend's seeded state. Shaped after what any backend can set up
 * (a Kubernetes API simulator with KubeVirt objects, a couple of simulated pageservers),
 * never after the fake's demo data.
 */
interface ContractFixtures {
  nodes: {
    /** ACTIVE and uncordoned; hosts `vms.migratable`; `shards.withSecondary` is attached here. */
    source: string;
    /** Another ACTIVE, uncordoned node that satisfies `vms.migratable`'s placement and holds the shard's secondary. */
    target: string;
  };
  /** Required when `capabilities.vms`. */
  vms?: {
    /** Running on `nodes.source`, live-migratable, with nothing in flight. */
    migratable: string;
    /** A running VM the backend reports as not live-migratable; its case is skipped when absent. */
    nonMigratable?: string;
  };
  /** Required when `capabilities.shards`. */
  shards?: {
    /** Attached to `nodes.source`, with a secondary on `nodes.target`. */
    withSecondary: string;
  };
  /** Well-formed ids that do not exist (defaults suit string ids; a backend with numeric ids overrides). */
  unknownIds?: { node?: string; vm?: string; shard?: string };
}

export interface ContractHarness {
  backend: ClusterBackend;
  /** Moves time on: VirtualClock.advance for simulated backends, a real sleep for network ones. */
  advance(ms: number): Promise<void>;
  fixtures: ContractFixtures;
  /** Takes a node OFFLINE. Absent: `backend.simulation.setNodeOnline` is used, or the cases that need it are skipped. */
  takeNodeOffline?(nodeId: string): Promise<void>;
  /**
   * Resolves once every event of what happened so far has been delivered to watchers (the
   * definite signal that an event not seen by then will not come). Absent: `advance(QUIET_MS)`,
   * which is exact on a virtual clock; a network backend must provide it rather than sleep.
   */
  quiesce?(): Promise<void>;
  /** How much harness time an action may take before the suite gives up (default 60 000 ms). */
  actionTimeoutMs?: number;
  cleanup(): Promise<void>;
}

export const STEP_MS = 50;
/** Virtual time in which a simulated backend delivers late events of an earlier action (see ContractHarness.quiesce). */
const QUIET_MS = 200;

export const quiet = (h: Pick<ContractHarness, 'quiesce' | 'advance'>): Promise<void> => (h.quiesce ? h.quiesce() : h.advance(QUIET_MS));

/** Drives time until `promise` settles, so actions that take latency neither hang nor race. */
export async function settle<T>(h: Pick<ContractHarness, 'advance' | 'actionTimeoutMs'>, promise: Promise<T>): Promise<T> {
  let done = false;
  promise.then(
    () => (done = true),
    () => (done = true),
  );
  const limit = h.actionTimeoutMs ?? 60_000;
  for (let waited = 0; !done; waited += STEP_MS) {
    if (waited > limit) throw new Error(`action did not settle within ${limit} ms`);
    await h.advance(STEP_MS);
  }
  return promise;
}

export async function expectCode(
  h: Pick<ContractHarness, 'advance' | 'actionTimeoutMs'>,
  promise: Promise<unknown>,
  ...codes: BackendErrorCode[]
): Promise<BackendError> {
  const error = await settle(h, promise).then(
    () => expect.fail(`expected a BackendError ${codes.join(' or ')}, but the call succeeded`),
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(BackendError);
  expect(codes).toContain((error as BackendError).code);
  return error as BackendError;
}

export type Subject = { kind: 'node' | 'vm' | 'shard'; id: string };

function concerns(e: ClusterEvent, s: Subject): boolean {
  switch (e.type) {
    case 'nodeChanged':
      return s.kind === 'node' && e.node.id === s.id;
    case 'nodeRemoved':
    case 'nodeReattached':
    case 'nodeLost':
      return s.kind === 'node' && e.nodeId === s.id;
    case 'vmChanged':
      return s.kind === 'vm' && e.vm.id === s.id;
    case 'vmRemoved':
      return s.kind === 'vm' && e.vmId === s.id;
    case 'shardChanged':
      return s.kind === 'shard' && e.shard.id === s.id;
    case 'nodeUpcall':
      return s.kind === 'node' && e.upcall.nodeId === s.id;
  }
}

/** Records events; `about` filters to one subject. */
export function record(backend: ClusterBackend) {
  const events: ClusterEvent[] = [];
  const stop = backend.watch((e) => events.push(e));
  return {
    events,
    stop,
    about: (s: Subject) => events.filter((e) => concerns(e, s)),
    clear: () => void events.splice(0),
  };
}

export async function waitForEvent(
  h: Pick<ContractHarness, 'advance' | 'actionTimeoutMs'>,
  rec: ReturnType<typeof record>,
  match: (e: ClusterEvent) => boolean,
): Promise<ClusterEvent> {
  const limit = h.actionTimeoutMs ?? 60_000;
  for (let waited = 0; ; waited += STEP_MS) {
    const found = rec.events.find(match);
    if (found) return found;
    if (waited > limit) throw new Error(`no matching event within ${limit} ms; saw ${JSON.stringify(rec.events)}`);
    await h.advance(STEP_MS);
  }
}

/**
 * The idempotency contract: once a result holds, asking again resolves and emits nothing.
 * Waits out late events of the first request before listening.
 */
export async function expectIdempotent(
  h: Pick<ContractHarness, 'backend' | 'advance' | 'actionTimeoutMs' | 'quiesce'>,
  subject: Subject,
  again: () => Promise<void>,
): Promise<void> {
  await quiet(h);
  const rec = record(h.backend);
  await settle(h, again());
  await quiet(h);
  rec.stop();
  expect(rec.about(subject)).toEqual([]);
}

export function describeClusterBackendContract(name: string, factory: () => Promise<ContractHarness>): void {
  describe(`ClusterBackend contract: ${name}`, () => {
    let h: ContractHarness;

    beforeEach(async () => {
      h = await factory();
    });

    afterEach(async () => {
      await h?.cleanup();
    });

    const unknown = () => ({
      node: h.fixtures.unknownIds?.node ?? 'no-such-node',
      vm: h.fixtures.unknownIds?.vm ?? 'no-such-namespace/no-such-vm',
      shard: h.fixtures.unknownIds?.shard ?? '00000000000000000000000000000000-0001',
    });

    /** Takes the node offline, or skips the test when the harness cannot. */
    async function takeOffline(ctx: TestContext, nodeId: string): Promise<void> {
      if (h.takeNodeOffline) return h.takeNodeOffline(nodeId);
      if (!h.backend.simulation) return ctx.skip('the harness cannot take a node offline');
      await h.backend.simulation.setNodeOnline(nodeId, false);
      await h.advance(STEP_MS);
      expect((await h.backend.getNode(nodeId))?.availability).toBe('OFFLINE');
    }

    function vmFixtures(ctx: TestContext) {
      if (!h.backend.capabilities.vms) ctx.skip('the backend serves no VMs');
      if (!h.fixtures.vms) throw new Error('capabilities.vms is set: the harness must provide fixtures.vms');
      return h.fixtures.vms;
    }

    function shardFixtures(ctx: TestContext) {
      if (!h.backend.capabilities.shards) ctx.skip('the backend serves no shards');
      if (!h.fixtures.shards) throw new Error('capabilities.shards is set: the harness must provide fixtures.shards');
      return h.fixtures.shards;
    }

    describe('nodes', () => {
      it('lists nodes with their fields; the fixture nodes are ACTIVE and uncordoned', async () => {
        const nodes = await h.backend.listNodes();
        expect(new Set(nodes.map((n) => n.id)).size).toBe(nodes.length);
        for (const n of nodes) {
          expect(['ACTIVE', 'WARMING_UP', 'OFFLINE']).toContain(n.availability);
          expect(typeof n.name).toBe('string');
          expect(typeof n.cordoned).toBe('boolean');
          expect(Array.isArray(n.roles)).toBe(true);
          expect(typeof n.labels).toBe('object');
        }
        for (const id of [h.fixtures.nodes.source, h.fixtures.nodes.target]) {
          expect(nodes.find((n) => n.id === id)).toMatchObject({ availability: 'ACTIVE', cordoned: false });
        }
      });

      it('getNode returns the listed node, null for an unknown id', async () => {
        const listed = (await h.backend.listNodes()).find((n) => n.id === h.fixtures.nodes.source);
        expect(await h.backend.getNode(h.fixtures.nodes.source)).toEqual(listed);
        expect(await h.backend.getNode(unknown().node)).toBeNull();
      });

      it('getNodes answers one slot per id, in order, null for unknown ids', async () => {
        const { source, target } = h.fixtures.nodes;
        const result = await h.backend.getNodes([target, unknown().node, source, target]);
        expect(result.map((n) => n?.id ?? null)).toEqual([target, null, source, target]);
        expect(await h.backend.getNodes([])).toEqual([]);
      });

      it('returns copies: changing a result changes nothing in the backend', async () => {
        const id = h.fixtures.nodes.source;
        const before = structuredClone(await h.backend.getNode(id));
        const got = (await h.backend.getNode(id))!;
        got.labels['contract-mutation'] = 'x';
        got.roles.push('contract-mutation');
        got.cordoned = true;
        (await h.backend.listNodes()).forEach((n) => (n.labels['contract-mutation'] = 'x'));
        (await h.backend.getNodes([id]))[0]!.roles.length = 0;
        expect(await h.backend.getNode(id)).toEqual(before);
      });

      it('cordonNode cordons and emits, uncordonNode reverses it; repeats change nothing', async () => {
        const id = h.fixtures.nodes.source;
        const subject = { kind: 'node' as const, id };
        const rec = record(h.backend);
        await settle(h, h.backend.cordonNode(id));
        expect((await h.backend.getNode(id))?.cordoned).toBe(true);
        await waitForEvent(h, rec, (e) => e.type === 'nodeChanged' && e.node.id === id && e.node.cordoned);
        await expectIdempotent(h, subject, () => h.backend.cordonNode(id));

        rec.clear();
        await settle(h, h.backend.uncordonNode(id));
        expect((await h.backend.getNode(id))?.cordoned).toBe(false);
        await waitForEvent(h, rec, (e) => e.type === 'nodeChanged' && e.node.id === id && !e.node.cordoned);
        await expectIdempotent(h, subject, () => h.backend.uncordonNode(id));
        rec.stop();
      });

      it('cordon and uncordon reject NotFound for an unknown node', async () => {
        await expectCode(h, h.backend.cordonNode(unknown().node), 'NotFound');
        await expectCode(h, h.backend.uncordonNode(unknown().node), 'NotFound');
      });

      it('rejects Unavailable when cordoning an OFFLINE node; reads still work', async (ctx) => {
        const id = h.fixtures.nodes.source;
        await takeOffline(ctx, id);
        await expectCode(h, h.backend.cordonNode(id), 'Unavailable');
        expect(await h.backend.getNode(id)).toMatchObject({ id, availability: 'OFFLINE', cordoned: false });
      });
    });

    describe('virtual machines', () => {
      it('lists VMs, filtered by node, namespace and labels', async (ctx) => {
        const { migratable } = vmFixtures(ctx);
        const vm = (await h.backend.getVm(migratable))!;
        expect(vm).toMatchObject({ nodeId: h.fixtures.nodes.source, status: 'Running', liveMigratable: true });
        expect((await h.backend.listVms()).map((v) => v.id)).toContain(migratable);

        const onSource = await h.backend.listVms({ nodeId: h.fixtures.nodes.source });
        expect(onSource.map((v) => v.id)).toContain(migratable);
        expect(onSource.every((v) => v.nodeId === h.fixtures.nodes.source)).toBe(true);

        const inNamespace = await h.backend.listVms({ namespace: vm.namespace });
        expect(inNamespace.map((v) => v.id)).toContain(migratable);
        expect(inNamespace.every((v) => v.namespace === vm.namespace)).toBe(true);

        const [labelKey, labelValue] = Object.entries(vm.labels)[0] ?? [];
        if (labelKey !== undefined) {
          const labelled = await h.backend.listVms({ labels: { [labelKey]: labelValue! } });
          expect(labelled.map((v) => v.id)).toContain(migratable);
          expect(labelled.every((v) => v.labels[labelKey] === labelValue)).toBe(true);
        }
        expect(await h.backend.listVms({ nodeId: unknown().node })).toEqual([]);
        expect(await h.backend.listVms({ labels: { 'contract.example/absent': 'x' } })).toEqual([]);
      });

      it('getVm and getVms: null for unknown ids, one slot per id in order', async (ctx) => {
        const { migratable } = vmFixtures(ctx);
        expect((await h.backend.getVm(migratable))?.id).toBe(migratable);
        expect(await h.backend.getVm(unknown().vm)).toBeNull();
        const slots = await h.backend.getVms([unknown().vm, migratable]);
        expect(slots.map((v) => v?.id ?? null)).toEqual([null, migratable]);
      });

      it('returns copies of VMs', async (ctx) => {
        const { migratable } = vmFixtures(ctx);
        const before = structuredClone(await h.backend.getVm(migratable));
        const got = (await h.backend.getVm(migratable))!;
        got.labels['contract-mutation'] = 'x';
        got.volumes.push({ name: 'contract-mutation', replicas: [] });
        got.nodeSelector['contract-mutation'] = 'x';
        (await h.backend.listVms())[0]!.labels['contract-mutation'] = 'x';
        expect(await h.backend.getVm(migratable)).toEqual(before);
      });

      it('migrateVm moves the VM to the given node and emits; a repeat changes nothing', async (ctx) => {
        const { migratable } = vmFixtures(ctx);
        const { source, target } = h.fixtures.nodes;
        const rec = record(h.backend);
        await settle(h, h.backend.migrateVm(migratable, { fromNodeId: source, toNodeId: target }));
        expect(await h.backend.getVm(migratable)).toMatchObject({ nodeId: target, status: 'Running' });
        await waitForEvent(h, rec, (e) => e.type === 'vmChanged' && e.vm.id === migratable && e.vm.nodeId === target && e.vm.status === 'Running');
        rec.stop();
        await expectIdempotent(h, { kind: 'vm', id: migratable }, () => h.backend.migrateVm(migratable, { fromNodeId: source, toNodeId: target }));
      });

      it('migrateVm without a target places the VM on another ready, uncordoned node', async (ctx) => {
        const { migratable } = vmFixtures(ctx);
        const { source } = h.fixtures.nodes;
        await settle(h, h.backend.migrateVm(migratable, { fromNodeId: source }));
        const vm = (await h.backend.getVm(migratable))!;
        expect(vm.status).toBe('Running');
        expect(vm.nodeId).not.toBeNull();
        expect(vm.nodeId).not.toBe(source);
        expect(await h.backend.getNode(vm.nodeId!)).toMatchObject({ availability: 'ACTIVE', cordoned: false });
      });

      it('migrateVm resolves at once, changing nothing, when the VM is not on fromNodeId', async (ctx) => {
        const { migratable } = vmFixtures(ctx);
        const before = await h.backend.getVm(migratable);
        await expectIdempotent(h, { kind: 'vm', id: migratable }, () => h.backend.migrateVm(migratable, { fromNodeId: h.fixtures.nodes.target }));
        expect(await h.backend.getVm(migratable)).toEqual(before);
      });

      it('migrateVm rejects Rejected for a VM that cannot live-migrate, naming the reason', async (ctx) => {
        const { nonMigratable } = vmFixtures(ctx);
        if (!nonMigratable) return ctx.skip('no non-migratable VM in the fixtures');
        const vm = (await h.backend.getVm(nonMigratable))!;
        expect(vm.liveMigratable).toBe(false);
        const error = await expectCode(h, h.backend.migrateVm(nonMigratable, { fromNodeId: vm.nodeId! }), 'Rejected');
        if (vm.liveMigratableReason) expect(error.message).toContain(vm.liveMigratableReason);
        expect(await h.backend.getVm(nonMigratable)).toEqual(vm);
      });

      it('migrateVm refuses a cordoned target and leaves the VM where it was', async (ctx) => {
        const { migratable } = vmFixtures(ctx);
        const { source, target } = h.fixtures.nodes;
        await settle(h, h.backend.cordonNode(target));
        await expectCode(h, h.backend.migrateVm(migratable, { fromNodeId: source, toNodeId: target }), 'Conflict', 'Rejected');
        expect(await h.backend.getVm(migratable)).toMatchObject({ nodeId: source, status: 'Running' });
      });

      it('stopVm halts and stops the VM and emits; a repeat changes nothing', async (ctx) => {
        const { migratable } = vmFixtures(ctx);
        const rec = record(h.backend);
        await settle(h, h.backend.stopVm(migratable));
        expect(await h.backend.getVm(migratable)).toMatchObject({ runStrategy: 'Halted', status: 'Stopped', nodeId: null });
        await waitForEvent(h, rec, (e) => e.type === 'vmChanged' && e.vm.id === migratable && e.vm.status === 'Stopped');
        rec.stop();
        await expectIdempotent(h, { kind: 'vm', id: migratable }, () => h.backend.stopVm(migratable));
      });

      it('startVm runs a stopped VM on the requested node with the run strategy asked; a repeat changes nothing', async (ctx) => {
        const { migratable } = vmFixtures(ctx);
        const { target } = h.fixtures.nodes;
        await settle(h, h.backend.stopVm(migratable));
        const rec = record(h.backend);
        await settle(h, h.backend.startVm(migratable, { runStrategy: 'RerunOnFailure', nodeId: target }));
        expect(await h.backend.getVm(migratable)).toMatchObject({ runStrategy: 'RerunOnFailure', status: 'Running', nodeId: target });
        await waitForEvent(h, rec, (e) => e.type === 'vmChanged' && e.vm.id === migratable && e.vm.status === 'Running');
        rec.stop();
        await expectIdempotent(h, { kind: 'vm', id: migratable }, () => h.backend.startVm(migratable, { runStrategy: 'RerunOnFailure', nodeId: target }));
      });

      it('setVmMaintenanceStrategyLabel stores any value unvalidated, null removes it; repeats change nothing', async (ctx) => {
        const { migratable } = vmFixtures(ctx);
        const subject = { kind: 'vm' as const, id: migratable };
        const rec = record(h.backend);
        await settle(h, h.backend.setVmMaintenanceStrategyLabel(migratable, 'migrate'));
        expect((await h.backend.getVm(migratable))?.maintenanceStrategyLabel).toBe('migrate');
        await waitForEvent(h, rec, (e) => e.type === 'vmChanged' && e.vm.id === migratable && e.vm.maintenanceStrategyLabel === 'migrate');
        await expectIdempotent(h, subject, () => h.backend.setVmMaintenanceStrategyLabel(migratable, 'migrate'));

        await settle(h, h.backend.setVmMaintenanceStrategyLabel(migratable, null));
        expect((await h.backend.getVm(migratable))?.maintenanceStrategyLabel).toBeNull();
        await waitForEvent(h, rec, (e) => e.type === 'vmChanged' && e.vm.id === migratable && e.vm.maintenanceStrategyLabel === null);
        await expectIdempotent(h, subject, () => h.backend.setVmMaintenanceStrategyLabel(migratable, null));
        rec.stop();
      });

      it('setVmTracking records and removes tracking; repeats change nothing', async (ctx) => {
        const { migratable } = vmFixtures(ctx);
        const subject = { kind: 'vm' as const, id: migratable };
        const tracking: VmMaintenanceTracking = { nodeName: 'node-x', strategy: 'ShutdownAndRestartAfterDisable', savedRunStrategy: 'Always' };
        const rec = record(h.backend);
        await settle(h, h.backend.setVmTracking(migratable, tracking));
        expect((await h.backend.getVm(migratable))?.tracking).toEqual(tracking);
        await waitForEvent(h, rec, (e) => e.type === 'vmChanged' && e.vm.id === migratable && e.vm.tracking !== null);
        await expectIdempotent(h, subject, () => h.backend.setVmTracking(migratable, { ...tracking }));

        await settle(h, h.backend.setVmTracking(migratable, null));
        expect((await h.backend.getVm(migratable))?.tracking).toBeNull();
        await expectIdempotent(h, subject, () => h.backend.setVmTracking(migratable, null));
        rec.stop();
      });

      it('every VM action rejects NotFound for an unknown VM', async (ctx) => {
        vmFixtures(ctx);
        const id = unknown().vm;
        const { source } = h.fixtures.nodes;
        await expectCode(h, h.backend.migrateVm(id, { fromNodeId: source }), 'NotFound');
        await expectCode(h, h.backend.stopVm(id), 'NotFound');
        await expectCode(h, h.backend.startVm(id, { runStrategy: 'Always' }), 'NotFound');
        await expectCode(h, h.backend.setVmMaintenanceStrategyLabel(id, 'Migrate'), 'NotFound');
        await expectCode(h, h.backend.setVmTracking(id, null), 'NotFound');
      });

      it("rejects Unavailable when the VM's node is OFFLINE; reads still work", async (ctx) => {
        const { migratable } = vmFixtures(ctx);
        const { source, target } = h.fixtures.nodes;
        await takeOffline(ctx, source);
        await expectCode(h, h.backend.migrateVm(migratable, { fromNodeId: source, toNodeId: target }), 'Unavailable');
        await expectCode(h, h.backend.stopVm(migratable), 'Unavailable');
        expect(await h.backend.getVm(migratable)).toMatchObject({ nodeId: source });
        expect((await h.backend.listVms({ nodeId: source })).map((v) => v.id)).toContain(migratable);
      });

      it('VM methods reject Rejected when the backend serves no VMs', async (ctx) => {
        if (h.backend.capabilities.vms) return ctx.skip('the backend serves VMs');
        await expectCode(h, h.backend.listVms(), 'Rejected');
        await expectCode(h, h.backend.getVm(unknown().vm), 'Rejected');
        await expectCode(h, h.backend.stopVm(unknown().vm), 'Rejected');
      });
    });

    describe('tenant shards', () => {
      it('lists shards, filtered by attached node, secondary node and tenant', async (ctx) => {
        const { withSecondary } = shardFixtures(ctx);
        const { source, target } = h.fixtures.nodes;
        const shard = (await h.backend.getShard(withSecondary))!;
        expect(shard).toMatchObject({ attachedNodeId: source });
        expect(shard.secondaryNodeIds).toContain(target);

        const attached = await h.backend.listShards({ attachedNodeId: source });
        expect(attached.map((s) => s.id)).toContain(withSecondary);
        expect(attached.every((s) => s.attachedNodeId === source)).toBe(true);
        const secondaries = await h.backend.listShards({ secondaryNodeId: target });
        expect(secondaries.map((s) => s.id)).toContain(withSecondary);
        expect(secondaries.every((s) => s.secondaryNodeIds.includes(target))).toBe(true);
        const tenant = await h.backend.listShards({ tenantId: shard.tenantId });
        expect(tenant.map((s) => s.id)).toContain(withSecondary);
        expect(tenant.every((s) => s.tenantId === shard.tenantId)).toBe(true);
        expect((await h.backend.listShards()).length).toBeGreaterThanOrEqual(tenant.length);
        expect(await h.backend.listShards({ attachedNodeId: unknown().node })).toEqual([]);
      });

      it('getShard and getShards: null for unknown ids, one slot per id in order; results are copies', async (ctx) => {
        const { withSecondary } = shardFixtures(ctx);
        expect(await h.backend.getShard(unknown().shard)).toBeNull();
        const slots = await h.backend.getShards([withSecondary, unknown().shard]);
        expect(slots.map((s) => s?.id ?? null)).toEqual([withSecondary, null]);
        const before = structuredClone(await h.backend.getShard(withSecondary));
        slots[0]!.secondaryNodeIds.push('contract-mutation');
        slots[0]!.attachedNodeId = 'contract-mutation';
        expect(await h.backend.getShard(withSecondary)).toEqual(before);
      });

      it('getSecondaryStatus reports download progress; NotFound for an unknown shard', async (ctx) => {
        const { withSecondary } = shardFixtures(ctx);
        const status = await h.backend.getSecondaryStatus(withSecondary, h.fixtures.nodes.target);
        expect(status.bytesTotal).toBeGreaterThanOrEqual(0);
        expect(status.bytesDownloaded).toBeGreaterThanOrEqual(0);
        expect(status.bytesDownloaded).toBeLessThanOrEqual(status.bytesTotal);
        expect(status.heatmapMtime === null || typeof status.heatmapMtime === 'number').toBe(true);
        await expectCode(h, h.backend.getSecondaryStatus(unknown().shard, h.fixtures.nodes.target), 'NotFound');
      });

      it('cutOverShard swaps attached and secondary and emits; a repeat changes nothing', async (ctx) => {
        const { withSecondary } = shardFixtures(ctx);
        const { source, target } = h.fixtures.nodes;
        const rec = record(h.backend);
        await settle(h, h.backend.cutOverShard(withSecondary, { fromNodeId: source, toNodeId: target }));
        const shard = (await h.backend.getShard(withSecondary))!;
        expect(shard.attachedNodeId).toBe(target);
        expect(shard.secondaryNodeIds).toContain(source);
        expect(shard.secondaryNodeIds).not.toContain(target);
        await waitForEvent(h, rec, (e) => e.type === 'shardChanged' && e.shard.id === withSecondary && e.shard.attachedNodeId === target);
        rec.stop();
        await expectIdempotent(h, { kind: 'shard', id: withSecondary }, async () => {
          await h.backend.cutOverShard(withSecondary, { fromNodeId: source, toNodeId: target });
        });
      });

      it('cutOverShard rejects Conflict when fromNodeId is not attached or toNodeId holds no secondary', async (ctx) => {
        const { withSecondary } = shardFixtures(ctx);
        const { target } = h.fixtures.nodes;
        const before = await h.backend.getShard(withSecondary);
        await expectCode(h, h.backend.cutOverShard(withSecondary, { fromNodeId: target, toNodeId: target }), 'Conflict');
        const elsewhere = (await h.backend.listNodes()).find((n) => n.id !== before!.attachedNodeId && !before!.secondaryNodeIds.includes(n.id));
        if (elsewhere) {
          await expectCode(h, h.backend.cutOverShard(withSecondary, { fromNodeId: before!.attachedNodeId, toNodeId: elsewhere.id }), 'Conflict');
        }
        expect(await h.backend.getShard(withSecondary)).toEqual(before);
      });

      it('cutOverShard rejects NotFound for an unknown shard', async (ctx) => {
        shardFixtures(ctx);
        const { source, target } = h.fixtures.nodes;
        await expectCode(h, h.backend.cutOverShard(unknown().shard, { fromNodeId: source, toNodeId: target }), 'NotFound');
      });

      it('cutOverShard rejects Unavailable when the destination is OFFLINE and changes nothing', async (ctx) => {
        const { withSecondary } = shardFixtures(ctx);
        const { source, target } = h.fixtures.nodes;
        const before = await h.backend.getShard(withSecondary);
        await takeOffline(ctx, target);
        await expectCode(h, h.backend.cutOverShard(withSecondary, { fromNodeId: source, toNodeId: target }), 'Unavailable');
        expect(await h.backend.getShard(withSecondary)).toEqual(before);
      });

      it('shard methods reject Rejected when the backend serves no shards', async (ctx) => {
        if (h.backend.capabilities.shards) return ctx.skip('the backend serves shards');
        await expectCode(h, h.backend.listShards(), 'Rejected');
        await expectCode(h, h.backend.getShard(unknown().shard), 'Rejected');
      });
    });

    describe('events', () => {
      it('unsubscribing stops delivery to that listener only', async () => {
        const id = h.fixtures.nodes.source;
        const gone: ClusterEvent[] = [];
        const unsubscribe = h.backend.watch((e) => gone.push(e));
        const rec = record(h.backend);
        unsubscribe();
        await settle(h, h.backend.cordonNode(id));
        await waitForEvent(h, rec, (e) => e.type === 'nodeChanged' && e.node.id === id);
        rec.stop();
        expect(gone).toEqual([]);
      });

      it('events carry the state after the change, as copies', async () => {
        const id = h.fixtures.nodes.source;
        const rec = record(h.backend);
        await settle(h, h.backend.cordonNode(id));
        const event = await waitForEvent(h, rec, (e) => e.type === 'nodeChanged' && e.node.id === id);
        rec.stop();
        const current = structuredClone(await h.backend.getNode(id));
        expect(event).toEqual({ type: 'nodeChanged', node: current });
        if (event.type === 'nodeChanged') event.node.labels['contract-mutation'] = 'x';
        expect(await h.backend.getNode(id)).toEqual(current);
      });
    });
  });
}
