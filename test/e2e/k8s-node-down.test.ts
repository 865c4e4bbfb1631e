import { afterEach, describe, expect, it } from 'vitest';
import { createKubevirtBackend, kubevirtOptionsSchema, type KubevirtBackend } from '../../plugins/kubevirt/index.ts';

import type { K8sObject, K8sSim } from '../../simulators/kubernetes/index.ts';
import { eventually, kubevirtApp, nodeDownSettled, type KubevirtTestApp } from '../support/kubevirt-app.ts';
import { VirtualClock } from '../support/virtual-clock.ts';

// Literals, not imported from the code under test: a changed value must fail here (issue 26).
const NODE_DOWN_CONFIRMED = 'lockkeeper.io/node-down-confirmed';
const OUT_OF_SERVICE_TAINT = 'node.kubernetes.io/out-of-service';

/** k8s:scenario-8: node down (k8s:U1–U8), the kubevirt plugin's option, with one virtual clock for the simulator, plugin and engine. */
let t: KubevirtTestApp;
let extra: KubevirtBackend | null = null;
afterEach(async () => {
  await extra?.close();
  extra = null;
  await t?.stop();
});

const taintKeys = (name = 'n1') => (t.sim.node(name)!.spec.taints ?? []).map((x: { key: string }) => x.key);
const drained = (name = 'n1') => (t.sim.node(name)!.status.conditions ?? []).find((c: { type: string }) => c.type === 'Drained');
const taintWrites = () => t.sim.calls.filter((c) => c.resource === 'nodes' && c.verb === 'patch' && (c.body as K8sObject)?.spec?.taints !== undefined);
/**
 * Virtual time stands still while the plugin catches up with every change and its node-down
 * controller has acted on all it has seen: what is not written by then is not written at
 * this instant (a definite signal, not a real-time sleep).
 */
const settle = (backend: KubevirtBackend = t.backend) => nodeDownSettled(t.sim, backend);

async function app(clock: VirtualClock, seed: (sim: K8sSim) => void = () => {}, nodeDown: Record<string, unknown> = { enable: true }) {
  t = await kubevirtApp(
    (sim) => {
      for (const n of ['n1', 'n2', 'n3']) sim.addNode(n, { roles: ['worker'] });
      seed(sim);
    },
    {},
    {},
    { clock, plugin: { nodeDown, vmActionTimeoutMs: 3_600_000, migrationBackstopMs: 3_600_000 } },
  );
}

describe('k8s:scenario-8: node down', () => {
  it('Ready Unknown at t0 → t0+15 s drain taint and Drained=False; confirmed → 180 s later out-of-service, Drained=True, condition annotations; Ready again → all removed', async () => {
    const clock = new VirtualClock();
    await app(clock, (sim) => sim.addVm({ name: 'web', nodeName: 'n1', evictionStrategy: 'LiveMigrate' }));
    const t0 = clock.now();
    t.sim.setNodeReady('n1', false);
    await clock.advance(14_999);
    await settle();
    expect(taintKeys()).toEqual([]);
    await clock.advance(1);
    await eventually(() => drained() !== undefined);
    expect(taintWrites().at(-1)!.at).toBe(t0 + 15_000);
    expect(t.sim.node('n1')!.spec.taints).toEqual([{ key: 'kubevirt.io/drain', effect: 'NoSchedule', timeAdded: new Date(t0 + 15_000).toISOString() }]);
    expect(drained()).toMatchObject({
      status: 'False',
      reason: 'HarvesterNodeIsDraining',
      message: 'Node is draining due to kubelet/node not ready.',
      lastTransitionTime: new Date(t0 + 15_000).toISOString(),
    });
    // k8s:E3: KubeVirt's evacuation controller takes it from there (a VMIM, no eviction).
    await eventually(() => t.sim.migrations('default').some((m) => m.metadata.generateName === 'kubevirt-evacuation-'));

    // k8s:U7 Decision: past vmMigrationTimeout without confirmation, nothing more.
    await clock.advance(200_000);
    await settle();
    expect(taintKeys()).toEqual(['kubevirt.io/drain']);
    const confirmed = await t.gql(`mutation { confirmNodeDown(nodeId: "n1", reason: "power is off") { __typename ... on ClusterNode { id } } }`);
    expect(confirmed.data.confirmNodeDown).toEqual({ __typename: 'ClusterNode', id: 'n1' });
    expect(t.sim.node('n1')!.metadata.annotations?.[NODE_DOWN_CONFIRMED]).toBe(new Date(t0 + 215_000).toISOString());
    await eventually(() => drained()?.status === 'True');
    expect(t.sim.node('n1')!.spec.taints.find((x: { key: string }) => x.key === OUT_OF_SERVICE_TAINT)).toMatchObject({ effect: 'NoExecute' });
    expect(drained()).toMatchObject({ status: 'True', reason: 'HarvesterNodeIsDrained' });
    await eventually(() => t.sim.node('n1')!.metadata.annotations?.['harvesterhci.io/condition'] === 'Drained');
    expect(t.sim.node('n1')!.metadata.annotations?.['harvesterhci.io/condition-message']).toBe('Node is draining due to kubelet/node not ready.');

    t.sim.setNodeReady('n1', true);
    await eventually(() => taintKeys().length === 0 && drained() === undefined);
    const annotations = t.sim.node('n1')!.metadata.annotations ?? {};
    expect(Object.keys(annotations).filter((k) => k.startsWith('harvesterhci.io/condition') || k === NODE_DOWN_CONFIRMED)).toEqual([]);
  });

  it('confirmed early, out-of-service lands exactly vmMigrationTimeout after Drained=False (195 s after Unknown with the defaults, k8s:U6), also across a plugin restart', async () => {
    const clock = new VirtualClock();
    // k8s:U3: the taint is always KubeVirt's default key, whatever the CR's nodeDrainTaintKey says.
    await app(clock, (sim) => sim.setKubevirtConfig({ migrations: { nodeDrainTaintKey: 'example.com/drain' } }));
    const t0 = clock.now();
    t.sim.setNodeReady('n1', false);
    await clock.advance(15_000);
    await eventually(() => drained() !== undefined);
    await t.gql(`mutation { confirmNodeDown(nodeId: "n1") { __typename } }`);
    // A second plugin instance, started later, resumes from the conditions' timestamps (k8s:U7, vm:M6).
    await clock.advance(100_000);
    await t.backend.close();
    extra = await createKubevirtBackend({ kubeconfigPath: t.sim.kubeconfigFile(), clock, nodeDown: { enable: true } });
    await clock.advance(79_999);
    await settle(extra);
    expect(taintKeys()).toEqual(['kubevirt.io/drain']);
    await clock.advance(1);
    await eventually(() => taintKeys().includes(OUT_OF_SERVICE_TAINT));
    expect(taintWrites().at(-1)!.at).toBe(t0 + 195_000);
  });

  it('k8s:U2: Ready=False, the option off, or a Harvester upgrade (Upgrade or UpgradePlan) running: nothing; a drain taint without Drained starts the stage-2 clock when first seen (k8s:U8)', async () => {
    const clock = new VirtualClock();
    await app(clock, (sim) => sim.setHarvesterUpgrade(true));
    t.sim.setNodeReady('n2', false, 'False');
    t.sim.setNodeReady('n1', false);
    await clock.advance(1_000_000);
    await settle();
    expect(taintKeys('n1')).toEqual([]);
    expect(taintKeys('n2')).toEqual([]);
    expect(taintWrites()).toEqual([]);
    await t.stop();

    // upgrade-toolkit's UpgradePlan pauses it as well (k8s:U2, isOnUpgradeV2); once it has ended, the paused node is handled.
    await app(clock, (sim) => sim.setHarvesterUpgradePlan('Upgrading'));
    t.sim.setNodeReady('n1', false);
    await clock.advance(1_000_000);
    await settle();
    expect(taintWrites()).toEqual([]);
    t.sim.setHarvesterUpgradePlan('Succeeded');
    await clock.advance(15_000);
    await eventually(() => taintKeys().includes('kubevirt.io/drain'));
    await t.stop();

    await app(clock, () => {}, { enable: false });
    t.sim.setNodeReady('n1', false);
    await clock.advance(1_000_000);
    await settle();
    expect(taintKeys()).toEqual([]);
    await expect(t.backend.confirmNodeDown('n1')).rejects.toThrow(/node-down handling is off/);
    await t.stop();

    // Someone taints the node by hand while it does not report (a Ready node loses the taint at once: k8s:U5).
    await app(clock);
    t.sim.setNodeReady('n1', false);
    await clock.advance(5_000);
    const seen = clock.now();
    t.sim.setNodeTaints('n1', [{ key: 'kubevirt.io/drain', effect: 'NoSchedule' }]);
    await eventually(() => drained() !== undefined);
    expect(drained()).toMatchObject({ status: 'False', lastTransitionTime: new Date(seen).toISOString() });
    await t.backend.confirmNodeDown('n1');
    await clock.advance(180_000);
    await eventually(() => taintKeys().includes(OUT_OF_SERVICE_TAINT));
  });

  it('k8s:U4 across a restart: a node left with both taints but Drained=False (the restart fell between the writes) is finished as Harvester does', async () => {
    const clock = new VirtualClock();
    await app(clock, (sim) => {
      sim.setNodeReady('n1', false);
      sim.setNodeTaints('n1', [
        { key: 'kubevirt.io/drain', effect: 'NoSchedule' },
        { key: OUT_OF_SERVICE_TAINT, effect: 'NoExecute' },
      ]);
      const at = new Date(clock.now()).toISOString();
      sim.store.mutate(sim.def('nodes'), undefined, 'n1', (n) => {
        n.metadata.annotations = { ...n.metadata.annotations, [NODE_DOWN_CONFIRMED]: at };
        n.status.conditions.push({ type: 'Drained', status: 'False', reason: 'HarvesterNodeIsDraining', message: 'x', lastTransitionTime: at });
      });
    });
    await eventually(() => drained()?.status === 'True' && t.sim.node('n1')!.metadata.annotations?.['harvesterhci.io/condition'] === 'Drained');
    expect(drained()).toMatchObject({ reason: 'HarvesterNodeIsDrained', message: 'Node is draining due to kubelet/node not ready.' });
    expect(taintWrites()).toEqual([]);
  });

  it('k8s:U1: the setting defaults to Harvester’s values but off, rejects period ≤ 0 and negative timeouts, and reads 0 as 180', () => {
    expect(kubevirtOptionsSchema.parse({}).nodeDown).toEqual({ enable: false, period: 15, vmMigrationTimeout: 180 });
    expect(kubevirtOptionsSchema.parse({ nodeDown: { vmMigrationTimeout: 0 } }).nodeDown.vmMigrationTimeout).toBe(180);
    expect(() => kubevirtOptionsSchema.parse({ nodeDown: { period: 0 } })).toThrow();
    expect(() => kubevirtOptionsSchema.parse({ nodeDown: { vmMigrationTimeout: -1 } })).toThrow();
  });
});
