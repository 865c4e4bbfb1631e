import { BackendError } from '../../src/cluster/errors.ts';
import { call, mergePatch, RESOURCES, type KubeClients, type Resource } from './kube.ts';
import type { KObject } from './mapping.ts';
import type { KubevirtOptions } from './options.ts';

export interface ListResult {
  items: KObject[];
  resourceVersion: string;
}

export type Subject = { kind: 'node' | 'vm'; id: string };
export const vmSubject = (id: string): Subject => ({ kind: 'vm', id });
export const nodeSubject = (id: string): Subject => ({ kind: 'node', id });

/**
 * The plugin's reads and writes of the API server, one call each, scoped to the managed
 * namespaces; failures are translated into the backend's closed error set (kube.ts).
 */
export class KubeApi {
  constructor(
    readonly k: KubeClients,
    private readonly options: Pick<KubevirtOptions, 'namespaces'>,
  ) {}

  /** The managed namespaces; null = every namespace. */
  namespaces(): string[] | null {
    return this.options.namespaces.length ? this.options.namespaces : null;
  }

  inScope(namespace: string): boolean {
    const ns = this.namespaces();
    return ns === null || ns.includes(namespace);
  }

  async listRaw(r: Resource, namespace: string | undefined, labelSelector?: string): Promise<ListResult> {
    const result = (await call('list', r, () => {
      if (r === RESOURCES.nodes) return this.k.core.listNode({ labelSelector }) as Promise<unknown>;
      if (r === RESOURCES.pods) {
        return (
          namespace ? this.k.core.listNamespacedPod({ namespace, labelSelector }) : this.k.core.listPodForAllNamespaces({ labelSelector })
        ) as Promise<unknown>;
      }
      if (r === RESOURCES.pvcs) {
        return (
          namespace ? this.k.core.listNamespacedPersistentVolumeClaim({ namespace }) : this.k.core.listPersistentVolumeClaimForAllNamespaces()
        ) as Promise<unknown>;
      }
      const base = { group: r.group, version: r.version, plural: r.plural, ...(labelSelector && { labelSelector }) };
      return namespace ? this.k.custom.listNamespacedCustomObject({ ...base, namespace }) : this.k.custom.listClusterCustomObject(base);
    })) as { items?: KObject[]; metadata?: { resourceVersion?: string } };
    return { items: result.items ?? [], resourceVersion: result.metadata?.resourceVersion ?? '' };
  }

  /** Lists `r` in the managed namespaces (or `namespace` alone). */
  async listScoped(r: Resource, namespace?: string, labelSelector?: string): Promise<KObject[]> {
    if (namespace !== undefined) return this.inScope(namespace) ? (await this.listRaw(r, namespace, labelSelector)).items : [];
    const scopes = this.namespaces() ?? [undefined];
    const lists = await Promise.all(scopes.map((ns) => this.listRaw(r, ns, labelSelector)));
    return lists.flatMap((l) => l.items);
  }

  async getCustom(r: Resource, namespace: string, name: string, subject?: Subject): Promise<KObject | null> {
    try {
      return (await call(
        'get',
        r,
        () => this.k.custom.getNamespacedCustomObject({ group: r.group, version: r.version, plural: r.plural, namespace, name }),
        subject,
      )) as KObject;
    } catch (e) {
      if (e instanceof BackendError && e.code === 'NotFound') return null;
      throw e;
    }
  }

  async patchCustom(r: Resource, namespace: string, name: string, body: unknown, subject?: Subject): Promise<KObject> {
    return (await call(
      'patch',
      r,
      () => this.k.custom.patchNamespacedCustomObject({ group: r.group, version: r.version, plural: r.plural, namespace, name, body }, mergePatch),
      subject,
    )) as KObject;
  }

  async readNode(id: string): Promise<KObject | null> {
    try {
      return (await call('get', RESOURCES.nodes, () => this.k.core.readNode({ name: id }), nodeSubject(id))) as KObject;
    } catch (e) {
      if (e instanceof BackendError && e.code === 'NotFound') return null;
      throw e;
    }
  }
}
