/**
 * Issue 33 point 4, case "k8s-16": 16 nodes in 2 zones on the Kubernetes + KubeVirt simulator
 * (simulators/kubernetes) with the kubevirt plugin (plugins/kubevirt): VMs that live-migrate,
 * pods owned by StatefulSets and ReplicaSets, PodDisruptionBudgets over some of them. The
 * snapshot is the plugin's own (`KubevirtBackend.snapshot()`), loaded by
 * rehearsal/loaders/kubevirt.ts for every history run, sample and real run
 * (bench/rehearsal-harness.ts has the method).
 *
 * The loader draws, per workload: VM_MIGRATE for each VMI (`namespace/name`), POD_EVICT for
 * each pod's termination (`namespace/name`), VM_START / VM_STOP (not played here: every VM
 * migrates); the runner draws NODE_RESTART per node (its name). The nature below keys its
 * typical durations by the same ids.
 *
 * Planted after the history: StatefulSet `prod/ledger` (1 replica) on n08, the middle of the
 * rollout, under a budget with minAvailable 1 = its replicas: its eviction answers 429 until the
 * maintenance deadline (30 min) and the rollout pauses on n08. That pause comes from the
 * snapshot (the budget and the pod), not from history.
 */
import type { BackendSnapshot } from '../src/cluster/rehearsal.ts';
import { DEFAULT_CONFIG } from '../src/config/defaults.ts';
import { createPrng } from '../src/domain/prng.ts';
import type { RolloutInput } from '../src/operations/rollouts/engine.ts';
import { createKubevirtBackend } from '../plugins/kubevirt/index.ts';
import type { KubevirtSnapshotData, SnapshotObject } from '../plugins/kubevirt/snapshot.ts';
import { K8sSim } from '../simulators/kubernetes/index.ts';
import { type AccuracyCase, DRIFT, MIGRATE_MS, MIGRATE_SIGMA, min, type Nature, natureKey, REAL_RUNS, RESTART_MS, RESTART_SIGMA } from './rehearsal-harness.ts';

const NODES = Array.from({ length: 16 }, (_, i) => `n${String(i + 1).padStart(2, '0')}`);
const VMS_PER_NODE = 3;
const NS = 'prod';
/** The rehearsal is measured with a history of 5 earlier runs only: a kubevirt run costs seconds of CPU (HTTP to the simulator). */
const HISTORY_SIZES = [5] as const;
const SAMPLES = 20;
/** Each pod's typical termination after its eviction: 5 to 45 s. */
const EVICT_MS = [5_000, 45_000] as const;
const EVICT_SIGMA = 0.3;
/** The blocker: a one-replica StatefulSet under a budget that allows no disruption, on the 8th node of 16. */
const BLOCKER = { node: 'n08', pod: `${NS}/ledger-0`, pdb: 'ledger' };
const INPUT: RolloutInput = { nodes: NODES, action: 'MAINTENANCE', maxUnavailable: 1 };

/** The StatefulSets' pods (stable names, so each keeps its typical termination across runs): `kv` on odd nodes, `queue` on every fourth. */
const STATEFUL = [
  ...NODES.filter((_, i) => i % 2 === 0).map((node, i) => ({ set: 'kv', name: `kv-${i}`, node })),
  ...NODES.filter((_, i) => i % 4 === 1).map((node, i) => ({ set: 'queue', name: `queue-${i}`, node })),
];
/** A ReplicaSet's pods, one per node (renamed by the ReplicaSet when evicted: a new pod takes the simulator's default termination). */
const REPLICAS = NODES.map((node) => ({ set: 'api-7d9f', name: `api-7d9f-${node}`, node }));
const vmsOf = (node: string) => Array.from({ length: VMS_PER_NODE }, (_, j) => `vm-${node}-${j}`);

/** The live cluster the snapshots are read from: nodes, KubeVirt's configuration, VMs, pods, budgets. */
function seed(sim: K8sSim, plant: boolean): void {
  for (const [i, node] of NODES.entries()) sim.addNode(node, { zone: i < NODES.length / 2 ? 'zone-a' : 'zone-b', roles: ['worker'] });
  sim.setKubevirtConfig({ evictionStrategy: 'LiveMigrate', migrations: { parallelMigrationsPerCluster: 5, parallelOutboundMigrationsPerNode: 2 } });
  for (const node of NODES) for (const name of vmsOf(node)) sim.addVm({ namespace: NS, name, nodeName: node, memory: '8Gi' });
  for (const p of STATEFUL)
    sim.addPod({
      namespace: NS,
      name: p.name,
      nodeName: p.node,
      labels: { app: p.set },
      owner: { kind: 'StatefulSet', name: p.set },
      terminationGracePeriodSeconds: 60,
    });
  for (const p of REPLICAS)
    sim.addPod({
      namespace: NS,
      name: p.name,
      nodeName: p.node,
      labels: { app: 'api' },
      owner: { kind: 'ReplicaSet', name: p.set },
      terminationGracePeriodSeconds: 30,
    });
  sim.addPdb(NS, 'kv', { matchLabels: { app: 'kv' }, maxUnavailable: 1 });
  sim.addPdb(NS, 'queue', { matchLabels: { app: 'queue' }, minAvailable: 3 });
  if (plant) {
    sim.addPod({ namespace: NS, name: 'ledger-0', nodeName: BLOCKER.node, labels: { app: 'ledger' }, owner: { kind: 'StatefulSet', name: 'ledger' } });
    sim.addPdb(NS, BLOCKER.pdb, { matchLabels: { app: 'ledger' }, minAvailable: 1 });
  }
}

/** The kubevirt plugin's own snapshot of the cluster `seed` builds (with the blocker or not). */
async function snapshotOf(plant: boolean): Promise<BackendSnapshot> {
  const live = await K8sSim.start();
  try {
    seed(live, plant);
    const backend = await createKubevirtBackend({ kubeconfigPath: live.kubeconfigFile() });
    try {
      const [snapshot] = await backend.snapshot();
      // Through JSON, as the worker receives it.
      return JSON.parse(JSON.stringify(snapshot)) as BackendSnapshot;
    } finally {
      await backend.close();
    }
  } finally {
    await live.close();
  }
}

/** The cluster's nature: every VM's, pod's and node's typical duration, fixed across runs (seed 1). */
function nature(): Nature {
  const random = createPrng(1);
  const between = ([lo, hi]: readonly [number, number]) => lo + random() * (hi - lo);
  const typicalMs = new Map<string, number>();
  for (const node of NODES) for (const vm of vmsOf(node)) typicalMs.set(natureKey('VM_MIGRATE', `${NS}/${vm}`), between(MIGRATE_MS));
  for (const p of [...STATEFUL, ...REPLICAS]) typicalMs.set(natureKey('POD_EVICT', `${NS}/${p.name}`), between(EVICT_MS));
  for (const node of NODES) typicalMs.set(natureKey('NODE_RESTART', node), between(RESTART_MS));
  return { typicalMs, sigma: { VM_MIGRATE: MIGRATE_SIGMA, POD_EVICT: EVICT_SIGMA, NODE_RESTART: RESTART_SIGMA } };
}

/**
 * The blocker into the cluster the history runs left: the pod and the budget as the plugin's
 * snapshot writes them (read from a cluster that has them), the pod on n08.
 */
function planter(withBlocker: BackendSnapshot): (snapshots: BackendSnapshot[]) => BackendSnapshot[] {
  const planted = withBlocker.data as KubevirtSnapshotData;
  const pod = planted.pods.find((p) => `${p.metadata.namespace}/${p.metadata.name}` === BLOCKER.pod);
  const pdb = planted.pdbs.find((b) => b.metadata.name === BLOCKER.pdb);
  if (!pod || !pdb) throw new Error(`the blocker ${BLOCKER.pod} or its budget is not in the snapshot`);
  return (snapshots) =>
    snapshots.map((s) => {
      if (s.plugin !== 'kubevirt') return s;
      const data = s.data as KubevirtSnapshotData;
      const add = <T extends SnapshotObject>(list: T[], o: T) => [...list, structuredClone(o)];
      return { ...s, data: { ...data, pods: add(data.pods, pod), pdbs: add(data.pdbs, pdb) } as never };
    });
}

export async function k8sCase(): Promise<AccuracyCase> {
  const [initial, withBlocker] = [await snapshotOf(false), await snapshotOf(true)];
  return {
    name: 'k8s-16',
    describe:
      `Case k8s-16: ${NODES.length} nodes in 2 zones on the Kubernetes + KubeVirt simulator, the kubevirt plugin's own snapshot loaded by rehearsal/loaders/kubevirt.ts; ` +
      `${VMS_PER_NODE} VMs per node (LiveMigrate, 8 GiB), StatefulSet pods (kv on every other node under a budget maxUnavailable 1, queue on every fourth under minAvailable 3 of 4) and a ReplicaSet's pod on each node; ` +
      `rollout MAINTENANCE with maxUnavailable 1 over every node. Each VM has its own typical migration time (${min(MIGRATE_MS[0])}–${min(MIGRATE_MS[1])}), each pod its own termination (${EVICT_MS[0] / 1000}–${EVICT_MS[1] / 1000} s) ` +
      `and each node its own restart (${min(RESTART_MS[0])}–${min(RESTART_MS[1])}); every run draws log-normally around them (σ ${MIGRATE_SIGMA}, ${EVICT_SIGMA}, ${RESTART_SIGMA}, seeded). ` +
      `History of 5 runs only (a run costs seconds of CPU). Planted after the history: ${BLOCKER.pod} on ${BLOCKER.node} (the 8th of 16) under budget ${BLOCKER.pdb} with minAvailable 1 = its replicas: ` +
      `its eviction is refused until the maintenance deadline, a pause predicted from the snapshot.`,
    request: {
      config: { plugins: [{ name: 'kubevirt', options: {} }], operations: DEFAULT_CONFIG.operations },
      snapshots: [initial],
      history: [],
      input: INPUT,
      samples: SAMPLES,
      seed: 7,
    },
    nature: nature(),
    historySizes: HISTORY_SIZES,
    plant: planter(withBlocker),
    realRuns: REAL_RUNS,
    drift: DRIFT,
    samples: SAMPLES,
  };
}
