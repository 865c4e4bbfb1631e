import type { VmFilter } from '../../src/cluster/backend.ts';
import { BackendError, notFound } from '../../src/cluster/errors.ts';
import type { ClusterNode, ClusterVm } from '../../src/cluster/types.ts';
import { vmSubject, type KubeApi, type Subject } from './api.ts';
import type { ClusterCache } from './cache.ts';
import { RESOURCES } from './kube.ts';
import { parseVmId, toClusterNode, toClusterVm, type KObject } from './mapping.ts';
import type { Volumes } from './volumes.ts';

/** Live reads of VMs (with their VMIs and volumes) and of nodes: always the API server, never a stale cache. */
export class VmReads {
  constructor(
    private readonly api: KubeApi,
    private readonly cache: ClusterCache,
    private readonly volumes: Volumes,
  ) {}

  /**
   * k8s:E1: the KubeVirt CR's `spec.configuration.evictionStrategy`, read on every VM read
   * (a change reaches only VMIs created later, but a VMI without its own value reads it);
   * null without a value or without KubeVirt's CRD.
   */
  async clusterEvictionStrategy(): Promise<unknown> {
    let value: unknown = null;
    try {
      const [cr] = (await this.api.listRaw(RESOURCES.kubevirts, undefined)).items;
      value = cr?.spec?.configuration?.evictionStrategy ?? null;
      this.cache.clusterMigrations = cr?.spec?.configuration?.migrations ?? {};
    } catch (e) {
      if (!(e instanceof BackendError && e.code === 'NotFound')) throw e;
    }
    this.cache.clusterEvictionStrategy = value;
    return value;
  }

  async listVms(filter: VmFilter = {}): Promise<ClusterVm[]> {
    const selector =
      filter.labels && Object.keys(filter.labels).length
        ? Object.entries(filter.labels)
            .map(([k, v]) => `${k}=${v}`)
            .join(',')
        : undefined;
    const [vms, vmis, source, cluster] = await Promise.all([
      this.api.listScoped(RESOURCES.vms, filter.namespace, selector),
      this.api.listScoped(RESOURCES.vmis, filter.namespace),
      this.volumes.source(filter.namespace),
      this.clusterEvictionStrategy(),
    ]);
    return this.volumes.assemble(vms, vmis, source, cluster).filter((vm) => filter.nodeId === undefined || vm.nodeId === filter.nodeId);
  }

  async readVm(id: string): Promise<{ vm: KObject; vmi: KObject | null } | null> {
    const parsed = parseVmId(id);
    if (!parsed || !this.api.inScope(parsed.namespace)) return null;
    const [vm, vmi] = await Promise.all([
      this.api.getCustom(RESOURCES.vms, parsed.namespace, parsed.name, vmSubject(id)),
      this.api.getCustom(RESOURCES.vmis, parsed.namespace, parsed.name, vmSubject(id)),
    ]);
    return vm ? { vm, vmi } : null;
  }

  async getVm(id: string): Promise<ClusterVm | null> {
    const found = await this.readVm(id);
    if (!found) return null;
    const parsed = parseVmId(id)!;
    const [source, cluster] = await Promise.all([this.volumes.source(parsed.namespace), this.clusterEvictionStrategy()]);
    return this.volumes.assemble([found.vm], found.vmi ? [found.vmi] : [], source, cluster)[0]!;
  }

  /** The VM as it is now (live read, without volumes); NotFound when it does not exist. */
  async requireVm(id: string): Promise<{ raw: KObject; vmi: KObject | null; vm: ClusterVm }> {
    const found = await this.readVm(id);
    if (!found) throw notFound('vm', id);
    return {
      raw: found.vm,
      vmi: found.vmi,
      vm: toClusterVm(found.vm, found.vmi, [], this.cache.clusterEvictionStrategy, this.cache.migrations(), this.cache.clusterMigrations),
    };
  }

  async getNode(id: string): Promise<ClusterNode | null> {
    const node = await this.api.readNode(id);
    return node ? toClusterNode(node) : null;
  }

  /** The node, refusing Unavailable when it is not Ready (null when it does not exist). */
  async requireOnline(nodeId: string, what: string, subject: Subject): Promise<ClusterNode | null> {
    const node = await this.getNode(nodeId);
    if (node && node.availability === 'OFFLINE') throw new BackendError('Unavailable', `${what}: node ${nodeId} is not Ready`, subject);
    return node;
  }
}
