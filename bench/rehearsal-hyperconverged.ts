/**
 * Issue 33 point 4, the hyperconverged case of the rehearsal accuracy benchmark (the method is
 * bench/rehearsal-harness.ts'): hosts that are at once KubeVirt nodes and pageservers, configured
 * as docs/configuration.md "Hyperconverged hosts" says — the kubevirt and the pageserver plugin
 * side by side, each pageserver naming the Kubernetes node it runs on (`kubernetesNode`), so the
 * gateway sees one node per host carrying VMs and shards. A rehearsal's request then holds two
 * snapshots, one per plugin, which rehearsal/loaders/kubevirt.ts and rehearsal/loaders/pageserver.ts
 * load side by side (the Kubernetes + KubeVirt simulator, the pageserver and compute-hook
 * simulators), every restart handed to both.
 *
 * The kubevirt snapshot is the kubevirt plugin's own, read from a live Kubernetes simulator; the
 * pageserver snapshot is written in the plugin's snapshot format (as the loader's tests do),
 * shards attached round-robin with a secondary on the next host of the same zone. The history
 * runs then leave both as the real plugins read them back (`backend.snapshot()`).
 */
import type { KubevirtSnapshotData, SnapshotObject } from '../plugins/kubevirt/snapshot.ts';
import { createKubevirtBackend } from '../plugins/kubevirt/index.ts';
import { pageserverSnapshotSchema, type PageserverSnapshotData } from '../plugins/pageserver/snapshot.ts';
import { formatShardId, tenantIdOf } from '../simulators/pageserver/index.ts';
import { K8sSim } from '../simulators/kubernetes/index.ts';
import type { BackendSnapshot } from '../src/cluster/rehearsal.ts';
import { DEFAULT_CONFIG } from '../src/config/defaults.ts';
import { createPrng } from '../src/domain/prng.ts';
import type { RolloutInput } from '../src/operations/rollouts/engine.ts';
import { type AccuracyCase, DRIFT, MIGRATE_MS, MIGRATE_SIGMA, min, type Nature, natureKey, REAL_RUNS, RESTART_MS, RESTART_SIGMA } from './rehearsal-harness.ts';

const HOSTS = 8;
const VMS_PER_HOST = 3;
const SHARDS_PER_HOST = 40;
/** Earlier real runs the history is read from (one size: the case's run time stays within ~10 min on 2 cores). */
const HISTORY_SIZES = [3] as const;
const SAMPLES = 20;
/** Each shard's typical cut-over (its secondary's catch-up): 5 to 40 s. */
const CUT_OVER_MS = [5_000, 40_000] as const;
const CUT_OVER_SIGMA = 0.3;
const TAKEN_AT = Date.UTC(2026, 0, 1);
const NAMESPACE = 'default';
/** Planted after the history: a VM with a GPU (KubeVirt: LiveMigratable False, HostDeviceNotLiveMigratable) on a host in the middle. */
const BLOCKER = { host: `harvester-${HOSTS / 2}`, vm: 'pinned' };

const host = (i: number) => `harvester-${i}`;
const zoneOf = (i: number) => (i <= HOSTS / 2 ? 'zone-a' : 'zone-b');
const vmName = (i: number, j: number) => `vm-${i}-${j}`;
const shardOf = (tenant: number) => formatShardId(tenantIdOf(tenant), 0, 0);
/** The next host of the same zone (zones are the first and second half of the hosts). */
const nextInZone = (i: number) => {
  const half = HOSTS / 2;
  const base = i <= half ? 0 : half;
  return base + ((i - base) % half) + 1;
};
const INPUT: RolloutInput = { nodes: Array.from({ length: HOSTS }, (_, i) => host(i + 1)), action: 'MAINTENANCE', maxUnavailable: 1 };

/** The pageserver plugin's entry: pageserver N runs on Kubernetes node harvester-N (its URL is replaced by the loader's simulator). */
const PAGESERVER_OPTIONS = {
  pageservers: Array.from({ length: HOSTS }, (_, i) => ({
    id: i + 1,
    url: `http://pageserver-${i + 1}.storage.invalid:9898`,
    availabilityZone: zoneOf(i + 1),
    kubernetesNode: host(i + 1),
  })),
  controlPlane: { url: 'http://control-plane.storage.invalid:3000/notify-attach' },
};

/** The kubevirt plugin's snapshot of a live simulator seeded by `seed`, through JSON as it crosses to the worker. */
async function kubevirtSnapshot(seed: (sim: K8sSim) => void): Promise<BackendSnapshot> {
  const live = await K8sSim.start();
  try {
    seed(live);
    const backend = await createKubevirtBackend({ kubeconfigPath: live.kubeconfigFile() });
    try {
      const [snapshot] = await backend.snapshot();
      return { ...(JSON.parse(JSON.stringify(snapshot)) as BackendSnapshot), takenAt: TAKEN_AT };
    } finally {
      await backend.close();
    }
  } finally {
    await live.close();
  }
}

function seedHosts(sim: K8sSim): void {
  for (let i = 1; i <= HOSTS; i++) {
    sim.addNode(host(i), { zone: zoneOf(i), roles: ['worker'] });
    for (let j = 0; j < VMS_PER_HOST; j++) sim.addVm({ namespace: NAMESPACE, name: vmName(i, j), nodeName: host(i), memory: '4Gi' });
  }
}

/** The pageservers' snapshot in the plugin's format: 40 unsharded tenants attached to each host, each with a warm secondary on the next host of its zone. */
function pageserverSnapshot(): BackendSnapshot {
  const shards: PageserverSnapshotData['shards'] = [];
  for (let i = 1; i <= HOSTS; i++) {
    for (let k = 0; k < SHARDS_PER_HOST; k++) {
      const tenant = (i - 1) * SHARDS_PER_HOST + k + 1;
      const attached = String(i);
      const secondary = String(nextInZone(i));
      shards.push({
        id: shardOf(tenant),
        tenantId: tenantIdOf(tenant),
        shardNumber: 0,
        shardCount: 0,
        stripeSize: 0,
        attachedNodeId: attached,
        generation: 1,
        generationNodeId: attached,
        secondaryNodeIds: [secondary],
        secondaryCount: 1,
        policy: 'ACTIVE',
        preferredZone: zoneOf(i),
        pendingComputeNotification: false,
        tenantConfig: {},
        observed: { [attached]: 'AttachedSingle@1', [secondary]: 'Secondary' },
        timelines: { ['b'.repeat(32)]: '0/16B5A50' },
        secondaries: { [secondary]: { bytesTotal: 64 << 20, bytesDownloaded: 64 << 20, heatmap: true } },
      });
    }
  }
  const data: PageserverSnapshotData = {
    version: 1,
    nodes: Array.from({ length: HOSTS }, (_, i) => ({
      id: String(i + 1),
      name: `pageserver-${i + 1}`,
      zone: zoneOf(i + 1),
      availability: 'ACTIVE',
      cordoned: false,
    })),
    shards,
    computeHook: { configured: true, tokenRequired: false, requestTimeoutMs: 10_000, retries: 10, concurrency: 32 },
    unread: [],
  };
  return { plugin: 'pageserver', takenAt: TAKEN_AT, data: pageserverSnapshotSchema.parse(data) };
}

/** The cluster's nature: every VM's, shard's and host's typical duration, fixed across runs (seed 1). */
function nature(): Nature {
  const random = createPrng(1);
  const between = ([lo, hi]: readonly [number, number]) => lo + random() * (hi - lo);
  const typicalMs = new Map<string, number>();
  for (let i = 1; i <= HOSTS; i++)
    for (let j = 0; j < VMS_PER_HOST; j++) typicalMs.set(natureKey('VM_MIGRATE', `${NAMESPACE}/${vmName(i, j)}`), between(MIGRATE_MS));
  typicalMs.set(natureKey('VM_MIGRATE', `${NAMESPACE}/${BLOCKER.vm}`), between(MIGRATE_MS));
  for (let t = 1; t <= HOSTS * SHARDS_PER_HOST; t++) typicalMs.set(natureKey('SHARD_CUT_OVER', shardOf(t)), between(CUT_OVER_MS));
  for (let i = 1; i <= HOSTS; i++) typicalMs.set(natureKey('NODE_RESTART', host(i)), between(RESTART_MS));
  return { typicalMs, sigma: { VM_MIGRATE: MIGRATE_SIGMA, SHARD_CUT_OVER: CUT_OVER_SIGMA, NODE_RESTART: RESTART_SIGMA } };
}

/** The blocker's objects (VM, VMI) as the kubevirt plugin reads them from a live cluster where it runs: LiveMigratable False is KubeVirt's, not made up here. */
async function blockerObjects(): Promise<{ vm: SnapshotObject; vmi: SnapshotObject }> {
  const snapshot = await kubevirtSnapshot((sim) => {
    sim.addNode(BLOCKER.host, { zone: zoneOf(HOSTS / 2), roles: ['worker'] });
    sim.addVm({ namespace: NAMESPACE, name: BLOCKER.vm, nodeName: BLOCKER.host, memory: '4Gi', gpu: true });
  });
  const data = snapshot.data as KubevirtSnapshotData;
  const named = (o: SnapshotObject) => o.metadata.name === BLOCKER.vm;
  return { vm: data.vms.find(named)!, vmi: data.vmis.find(named)! };
}

export async function hyperconvergedCase(): Promise<AccuracyCase> {
  const blocker = await blockerObjects();
  const plant = (snapshots: BackendSnapshot[]): BackendSnapshot[] =>
    snapshots.map((s) => {
      if (s.plugin !== 'kubevirt') return s;
      const data = s.data as KubevirtSnapshotData;
      return { ...s, data: { ...data, vms: [...data.vms, blocker.vm], vmis: [...data.vmis, blocker.vmi] } };
    });
  return {
    name: 'hyperconverged-8',
    describe:
      `Case hyperconverged-8: ${HOSTS} hosts in 2 zones, each at once a KubeVirt node (${VMS_PER_HOST} VMs, live migration) and a pageserver (${SHARDS_PER_HOST} attached shards, each with a warm secondary on the next host of its zone; ${HOSTS * SHARDS_PER_HOST} shards), ` +
      `configured as a hyperconverged host is (kubevirt + pageserver plugins, \`kubernetesNode\` per pageserver): two snapshots, loaded side by side into the Kubernetes + KubeVirt simulator and the pageserver and compute-hook simulators. ` +
      `Rollout MAINTENANCE with maxUnavailable 1 over every host. Each VM has its own typical migration (${min(MIGRATE_MS[0])}–${min(MIGRATE_MS[1])}), each shard its own cut-over (${CUT_OVER_MS[0] / 1000}–${CUT_OVER_MS[1] / 1000} s), each host its own restart (${min(RESTART_MS[0])}–${min(RESTART_MS[1])}); ` +
      `every run draws log-normally around them (σ ${MIGRATE_SIGMA}, ${CUT_OVER_SIGMA}, ${RESTART_SIGMA}, seeded). History: ${HISTORY_SIZES.join(', ')} earlier runs only (the case's run time). ` +
      `Planted after the history: ${NAMESPACE}/${BLOCKER.vm} on ${BLOCKER.host} (a host in the middle), a VM with a GPU that KubeVirt says cannot be live-migrated (read from a live simulator's snapshot).`,
    request: {
      config: {
        plugins: [
          { name: 'kubevirt', options: {} },
          { name: 'pageserver', options: PAGESERVER_OPTIONS as never },
        ],
        operations: DEFAULT_CONFIG.operations,
      },
      snapshots: [await kubevirtSnapshot(seedHosts), pageserverSnapshot()],
      history: [],
      input: INPUT,
      samples: SAMPLES,
      seed: 7,
    },
    nature: nature(),
    historySizes: HISTORY_SIZES,
    plant,
    realRuns: REAL_RUNS,
    drift: DRIFT,
    samples: SAMPLES,
  };
}
