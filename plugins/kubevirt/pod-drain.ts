import { ApiException } from '@kubernetes/client-node';
import { BackendError } from '../../src/cluster/errors.ts';
import type { PluginContext } from '../../src/cluster/plugin.ts';
import type { DrainPod, EvictionAnswer, PodDrainBackend, PodRef } from '../../src/cluster/pod-drain.ts';
import { vmSubject, type KubeApi } from './api.ts';
import { call, httpStatusOf, RESOURCES, statusBodyOf, toBackendError } from './kube.ts';
import { parseVmId, toDrainPod, type KObject } from './mapping.ts';

export type EvictionVersion = 'policy/v1' | 'policy/v1beta1';

/** The PDB a 429 names ("The disruption budget web needs 1 healthy pods …", or "… web is still being processed …"). */
function budgetOf(causes: { reason?: string; type?: string; message?: string }[]): string | null {
  for (const c of causes) {
    if ((c.reason ?? c.type) !== 'DisruptionBudget') continue;
    const m = /disruption budget (\S+) /i.exec(c.message ?? '');
    if (m) return m[1]!;
  }
  return null;
}

/**
 * k8s:K1, k8s:K5–K8 against the API server: the node's pods by field selector, one policy/v1
 * Eviction each (policy/v1beta1 only when discovery lists no v1 `pods/eviction`), the
 * answers classified as kubectl does, and "gone" as GET 404 or a new UID.
 */
export class PodDrain implements PodDrainBackend {
  /** Chosen at start from discovery (k8s:K5). */
  evictionVersion: EvictionVersion = 'policy/v1';

  constructor(
    private readonly api: KubeApi,
    private readonly log: PluginContext['log'],
  ) {}

  /** k8s:K5: which Eviction version the API server serves under pods/eviction. */
  async discover(): Promise<void> {
    try {
      const list = await this.api.k.core.getAPIResources();
      const eviction = (list.resources ?? []).find((r) => r.name === 'pods/eviction');
      this.evictionVersion = eviction && eviction.group === 'policy' && eviction.version === 'v1beta1' ? 'policy/v1beta1' : 'policy/v1';
    } catch (e) {
      this.log.warn({ err: e }, 'kubevirt: discovery of /api/v1 failed; evictions use policy/v1');
    }
  }

  async listNodePods(nodeId: string, labelSelector: string): Promise<DrainPod[]> {
    const list = (await call('list', RESOURCES.pods, () =>
      this.api.k.core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${nodeId}`, ...(labelSelector && { labelSelector }) }),
    )) as { items?: KObject[] };
    const pods = list.items ?? [];
    // kubectl's daemonSetFilter reads each DaemonSet: a missing one makes its pods orphans (k8s:K2 b).
    const found = new Map<string, boolean>();
    for (const pod of pods) {
      const owner = ((pod.metadata?.['ownerReferences'] as { controller?: boolean; kind?: string; name?: string }[] | undefined) ?? []).find(
        (r) => r.controller,
      );
      if (owner?.kind !== 'DaemonSet' || ['Succeeded', 'Failed'].includes(pod.status?.phase)) continue;
      const key = `${pod.metadata?.namespace}/${owner.name}`;
      if (!found.has(key)) found.set(key, await this.daemonSetExists(pod.metadata!.namespace!, owner.name!));
    }
    return pods.map((p) => toDrainPod(p, (ns, name) => found.get(`${ns}/${name}`) ?? null));
  }

  private async daemonSetExists(namespace: string, name: string): Promise<boolean> {
    try {
      await call('get', RESOURCES.daemonsets, () => this.api.k.apps.readNamespacedDaemonSet({ namespace, name }));
      return true;
    } catch (e) {
      if (e instanceof BackendError && e.code === 'NotFound') return false;
      throw e;
    }
  }

  async evictPod(pod: PodRef, gracePeriodSeconds: number | null): Promise<EvictionAnswer> {
    const body = {
      apiVersion: this.evictionVersion,
      kind: 'Eviction',
      metadata: { name: pod.name, namespace: pod.namespace },
      ...(gracePeriodSeconds !== null && { deleteOptions: { gracePeriodSeconds } }),
    };
    try {
      await this.api.k.core.createNamespacedPodEviction({ name: pod.name, namespace: pod.namespace, body });
      return { kind: 'EVICTED' };
    } catch (e) {
      return this.answerOf(e);
    }
  }

  /** k8s:K6: an eviction's refusal as an answer; only what says nothing about the pod (unreachable, 503, RBAC) is thrown. */
  private answerOf(e: unknown): EvictionAnswer {
    const code = httpStatusOf(e);
    const status = statusBodyOf(e);
    const causes = status?.details?.causes ?? [];
    const message = [status?.message, ...causes.map((c) => c.message)].filter(Boolean).join(': ') || String(e);
    if (code === 404) return { kind: 'GONE' };
    if (code === 429) return { kind: 'BLOCKED', message, budget: budgetOf(causes) };
    if (code === 403 && causes.some((c) => (c.reason ?? c.type) === 'NamespaceTerminating')) return { kind: 'NAMESPACE_TERMINATING', message };
    // 500 (e.g. two PodDisruptionBudgets) and other 4xx: this pod fails, with the API's words.
    if (e instanceof ApiException && code !== null && code !== 403 && code !== 401 && code !== 503 && code !== 502 && code !== 504) {
      return { kind: 'FAILED', status: code, message };
    }
    throw toBackendError(e, 'create', RESOURCES.evictions);
  }

  async podGone(pod: PodRef & { uid: string }): Promise<boolean> {
    try {
      const now = (await call('get', RESOURCES.pods, () => this.api.k.core.readNamespacedPod({ name: pod.name, namespace: pod.namespace }))) as KObject;
      return now.metadata?.uid !== pod.uid;
    } catch (e) {
      if (e instanceof BackendError && e.code === 'NotFound') return true;
      throw e;
    }
  }

  /** k8s:E5: the VMI's running launcher pod (not a migration target), evicted like any pod. */
  async evictVmPod(vmId: string, gracePeriodSeconds: number | null): Promise<EvictionAnswer> {
    const parsed = parseVmId(vmId);
    if (!parsed) return { kind: 'GONE' };
    const vmi = await this.api.getCustom(RESOURCES.vmis, parsed.namespace, parsed.name, vmSubject(vmId));
    if (!vmi?.metadata?.uid || vmi.status?.phase !== 'Running') return { kind: 'GONE' };
    const list = (await call('list', RESOURCES.pods, () =>
      this.api.k.core.listNamespacedPod({
        namespace: parsed.namespace,
        labelSelector: `kubevirt.io=virt-launcher,kubevirt.io/created-by=${vmi.metadata!.uid}`,
      }),
    )) as { items?: KObject[] };
    const active = Object.keys(vmi.status?.activePods ?? {});
    const pod = (list.items ?? []).find(
      (p) =>
        p.spec?.nodeName === vmi.status?.nodeName &&
        !['Succeeded', 'Failed'].includes(p.status?.phase) &&
        !p.metadata?.labels?.['kubevirt.io/migrationJobUID'] &&
        (active.length === 0 || active.includes(p.metadata?.uid ?? '')),
    );
    if (!pod) return { kind: 'GONE' };
    return this.evictPod({ namespace: parsed.namespace, name: pod.metadata!.name! }, gracePeriodSeconds);
  }
}
