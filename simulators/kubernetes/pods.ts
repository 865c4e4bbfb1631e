/* eslint-disable @typescript-eslint/no-explicit-any -- Kubernetes objects are free-form JSON here, read field by field */
import { randomUUID } from 'node:crypto';
import type { SimClock } from './clock.ts';
import { matchesLabelSelectorObject } from './labels.ts';
import { ApiError, status, type ApiServer } from './server.ts';
import type { K8sObject, ObjectStore, ResourceDef, StoreEvent } from './store.ts';

export interface PodSimOptions {
  /** Wall or virtual milliseconds a pod stays Terminating per second of its grace period (default 1000). */
  msPerGraceSecond: number;
  /** How long a gracefully deleted pod stays Terminating; replaces grace × `msPerGraceSecond` (a rehearsal's drawn durations). */
  terminationMs?: (pod: K8sObject, graceSeconds: number) => number | undefined;
}

/** A webhook on `pods/eviction` CREATE (KubeVirt's): throws ApiError to deny. */
export type EvictionWebhook = (pod: K8sObject) => void;

const OUT_OF_SERVICE = 'node.kubernetes.io/out-of-service';
const specWithout = (spec: any, key: string) => Object.fromEntries(Object.entries(structuredClone(spec ?? {})).filter(([k]) => k !== key));
/** A budget's selector: absent (null) selects no pod, an empty one every pod of the namespace (policy/v1). */
const selects = (budget: K8sObject, pod: K8sObject) => budget.spec?.selector != null && matchesLabelSelectorObject(pod.metadata.labels, budget.spec.selector);
const isTerminal = (pod: K8sObject) => pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed';
const isReady = (pod: K8sObject) => (pod.status?.conditions ?? []).some((c: any) => c.type === 'Ready' && c.status === 'True');
const isNodeReady = (node: K8sObject) => (node.status?.conditions ?? []).some((c: any) => c.type === 'Ready' && c.status === 'True');
const controllerOf = (o: K8sObject): any => (o.metadata.ownerReferences ?? []).find((r: any) => r.controller === true) ?? null;

/** minAvailable / maxUnavailable: an integer, or a percentage of `expected` (rounded up, as the disruption controller does). */
function scaled(value: unknown, expected: number): number {
  if (typeof value === 'number') return value;
  const m = /^(\d+)%$/.exec(String(value));
  return m ? Math.ceil((Number(m[1]) * expected) / 100) : Number(value);
}

/**
 * Pods as kube-apiserver, the kubelet, the disruption controller and the workload
 * controllers treat them: graceful deletion (Terminating for the grace period, then gone),
 * the eviction subresource with PodDisruptionBudgets (`EvictionREST.Create`: 429 with a
 * `DisruptionBudget` cause, 429 for a stale budget, 500 for two budgets, budgets skipped for
 * terminal, Pending and deleting pods), PDB status kept up to date, ReplicaSet and StatefulSet
 * pods recreated when deleted (a StatefulSet's under the same name with a new UID), and the
 * out-of-service taint deleting the pods of a node that is not Ready.
 */
export class PodController {
  readonly evictionWebhooks: EvictionWebhook[] = [];
  /** The disruption controller lags (tests of a stale budget): PDB status is not recomputed while set. */
  pausePdbSync = false;
  /** Namespaces being deleted: evictions there answer 403 NamespaceTerminating. */
  readonly terminatingNamespaces = new Set<string>();
  private readonly pods: ResourceDef;
  private readonly pdbs: ResourceDef;
  private readonly nodes: ResourceDef;
  private readonly timers = new Set<() => void>();
  private readonly unsubscribe: () => void;
  private readonly pendingPdbSync = new Set<string>();

  constructor(
    private readonly store: ObjectStore,
    api: ApiServer,
    private readonly clock: SimClock,
    private readonly options: PodSimOptions,
  ) {
    this.pods = store.def('pods');
    this.pdbs = store.def('poddisruptionbudgets', 'policy');
    this.nodes = store.def('nodes');
    api.deleteHandlers.set('pods', (ns, name, grace) => this.deletePod(ns!, name, grace));
    api.subresources.set('pods/eviction', ({ namespace, name, body, dryRun }) => this.evict(namespace!, name, body, dryRun));
    this.unsubscribe = store.subscribe((e) => this.onEvent(e));
  }

  close(): void {
    this.unsubscribe();
    for (const cancel of this.timers) cancel();
    this.timers.clear();
  }

  private later(ms: number, fn: () => void): void {
    const cancel = this.clock.setTimer(ms, () => {
      this.timers.delete(cancel);
      fn();
    });
    this.timers.add(cancel);
  }

  private onEvent(e: StoreEvent): void {
    if (e.resource === this.pods) {
      this.syncPdbsSoon(e.object.metadata.namespace!);
      if (e.type === 'DELETED') this.recreate(e.object);
    }
    if (e.resource === this.pdbs && e.type !== 'DELETED') this.syncPdbsSoon(e.object.metadata.namespace!);
    if (e.resource === this.nodes && e.type === 'MODIFIED') this.outOfService(e.object);
  }

  /** kubectl delete / the eviction's delete: Terminating for the grace period (the pod's own when none is given), then gone. */
  deletePod(namespace: string, name: string, gracePeriodSeconds: number | undefined): K8sObject {
    const pod = this.store.require(this.pods, namespace, name);
    const grace = gracePeriodSeconds ?? pod.spec?.terminationGracePeriodSeconds ?? 30;
    if (grace <= 0 || isTerminal(pod)) return this.store.delete(this.pods, namespace, name);
    if (pod.metadata.deletionTimestamp) return pod;
    const marked = this.store.requestDelete(this.pods, namespace, name, this.clock.now(), grace);
    const uid = marked.metadata.uid;
    this.later(this.options.terminationMs?.(pod, grace) ?? grace * this.options.msPerGraceSecond, () => {
      const now = this.store.get(this.pods, namespace, name);
      if (now && now.metadata.uid === uid) this.store.delete(this.pods, namespace, name);
    });
    return marked;
  }

  /** An eviction from inside the cluster (Harvester's drain helper); a refusal throws ApiError. */
  evictNow(namespace: string, name: string, gracePeriodSeconds: number): void {
    const answer = this.evict(namespace, name, {
      apiVersion: 'policy/v1',
      kind: 'Eviction',
      metadata: { name, namespace },
      deleteOptions: { gracePeriodSeconds },
    });
    if (answer.code >= 300) {
      const body = answer.body as { reason: string; message: string };
      throw new ApiError(answer.code, body.reason, body.message);
    }
  }

  /** `dryRun`: every check (webhooks, budgets) answers as it would, and nothing is deleted or counted. */
  private evict(namespace: string, name: string, body: unknown, dryRun = false): { code: number; body: unknown } {
    const eviction = body as K8sObject | undefined;
    if (!eviction || typeof eviction !== 'object' || eviction.kind !== 'Eviction' || !['policy/v1', 'policy/v1beta1'].includes(String(eviction.apiVersion))) {
      throw new ApiError(400, 'BadRequest', 'the body of an eviction must be a policy/v1 Eviction');
    }
    if (eviction.metadata?.name !== name) throw new ApiError(400, 'BadRequest', `name in URL does not match name in Eviction object`);
    if (eviction.metadata?.namespace !== undefined && eviction.metadata.namespace !== namespace) {
      throw new ApiError(400, 'BadRequest', 'the namespace of the provided object does not match the namespace sent on the request');
    }
    if (this.terminatingNamespaces.has(namespace)) {
      const message = `unable to create new content in namespace ${namespace} because it is being terminated`;
      throw new ApiError(403, 'Forbidden', `pods "${name}" is forbidden: ${message}`, {
        name,
        kind: 'pods',
        causes: [{ reason: 'NamespaceTerminating', message, field: 'metadata.namespace' }],
      });
    }
    // An eviction asks for a dry run in its body (`deleteOptions.dryRun`, as kubectl --dry-run=server sends it) or on the URL.
    const asked: unknown = (eviction as any).deleteOptions?.dryRun;
    if (Array.isArray(asked) && asked.some((v) => v !== 'All'))
      throw new ApiError(400, 'BadRequest', `Invalid dry run value: ${asked.join(',')} (supported: All)`);
    dryRun ||= Array.isArray(asked) && asked.length > 0;
    const pod = this.store.require(this.pods, namespace, name);
    // Admission (validating webhooks on pods/eviction) comes before the budget check.
    for (const webhook of this.evictionWebhooks) webhook(pod);
    const grace: number | undefined = (eviction as any).deleteOptions?.gracePeriodSeconds;
    const success = { code: 201, body: { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 201 } };
    // canIgnorePDB: terminal, Pending and already-deleting pods.
    if (isTerminal(pod) || pod.status?.phase === 'Pending' || pod.metadata.deletionTimestamp) {
      if (!dryRun) this.deletePod(namespace, name, grace);
      return success;
    }
    const budgets = this.store.list(this.pdbs, namespace).filter((b) => selects(b, pod));
    if (budgets.length > 1) {
      return {
        code: 500,
        body: status(
          500,
          'InternalError',
          'Internal error occurred: This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.',
          {
            causes: [{ message: 'This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.' }],
          },
        ),
      };
    }
    const [budget] = budgets;
    if (budget) {
      const refusal = (message: string) => ({
        code: 429,
        body: status(429, 'TooManyRequests', "Cannot evict pod as it would violate the pod's disruption budget.", {
          causes: [{ reason: 'DisruptionBudget', message }],
          retryAfterSeconds: 0,
        }),
      });
      const st = budget.status ?? {};
      if ((st.observedGeneration ?? 0) < (budget.metadata.generation ?? 1)) {
        return refusal(`The disruption budget ${budget.metadata.name} is still being processed by the server.`);
      }
      if ((st.disruptionsAllowed ?? 0) <= 0) {
        return refusal(
          `The disruption budget ${budget.metadata.name} needs ${st.desiredHealthy ?? 0} healthy pods and has ${st.currentHealthy ?? 0} currently`,
        );
      }
      if (dryRun) return success;
      this.store.mutate(this.pdbs, namespace, budget.metadata.name, (b) => {
        b.status.disruptionsAllowed = (b.status.disruptionsAllowed ?? 0) - 1;
        b.status.disruptedPods = { ...(b.status.disruptedPods ?? {}), [name]: new Date(this.clock.now()).toISOString() };
      });
    }
    if (!dryRun) this.deletePod(namespace, name, grace);
    return success;
  }

  private syncPdbsSoon(namespace: string): void {
    if (this.pendingPdbSync.has(namespace)) return;
    this.pendingPdbSync.add(namespace);
    // Coalesced after the change (real time: the controllers' queue, not a simulated delay).
    setImmediate(() => {
      this.pendingPdbSync.delete(namespace);
      this.syncPdbs(namespace);
    });
  }

  /** The disruption controller: each budget's status from the pods it selects. */
  syncPdbs(namespace: string): void {
    if (this.pausePdbSync) return;
    const pods = this.store.list(this.pods, namespace);
    for (const b of this.store.list(this.pdbs, namespace)) {
      const selected = pods.filter((p) => selects(b, p));
      const expectedPods = selected.length;
      const currentHealthy = selected.filter((p) => !p.metadata.deletionTimestamp && p.status?.phase === 'Running' && isReady(p)).length;
      const desiredHealthy =
        b.spec?.minAvailable !== undefined
          ? scaled(b.spec.minAvailable, expectedPods)
          : Math.max(0, expectedPods - scaled(b.spec?.maxUnavailable ?? 0, expectedPods));
      // Pods evicted but still present count as already disrupted.
      const disrupted = Object.fromEntries(
        Object.entries(b.status?.disruptedPods ?? {}).filter(([pod]) => selected.some((p) => p.metadata.name === pod && !p.metadata.deletionTimestamp)),
      );
      const disruptionsAllowed = Math.max(0, currentHealthy - desiredHealthy - Object.keys(disrupted).length);
      const next = {
        observedGeneration: b.metadata.generation ?? 1,
        disruptionsAllowed,
        currentHealthy,
        desiredHealthy,
        expectedPods,
        ...(Object.keys(disrupted).length && { disruptedPods: disrupted }),
      };
      if (JSON.stringify(b.status ?? {}) !== JSON.stringify(next)) this.store.mutate(this.pdbs, namespace, b.metadata.name, (o) => (o.status = next));
    }
  }

  /** ReplicaSets make a new pod (new name); StatefulSets the same name with a new UID. */
  private recreate(gone: K8sObject): void {
    const owner = controllerOf(gone);
    if (!owner || !['ReplicaSet', 'StatefulSet'].includes(owner.kind)) return;
    const ownerDef = this.store.resource('apps', owner.kind === 'ReplicaSet' ? 'replicasets' : 'statefulsets');
    if (!ownerDef || !this.store.get(ownerDef, gone.metadata.namespace, owner.name)) return;
    const name = owner.kind === 'StatefulSet' ? gone.metadata.name : `${owner.name}-${randomUUID().slice(0, 5)}`;
    setImmediate(() => {
      if (this.store.get(this.pods, gone.metadata.namespace, name)) return;
      const nodeName = this.pickNode();
      this.store.create(this.pods, {
        metadata: {
          name,
          namespace: gone.metadata.namespace,
          labels: gone.metadata.labels ?? {},
          annotations: gone.metadata.annotations ?? {},
          ownerReferences: gone.metadata.ownerReferences ?? [],
        },
        spec: { ...specWithout(gone.spec, 'nodeName'), ...(nodeName ? { nodeName } : {}) },
        status: nodeName ? { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] } : { phase: 'Pending' },
      });
    });
  }

  /** The scheduler, roughly: a Ready, uncordoned node with the fewest pods. */
  private pickNode(): string | null {
    const count = new Map<string, number>();
    for (const p of this.store.list(this.pods)) count.set(p.spec?.nodeName, (count.get(p.spec?.nodeName) ?? 0) + 1);
    const nodes = this.store
      .list(this.nodes)
      .filter(
        (n) => isNodeReady(n) && !n.spec?.unschedulable && !(n.spec?.taints ?? []).some((t: any) => t.effect === 'NoSchedule' || t.effect === 'NoExecute'),
      );
    nodes.sort((a, b) => (count.get(a.metadata.name) ?? 0) - (count.get(b.metadata.name) ?? 0) || a.metadata.name.localeCompare(b.metadata.name));
    return nodes[0]?.metadata.name ?? null;
  }

  /** k8s:U4: a not-Ready node tainted out-of-service loses its pods (PodGC force-deletes, grace 0). */
  private outOfService(node: K8sObject): void {
    if (isNodeReady(node) || !(node.spec?.taints ?? []).some((t: any) => t.key === OUT_OF_SERVICE)) return;
    for (const pod of this.store.list(this.pods)) {
      if (pod.spec?.nodeName === node.metadata.name) this.store.delete(this.pods, pod.metadata.namespace, pod.metadata.name);
    }
  }
}
