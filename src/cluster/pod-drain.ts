import type { DrainPod, EvictionAnswer } from '../domain/pods/drain.ts';

export type { DrainPod, EvictionAnswer } from '../domain/pods/drain.ts';

export interface PodRef {
  namespace: string;
  name: string;
}

/**
 * Draining a node of the pods that are not VMs, for backends that run pods (Kubernetes):
 * the rules are the domain's (src/domain/pods/drain.ts, k8s:K1–K10), the calls are these.
 * Every method rejects with a BackendError only when the API cannot be used (unreachable,
 * 5xx, RBAC); an eviction refused by the API is an answer, not an error.
 */
export interface PodDrainBackend {
  /** k8s:K1: the pods of every namespace whose `spec.nodeName` is the node, narrowed by `labelSelector`. */
  listNodePods(nodeId: string, labelSelector: string): Promise<DrainPod[]>;
  /** k8s:K5: one policy/v1 Eviction; `gracePeriodSeconds` null leaves the pod's own (k8s:K7). */
  evictPod(pod: PodRef, gracePeriodSeconds: number | null): Promise<EvictionAnswer>;
  /** k8s:K8: the pod is gone (404), or its name now belongs to another UID. */
  podGone(pod: PodRef & { uid: string }): Promise<boolean>;
  /** k8s:E5: evicts the running launcher pod of a VM (eviction strategy None); GONE when it has none. */
  evictVmPod(vmId: string, gracePeriodSeconds: number | null): Promise<EvictionAnswer>;
}
