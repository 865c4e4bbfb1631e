import { BackendError, notFound } from '../../src/cluster/errors.ts';
import { nodeSubject, type KubeApi } from './api.ts';
import type { ClusterCache } from './cache.ts';
import { call, mergePatch, RESOURCES } from './kube.ts';
import { toClusterNode } from './mapping.ts';
import type { KubevirtOptions } from './options.ts';

/** Writes of the Node object: the cordon. */
export class NodeState {
  constructor(
    private readonly api: KubeApi,
    private readonly cache: ClusterCache,
    private readonly options: KubevirtOptions,
  ) {}

  async setCordoned(id: string, cordoned: boolean): Promise<void> {
    const raw = await this.api.readNode(id);
    if (!raw) throw notFound('node', id);
    const node = toClusterNode(raw);
    if (node.cordoned === cordoned) return;
    if (node.availability === 'OFFLINE') throw new BackendError('Unavailable', `node ${id} is not Ready`, nodeSubject(id));
    await call(
      'patch',
      RESOURCES.nodes,
      () => this.api.k.core.patchNode({ name: id, body: { spec: { unschedulable: cordoned ? true : null } } }, mergePatch),
      nodeSubject(id),
    );
    await this.cache.waitFor(
      `${cordoned ? 'cordon' : 'uncordon'} node ${id}`,
      this.options.vmActionTimeoutMs,
      () => (this.cache.node(id)?.cordoned === cordoned ? true : undefined),
      nodeSubject(id),
    );
  }
}
