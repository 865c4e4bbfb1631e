/**
 * The Kubernetes simulator and the kubevirt plugin checked against schemas nobody here
 * wrote: `kubernetes-models` (generated from Kubernetes' own OpenAPI) for the core, apps,
 * policy and apiextensions kinds. Every object the simulator stores (so every object it
 * returns, and every object a plugin's write produced) and every full object a client sends
 * (creates, updates, evictions) is validated. KubeVirt's kinds are checked against KubeVirt's
 * own OpenAPI definitions (test/support/kubevirt-schemas.ts) where that data is on the
 * machine; AdmissionReview has no schema here and stays checked by the simulator's strictness.
 */
import { APIResourceList } from '@kubernetes-models/apimachinery/apis/meta/v1/APIResourceList';
import { Status } from '@kubernetes-models/apimachinery/apis/meta/v1/Status';
import { CustomResourceDefinition } from 'kubernetes-models/apiextensions.k8s.io/v1/CustomResourceDefinition';
import { DaemonSet } from 'kubernetes-models/apps/v1/DaemonSet';
import { ReplicaSet } from 'kubernetes-models/apps/v1/ReplicaSet';
import { StatefulSet } from 'kubernetes-models/apps/v1/StatefulSet';
import { Eviction } from 'kubernetes-models/policy/v1/Eviction';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { Event } from 'kubernetes-models/v1/Event';
import { Node } from 'kubernetes-models/v1/Node';
import { PersistentVolumeClaim } from 'kubernetes-models/v1/PersistentVolumeClaim';
import { Pod } from 'kubernetes-models/v1/Pod';
import type { K8sObject, K8sSim } from '../../simulators/kubernetes/index.ts';
import { kubevirtSchemas } from './kubevirt-schemas.ts';

type Model = new (data: never) => { validate(): void };
const MODELS: Record<string, Model> = {
  'v1/Node': Node as unknown as Model,
  'v1/Pod': Pod as unknown as Model,
  'v1/PersistentVolumeClaim': PersistentVolumeClaim as unknown as Model,
  'v1/Event': Event as unknown as Model,
  'v1/Status': Status as unknown as Model,
  'v1/APIResourceList': APIResourceList as unknown as Model,
  'apps/v1/DaemonSet': DaemonSet as unknown as Model,
  'apps/v1/ReplicaSet': ReplicaSet as unknown as Model,
  'apps/v1/StatefulSet': StatefulSet as unknown as Model,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget as unknown as Model,
  'policy/v1/Eviction': Eviction as unknown as Model,
  'apiextensions.k8s.io/v1/CustomResourceDefinition': CustomResourceDefinition as unknown as Model,
};

/** The schema error of `o`, or null (also null for kinds without a schema here). */
export function schemaError(o: unknown): string | null {
  if (!o || typeof o !== 'object') return null;
  const { apiVersion, kind } = o as { apiVersion?: string; kind?: string };
  // A list: each item with the list's group/version and the item kind.
  if (kind?.endsWith('List') && Array.isArray((o as { items?: unknown[] }).items)) {
    const itemKind = kind.slice(0, -'List'.length);
    for (const item of (o as { items: object[] }).items) {
      const e = schemaError({ apiVersion, kind: itemKind, ...item });
      if (e) return `${kind} item: ${e}`;
    }
    return null;
  }
  const kubevirt = kubevirtSchemas()?.check(o as { apiVersion?: string; kind?: string });
  if (kubevirt !== undefined) return kubevirt && `${apiVersion}/${kind} ${(o as K8sObject).metadata?.name ?? ''}: ${kubevirt}`;
  const model = MODELS[`${apiVersion}/${kind}`];
  if (!model) return null;
  try {
    new model(structuredClone(o) as never).validate();
    return null;
  } catch (e) {
    return `${apiVersion}/${kind} ${(o as K8sObject).metadata?.name ?? ''}: ${(e as Error).message}`;
  }
}

/** Validates every stored object and every full object sent or answered; returns the violations seen. */
export function checkSchemas(sim: K8sSim): string[] {
  const violations: string[] = [];
  const check = (where: string, o: unknown) => {
    const e = schemaError(o);
    if (e) violations.push(`${where}: ${e}`);
  };
  sim.store.subscribe((e) => check(`stored (${e.type})`, e.object));
  sim.api.onExchange = (x) => {
    // Patches are partial (their result is validated when stored); other bodies are whole objects.
    if (x.request && x.verb !== 'patch' && !(x.verb === 'delete'))
      check(`sent (${x.verb} ${x.resource.plural}${x.subresource ? `/${x.subresource}` : ''})`, x.request);
    check(`answered (${x.verb} ${x.resource.plural})`, x.response);
  };
  return violations;
}

/** The kinds validated, for tests that prove the check bites. */
export const VALIDATED_KINDS = Object.keys(MODELS);
