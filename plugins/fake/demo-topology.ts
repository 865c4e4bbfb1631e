import { ZONE_LABEL } from '../../src/domain/labels.ts';
import { generateShards } from './generate-topology.ts';
import type { NodeSpec, ShardSpec, TopologySpec, VmSpec } from './topology.ts';

const GiB = 1024 ** 3;
const MiB = 1024 ** 2;
const GPU_LABEL = 'nvidia.com/gpu.present';

const CONTROL_PLANE = ['control-plane', 'etcd', 'worker', 'storage'];

const DEMO_NODES: NodeSpec[] = [
  { id: '1', zone: 'zone-a', roles: CONTROL_PLANE, labels: { disktype: 'ssd' } },
  { id: '2', zone: 'zone-a', roles: CONTROL_PLANE, labels: { disktype: 'hdd' } },
  { id: '3', zone: 'zone-b', roles: CONTROL_PLANE, labels: { disktype: 'ssd', [GPU_LABEL]: 'true' } },
  { id: '4', zone: 'zone-b', roles: ['worker', 'storage'], labels: { disktype: 'hdd' } },
];

/** Every strategy value (vm:V1) and "unlabelled", handed out in turn. */
const STRATEGIES = ['Migrate', 'ShutdownAndRestartAfterEnable', 'ShutdownAndRestartAfterDisable', 'Shutdown', null];
const APPS = ['web', 'api', 'cache', 'batch', 'report'];

/** A boot disk with healthy replicas on the VM's node and the next one. */
function rootdisk(nodeId: string): VmSpec['volumes'] {
  const next = String((Number(nodeId) % DEMO_NODES.length) + 1);
  return [{ name: 'rootdisk', replicas: [{ nodeId }, { nodeId: next }] }];
}

/** The only healthy replica is on node 1: these VMs are LastHealthyReplica there (vm:N1). */
const lastReplicaOnNode1 = { name: 'data', replicas: [{ nodeId: '1' }, { nodeId: '2', healthy: false }] };

function everydayVms(): VmSpec[] {
  return DEMO_NODES.flatMap((node, n) =>
    APPS.map((app, j): VmSpec => {
      const i = n * APPS.length + j;
      return {
        namespace: i % 2 === 0 ? 'prod' : 'default',
        name: `${app}-${node.id}`,
        nodeId: node.id,
        runStrategy: app === 'batch' ? 'RerunOnFailure' : 'Always',
        maintenanceStrategyLabel: STRATEGIES[i % STRATEGIES.length] ?? null,
        labels: { app },
        volumes: rootdisk(node.id),
        // Caches on fast disks want to stay on them: cache-1 and cache-3 may only go to nodes 1 and 3.
        nodeSelector: app === 'cache' && node.labels?.disktype === 'ssd' ? { disktype: 'ssd' } : {},
        // Reports stay in their zone: on zone-b nodes they can only move between 3 and 4.
        requiredNodeAffinity: app === 'report' ? [{ matchExpressions: [{ key: ZONE_LABEL, operator: 'In', values: [node.zone!] }] }] : [],
      };
    }),
  );
}

const SPECIAL_VMS: VmSpec[] = [
  {
    namespace: 'prod',
    name: 'db-primary',
    nodeId: '1',
    maintenanceStrategyLabel: 'ShutdownAndRestartAfterDisable',
    labels: { app: 'db' },
    volumes: [...rootdisk('1')!, lastReplicaOnNode1],
  },
  { namespace: 'prod', name: 'ledger', nodeId: '1', labels: { app: 'ledger' }, volumes: [...rootdisk('1')!, lastReplicaOnNode1] },
  {
    namespace: 'prod',
    name: 'gpu-worker',
    nodeId: '3',
    labels: { app: 'ml' },
    volumes: rootdisk('3'),
    liveMigratable: false,
    liveMigratableReason: 'HostDeviceNotLiveMigratable',
    nodeSelector: { [GPU_LABEL]: 'true' },
  },
  { namespace: 'default', name: 'archive', nodeId: null, runStrategy: 'Halted', labels: { app: 'archive' }, volumes: rootdisk('4') },
];

/**
 * Secondaries that are not warm, so a drain in the demo shows its skip reasons
 * (storage:D2/D4): one catching up within a minute, one stalled, one without a
 * heatmap, and one shard paused by its owner.
 */
function withDemoQuirks(shards: ShardSpec[]): ShardSpec[] {
  const at = (tenant: number, shard: number) => shards[tenant * 8 + shard]!;
  const onlySecondary = (s: ShardSpec) => s.secondaries![0]!;
  Object.assign(onlySecondary(at(1, 2)), { lagBytes: 512 * MiB });
  Object.assign(onlySecondary(at(3, 5)), { lagBytes: 2 * GiB, downloadBytesPerSecond: 0 });
  Object.assign(onlySecondary(at(2, 0)), { heatmapKnown: false });
  at(0, 7).policy = 'PAUSE';
  return shards;
}

/**
 * The default topology: a small hyperconverged cluster (4 nodes, 2 zones, 3 control-plane
 * nodes) with 24 VMs in two namespaces and 5 tenants × 8 shards, built so that every rule
 * of the two specs has something to act on.
 */
export function demoTopology(): TopologySpec {
  return {
    nodes: DEMO_NODES.map((n) => ({ ...n, labels: { ...n.labels } })),
    vms: [...everydayVms(), ...SPECIAL_VMS.map((vm) => structuredClone(vm))],
    shards: withDemoQuirks(generateShards(DEMO_NODES, { tenants: 5, shardsPerTenant: 8, seed: 7 })),
  };
}
