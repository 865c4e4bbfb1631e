import type { OperationSettings } from '../../src/config/schema.ts';
import type { KubevirtOptionsInput } from '../../plugins/kubevirt/index.ts';
import type { K8sObject, K8sSim, K8sSimOptions } from '../../simulators/kubernetes/index.ts';
import type { SimShardSpec } from '../../simulators/pageserver/index.ts';
import { kubevirtApp, type KubevirtTestApp } from './kubevirt-app.ts';
import { startSimCluster, type SimCluster } from './pageserver-cluster.ts';
import { VirtualClock } from './virtual-clock.ts';

/**
 * Hyperconverged hosts (issue 26 points 3 and 4): three Kubernetes worker nodes n1–n3, each
 * also pageserver 1–3 (`pageservers[].kubernetesNode`), so one node carries VMs, pods and
 * shards. The whole app over kubevirt + pageserver combined, one virtual clock for the
 * Kubernetes simulator, the pageservers, both plugins and the engine. The Kubernetes
 * scenarios (k8s:scenario-1, -2, -8, -9) run on it with shards on the node.
 */
export interface HyperconvergedApp {
  t: KubevirtTestApp;
  c: SimCluster;
  clock: VirtualClock;
  /** Moves the shared clock in `stepMs` steps (default 100 ms), idle between them, until `cond` holds; fails after 30 min of virtual time. */
  drive(cond: () => boolean | Promise<boolean>, what: string, stepMs?: number): Promise<void>;
  /** Checks the pageservers' safety invariants and stops everything. */
  stop(): Promise<void>;
}

/** Pageserver N runs on Kubernetes node nN. */
const HOSTS = { 1: 'n1', 2: 'n2', 3: 'n3' } as const;
/** One unsharded tenant attached on n1 (pageserver 1) with its secondary on n2. */
export const SHARD_ON_N1: SimShardSpec = { tenant: 1, attached: 1, secondaries: [2] };

export async function hyperconvergedApp(
  seed: (sim: K8sSim) => void,
  {
    shards = [SHARD_ON_N1],
    settings = {},
    simOptions = {},
    plugin = {},
  }: { shards?: SimShardSpec[]; settings?: Partial<OperationSettings>; simOptions?: K8sSimOptions; plugin?: KubevirtOptionsInput } = {},
): Promise<HyperconvergedApp> {
  const clock = new VirtualClock();
  const c = await startSimCluster({ nodes: [{ id: 1 }, { id: 2 }, { id: 3 }], shards }, { clock });
  let t: KubevirtTestApp;
  try {
    const pageserver = await c.startController({}, { hosts: HOSTS });
    t = await kubevirtApp(
      (sim) => {
        for (const n of Object.values(HOSTS)) sim.addNode(n, { roles: ['worker'] });
        seed(sim);
      },
      settings,
      { msPerGraceSecond: 1, ...simOptions },
      { clock, combine: [pageserver], plugin: { vmActionTimeoutMs: 3_600_000, migrationBackstopMs: 3_600_000, ...plugin } },
    );
  } catch (e) {
    await c.close();
    throw e;
  }
  return {
    t,
    c,
    clock,
    async drive(cond, what, stepMs = 100) {
      for (let ms = 0; !(await cond()); ms += stepMs) {
        if (ms > 1_800_000) throw new Error(`${what}: not within 30 min of virtual time`);
        await c.idle();
        await clock.advance(stepMs);
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    },
    async stop() {
      c.safety.assertSafe();
      await t.stop();
      await c.close();
    },
  };
}

/** Pods on `node` other than VMs' launcher pods (those go with their VMs, k8s:K1), by name. */
export function nonLauncherPods(sim: K8sSim, node: string): string[] {
  return sim
    .podsOn(node)
    .filter((p: K8sObject) => p.metadata.labels?.['kubevirt.io'] !== 'virt-launcher')
    .map((p: K8sObject) => p.metadata.name as string)
    .sort();
}

/**
 * Calls `at` with the simulator's state at the instant a node's `harvesterhci.io/maintain-status`
 * first becomes `completed` (Lockkeeper's or Harvester's write), synchronously in the store.
 */
export function onMarkedCompleted(sim: K8sSim, node: string, at: () => void): () => void {
  let seen = false;
  return sim.store.subscribe((e) => {
    if (seen || e.resource.plural !== 'nodes' || e.object.metadata.name !== node) return;
    if (e.object.metadata.annotations?.['harvesterhci.io/maintain-status'] !== 'completed') return;
    seen = true;
    at();
  });
}
