import type { Clock } from '../../src/cluster/clock.ts';
import { BackendError, notFound } from '../../src/cluster/errors.ts';
import type { NodeMaintenanceMark } from '../../src/cluster/node-maintenance.ts';
import type { PluginContext } from '../../src/cluster/plugin.ts';
import { retry } from '../../src/cluster/retry.ts';
import { nodeSubject, type KubeApi } from './api.ts';
import type { ClusterCache } from './cache.ts';
import { call, mergePatch, RESOURCES } from './kube.ts';
import { DRAIN_FORCED, DRAIN_REQUESTED, DRAIN_TAINT, MAINTAIN_STATUS, maintenanceMarkOf, toClusterNode, type KObject } from './mapping.ts';
import type { KubevirtOptions } from './options.ts';

/** `retryMaintenanceModeUpdate`: at most 3 tries on 409, 2 s apart (k8s:H4). */
const DISABLE_TRIES = 3;
const DISABLE_RETRY_MS = 2_000;

/** k8s:H3: the annotations one mark writes (null removes). */
function annotationsFor(mark: NodeMaintenanceMark, forced: boolean): Record<string, string | null> {
  switch (mark) {
    case 'REQUESTED':
      return { [DRAIN_REQUESTED]: 'true', ...(forced && { [DRAIN_FORCED]: 'true' }) };
    case 'RUNNING':
      return { [MAINTAIN_STATUS]: 'running', [DRAIN_REQUESTED]: null, [DRAIN_FORCED]: null };
    case 'COMPLETED':
      return { [MAINTAIN_STATUS]: 'completed' };
  }
}

/** Writes of the Node object: the cordon, and Harvester's maintenance state (k8s:H1, k8s:H3, k8s:H4). */
export class NodeState {
  constructor(
    private readonly api: KubeApi,
    private readonly cache: ClusterCache,
    private readonly options: KubevirtOptions,
    private readonly clock: Clock,
    private readonly log: PluginContext['log'],
  ) {}

  private async requireNode(id: string): Promise<KObject> {
    const raw = await this.api.readNode(id);
    if (!raw) throw notFound('node', id);
    return raw;
  }

  async setCordoned(id: string, cordoned: boolean): Promise<void> {
    const node = toClusterNode(await this.requireNode(id));
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

  /** k8s:H3: one annotation update per mark, as Harvester's controller writes them; nothing when the node already says so. */
  async markMaintenance(id: string, mark: NodeMaintenanceMark, options: { forced: boolean }): Promise<void> {
    const raw = await this.requireNode(id);
    const change = annotationsFor(mark, options.forced);
    const current = raw.metadata?.annotations ?? {};
    if (Object.entries(change).every(([k, v]) => (v === null ? !Object.hasOwn(current, k) : current[k] === v))) return;
    await call(
      'patch',
      RESOURCES.nodes,
      () => this.api.k.core.patchNode({ name: id, body: { metadata: { annotations: change } } }, mergePatch),
      nodeSubject(id),
    );
    this.log.info({ node: id, mark }, `kubevirt: node ${id} marked ${mark.toLowerCase()} (${Object.keys(change).join(', ')})`);
    await this.cache.waitFor(
      `mark node ${id} ${mark.toLowerCase()}`,
      this.options.vmActionTimeoutMs,
      () => {
        const a = this.cache.rawNode(id)?.metadata?.annotations ?? {};
        return Object.entries(change).every(([k, v]) => (v === null ? !Object.hasOwn(a, k) : a[k] === v)) ? true : undefined;
      },
      nodeSubject(id),
    );
  }

  /**
   * k8s:H4: one update, as Harvester's `disableMaintenanceMode` makes it: uncordoned, the
   * first `kubevirt.io/drain` taint removed, the three annotations removed; a 409 is tried
   * again (at most 3 tries, 2 s apart). A node that is not Ready rejects Unavailable (the
   * engine then says it stays cordoned, vm:T4).
   */
  async clearMaintenance(id: string): Promise<void> {
    await retry(
      async () => {
        const raw = await this.requireNode(id);
        const node = toClusterNode(raw);
        const a = raw.metadata?.annotations ?? {};
        const taints: { key?: string }[] = raw.spec?.taints ?? [];
        const drainTaint = taints.findIndex((t) => t.key === DRAIN_TAINT);
        const annotated = [DRAIN_REQUESTED, DRAIN_FORCED, MAINTAIN_STATUS].some((k) => Object.hasOwn(a, k));
        if (!node.cordoned && drainTaint < 0 && !annotated) return;
        if (node.availability === 'OFFLINE') throw new BackendError('Unavailable', `node ${id} is not Ready`, nodeSubject(id));
        const body = {
          metadata: { resourceVersion: raw.metadata?.resourceVersion, annotations: { [DRAIN_REQUESTED]: null, [DRAIN_FORCED]: null, [MAINTAIN_STATUS]: null } },
          spec: { unschedulable: null, ...(drainTaint >= 0 && { taints: taints.filter((_, i) => i !== drainTaint) }) },
        };
        await call('patch', RESOURCES.nodes, () => this.api.k.core.patchNode({ name: id, body }, mergePatch), nodeSubject(id));
      },
      {
        clock: this.clock,
        maxAttempts: DISABLE_TRIES,
        delayMs: () => DISABLE_RETRY_MS,
        retryable: (e) => e instanceof BackendError && e.code === 'Conflict',
        onRetry: () => this.log.info({ node: id }, `kubevirt: node ${id} changed under the disable (409); trying again in 2 s`),
      },
    );
    await this.cache.waitFor(
      `disable maintenance on node ${id}`,
      this.options.vmActionTimeoutMs,
      () => {
        const raw = this.cache.rawNode(id);
        return raw && !toClusterNode(raw).cordoned && maintenanceMarkOf(raw) === null ? true : undefined;
      },
      nodeSubject(id),
    );
  }
}
