import type { BackendCapabilities } from '../../src/cluster/backend.ts';
import { BackendError } from '../../src/cluster/errors.ts';
import type { PluginContext } from '../../src/cluster/plugin.ts';
import type { ClusterVm } from '../../src/cluster/types.ts';
import { compareNatural } from '../../src/domain/compare.ts';
import type { KubeApi } from './api.ts';
import type { ClusterCache } from './cache.ts';
import { RESOURCES } from './kube.ts';
import { replicasByVolume, toClusterVm, volumesOf, type KObject } from './mapping.ts';

export interface VolumeSource {
  pvc: (ns: string, claim: string) => string | undefined;
  replicas: ReturnType<typeof replicasByVolume> | null;
}

/** VM volumes → PVCs → Longhorn replicas (vm:N1), and whether Longhorn is there at all. */
export class Volumes {
  constructor(
    private readonly api: KubeApi,
    private readonly cache: ClusterCache,
    private readonly capabilities: BackendCapabilities,
    private readonly longhornNamespace: string,
    private readonly log: PluginContext['log'],
  ) {}

  /**
   * Longhorn's replicas, or null when `replicas.longhorn.io` is not served (404: Longhorn is
   * not installed). Every call records the answer in `capabilities.replicaHealth`, so the
   * plan's "LastHealthyReplica (vm:N1) not checked" note follows Longhorn being installed or
   * removed; other errors (5xx, 403) propagate and leave the capability as it was.
   */
  async longhornReplicas(): Promise<KObject[] | null> {
    let replicas: KObject[] | null;
    try {
      replicas = (await this.api.listRaw(RESOURCES.replicas, this.longhornNamespace)).items;
    } catch (e) {
      if (!(e instanceof BackendError && e.code === 'NotFound')) throw e;
      replicas = null;
    }
    const present = replicas !== null;
    if (this.capabilities.replicaHealth !== present) {
      if (present) this.log.info({}, 'kubevirt: replicas.longhorn.io found; the LastHealthyReplica rule is checked');
      else this.log.info({}, 'kubevirt: replicas.longhorn.io not found; the LastHealthyReplica rule is skipped (volumes report no replicas; plans say so)');
    }
    this.capabilities.replicaHealth = present;
    return replicas;
  }

  async source(namespace?: string): Promise<VolumeSource> {
    const replicas = await this.longhornReplicas();
    if (replicas === null) return { pvc: () => undefined, replicas: null };
    const pvcs = await this.api.listScoped(RESOURCES.pvcs, namespace);
    const byClaim = new Map(pvcs.map((p) => [`${p.metadata?.namespace}/${p.metadata?.name}`, p.spec?.volumeName as string | undefined]));
    return { pvc: (ns, claim) => byClaim.get(`${ns}/${claim}`), replicas: replicasByVolume(replicas) };
  }

  /** VMs with their VMIs and volumes, sorted by id; the volumes are remembered for events. */
  assemble(vms: KObject[], vmis: KObject[], source: VolumeSource, clusterEvictionStrategy: unknown): ClusterVm[] {
    const vmiByKey = new Map(vmis.map((v) => [`${v.metadata?.namespace}/${v.metadata?.name}`, v]));
    const migrations = this.cache.migrations();
    return vms
      .map((vm) => {
        const key = `${vm.metadata?.namespace}/${vm.metadata?.name}`;
        const volumes = volumesOf(vm, source.pvc, source.replicas);
        this.cache.volumeCache.set(key, volumes);
        return toClusterVm(vm, vmiByKey.get(key), volumes, clusterEvictionStrategy, migrations, this.cache.clusterMigrations);
      })
      .sort((a, b) => compareNatural(a.id, b.id));
  }
}
