/**
 * The simulated cluster as its own process (ha:B1): the strict Kubernetes + KubeVirt API
 * server (simulators/kubernetes) and, on request, simulated pageservers
 * (simulators/pageserver) with the compute hook they are cut over for (simulators/compute-hook) on loopback ports, with a kubeconfig and a ready gateway config
 * written next to each other. Several gateway replicas started with that config share one
 * cluster through the real `kubevirt` (and `pageserver`) plugins. Imports nothing of the
 * gateway: the config it writes is plain JSON in the gateway's config format.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { K8sSim } from './kubernetes/index.ts';
import { ComputeHookSim } from './compute-hook/index.ts';
import { RequestLog } from './common/request-log.ts';
import { roundRobinShards, startPageserverFleet, type PageserverFleet } from './pageserver/index.ts';

export interface SimulatorOptions {
  /** Where the gateway config goes; the kubeconfig is written beside it (`<FILE>.kubeconfig`). */
  configOut: string;
  /** Worker nodes `node-1` … `node-N` (default 4), two zones. */
  nodes?: number;
  /** Running VMs per node (default 5), each live-migratable. */
  vmsPerNode?: number;
  /** How long a live migration takes in the simulator (ms; default 200). */
  migrateMs?: number;
  /** Also serve pageservers (one per node) with this many tenants of 4 shards each and the compute hook, and configure the `pageserver` plugin; default none. */
  tenants?: number;
  /** Shards of each of those tenants (default 4); 1 makes unsharded tenants. */
  shardsPerTenant?: number;
  /**
   * Issue 26: by default pageserver N runs on Kubernetes node `node-N`
   * (`pageservers[].kubernetesNode`), so each host carries VMs, pods and shards, as on a
   * Harvester cluster with storage on the same hosts; true: each pageserver is a host of its
   * own (GraphQL node ids `1`…`N` beside `node-1`…).
   */
  separateHosts?: boolean;
  /** How long each pageserver takes to answer a `PUT …/location_config` (ms; default 0), so that a cut-over lasts. */
  locationConfigMs?: number;
}

export interface RunningSimulator {
  k8s: K8sSim;
  pageservers: PageserverFleet | null;
  /** The computes' control plane the `pageserver` plugin notifies (neon:C7), with pageservers only. */
  computeHook: ComputeHookSim | null;
  configFile: string;
  kubeconfigFile: string;
  close(): Promise<void>;
}

export async function startSimulator(options: SimulatorOptions): Promise<RunningSimulator> {
  const nodes = options.nodes ?? 4;
  const k8s = await K8sSim.start({ delays: { migrateMs: options.migrateMs ?? 200 } });
  for (let n = 1; n <= nodes; n++) {
    k8s.addNode(`node-${n}`, { zone: n % 2 ? 'zone-a' : 'zone-b', roles: ['worker'] });
    for (let v = 1; v <= (options.vmsPerNode ?? 5); v++) k8s.addVm({ namespace: 'default', name: `vm-${n}-${v}`, nodeName: `node-${n}` });
  }
  const configFile = resolve(options.configOut);
  mkdirSync(dirname(configFile), { recursive: true });
  const kubeconfigFile = `${configFile}.kubeconfig`;
  writeFileSync(kubeconfigFile, k8s.kubeconfig());
  const plugins: { name: string; options: Record<string, unknown> }[] = [{ name: 'kubevirt', options: { kubeconfigPath: kubeconfigFile } }];
  let pageservers: PageserverFleet | null = null;
  let computeHook: ComputeHookSim | null = null;
  if (options.tenants) {
    const ids = Array.from({ length: nodes }, (_, i) => i + 1);
    // One log for the pageservers and the hook, so that their calls keep one order (any of them serves it).
    const log = new RequestLog();
    pageservers = await startPageserverFleet({
      nodes: ids.map((id) => ({ id })),
      shards: roundRobinShards(ids, options.tenants, options.shardsPerTenant ?? 4),
      log,
    });
    for (const sim of pageservers.sims.values()) sim.setLatency(options.locationConfigMs ?? 0);
    computeHook = await new ComputeHookSim({ log }).start();
    plugins.push({
      name: 'pageserver',
      options: {
        pageservers: ids.map((id) => ({
          id,
          url: pageservers!.sim(id).url,
          availabilityZone: id % 2 ? 'zone-a' : 'zone-b',
          ...(!options.separateHosts && { kubernetesNode: `node-${id}` }),
        })),
        controlPlane: { url: computeHook.url },
        stateFile: join(dirname(configFile), 'pageserver-state.json'),
      },
    });
  }
  writeFileSync(configFile, `${JSON.stringify({ plugins }, null, 2)}\n`);
  return {
    k8s,
    pageservers,
    computeHook,
    configFile,
    kubeconfigFile,
    async close() {
      await computeHook?.close();
      await pageservers?.close();
      await k8s.close();
    },
  };
}
