/* eslint-disable @typescript-eslint/no-explicit-any -- Kubernetes objects are free-form JSON here, read field by field */
import { randomUUID } from 'node:crypto';

/** One kind the simulated API server serves. */
export interface ResourceDef {
  /** '' for the core group. */
  group: string;
  version: string;
  plural: string;
  kind: string;
  namespaced: boolean;
  /** Like CRDs with the status subresource: writes through the main endpoint keep the stored status. */
  statusSubresource: boolean;
  /** Whether strategic merge patch is accepted (built-in kinds only; never for custom resources). */
  strategicMerge: boolean;
  /** Subresources served under `…/{name}/<sub>` (e.g. `eviction`, `status`). */
  subresources?: string[];
  /** Field selectors a list or watch accepts besides metadata.name and metadata.namespace. */
  fieldSelectors?: string[];
}

interface K8sMetadata {
  name: string;
  namespace?: string;
  generateName?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: unknown[];
  finalizers?: string[];
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  [key: string]: unknown;
}

export interface K8sObject {
  apiVersion?: string;
  kind?: string;
  metadata: K8sMetadata;
  spec?: any;
  status?: any;
  [key: string]: unknown;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface StoreEvent {
  rv: number;
  resource: ResourceDef;
  type: WatchEventType;
  object: K8sObject;
}

export const resourceKey = (r: Pick<ResourceDef, 'group' | 'plural'>) => (r.group ? `${r.plural}.${r.group}` : r.plural);
export const apiVersionOf = (r: ResourceDef) => (r.group ? `${r.group}/${r.version}` : r.version);
const objectKey = (namespace: string | undefined, name: string) => `${namespace ?? ''}/${name}`;

export class StoreError extends Error {
  constructor(
    readonly code: 404 | 409 | 422,
    readonly reason: 'NotFound' | 'Conflict' | 'AlreadyExists' | 'Invalid',
    message: string,
  ) {
    super(message);
  }
}

/** What a write changed, apart from bookkeeping metadata; writes that change nothing keep the resourceVersion (as etcd does). */
function sameContent(a: K8sObject, b: K8sObject): boolean {
  const strip = (o: K8sObject) => ({ ...o, metadata: { ...o.metadata, resourceVersion: undefined, generation: undefined } });
  return JSON.stringify(strip(a)) === JSON.stringify(strip(b));
}

/**
 * The objects of a simulated API server: one global resourceVersion counter (etcd's
 * revision), a bounded history of changes for watches (older than the window → 410 Gone),
 * and synchronous subscribers (the simulated controllers and open watch streams).
 */
export class ObjectStore {
  private rv = 1000;
  private readonly objects = new Map<string, Map<string, K8sObject>>();
  private history: StoreEvent[] = [];
  /** Watches may resume from any resourceVersion ≥ this one. */
  private compactedRv = this.rv;
  private readonly subscribers = new Set<(e: StoreEvent) => void>();

  constructor(
    readonly resources: ResourceDef[],
    private readonly historyLimit = 2000,
  ) {
    for (const r of resources) this.objects.set(resourceKey(r), new Map());
  }

  get currentRv(): number {
    return this.rv;
  }

  get oldestResumableRv(): number {
    return this.compactedRv;
  }

  resource(group: string, plural: string): ResourceDef | undefined {
    return this.resources.find((r) => r.group === group && r.plural === plural);
  }

  /** The resource by plural (and group), throwing when it is not served. */
  def(plural: string, group = ''): ResourceDef {
    const r = this.resource(group, plural);
    if (!r) throw new Error(`resource ${plural}.${group} is not served`);
    return r;
  }

  /** Starts serving a kind (a CRD installed); its paths answer from now on. */
  addResource(r: ResourceDef): void {
    if (this.resource(r.group, r.plural)) return;
    this.resources.push(r);
    this.objects.set(resourceKey(r), new Map());
  }

  /** Stops serving a kind and drops its objects (a CRD deleted); its paths answer 404. */
  removeResource(group: string, plural: string): void {
    const r = this.resource(group, plural);
    if (!r) return;
    this.resources.splice(this.resources.indexOf(r), 1);
    this.objects.delete(resourceKey(r));
  }

  subscribe(fn: (e: StoreEvent) => void): () => void {
    this.subscribers.add(fn);
    return () => this.subscribers.delete(fn);
  }

  list(r: ResourceDef, namespace?: string): K8sObject[] {
    const all = [...this.bucket(r).values()];
    const scoped = namespace === undefined ? all : all.filter((o) => o.metadata.namespace === namespace);
    return scoped
      .sort((a, b) => objectKey(a.metadata.namespace, a.metadata.name).localeCompare(objectKey(b.metadata.namespace, b.metadata.name)))
      .map((o) => structuredClone(o));
  }

  get(r: ResourceDef, namespace: string | undefined, name: string): K8sObject | null {
    const o = this.bucket(r).get(objectKey(r.namespaced ? namespace : undefined, name));
    return o ? structuredClone(o) : null;
  }

  require(r: ResourceDef, namespace: string | undefined, name: string): K8sObject {
    const o = this.get(r, namespace, name);
    if (!o) throw this.notFound(r, name);
    return o;
  }

  create(r: ResourceDef, input: K8sObject): K8sObject {
    const obj = structuredClone(input);
    const meta = obj.metadata ?? ({} as K8sMetadata);
    if (!meta.name && meta.generateName) meta.name = `${meta.generateName}${randomUUID().slice(0, 5)}`;
    if (!meta.name) throw new StoreError(422, 'Invalid', `${r.kind}.${r.group} is invalid: metadata.name: Required value: name or generateName is required`);
    if (!r.namespaced) delete meta.namespace;
    const key = objectKey(meta.namespace, meta.name);
    if (this.bucket(r).has(key)) throw new StoreError(409, 'AlreadyExists', `${resourceKey(r)} "${meta.name}" already exists`);
    obj.apiVersion = apiVersionOf(r);
    obj.kind = r.kind;
    meta.uid = randomUUID();
    meta.generation = 1;
    meta.creationTimestamp = new Date().toISOString();
    meta.resourceVersion = String(++this.rv);
    obj.metadata = meta;
    this.bucket(r).set(key, obj);
    this.record(r, 'ADDED', obj);
    return structuredClone(obj);
  }

  /**
   * Replaces an object. With `expectRv` (the caller's metadata.resourceVersion, as PUT and
   * patches that carry one do) a stale version is a 409 Conflict.
   */
  update(r: ResourceDef, input: K8sObject, options: { expectRv?: string | undefined; keepStatus?: boolean } = {}): K8sObject {
    const current = this.bucket(r).get(objectKey(r.namespaced ? input.metadata.namespace : undefined, input.metadata.name));
    if (!current) throw this.notFound(r, input.metadata.name);
    if (options.expectRv !== undefined && options.expectRv !== current.metadata.resourceVersion) {
      throw new StoreError(
        409,
        'Conflict',
        `Operation cannot be fulfilled on ${resourceKey(r)} "${input.metadata.name}": the object has been modified; please apply your changes to the latest version and try again`,
      );
    }
    const next = structuredClone(input);
    next.apiVersion = apiVersionOf(r);
    next.kind = r.kind;
    // Immutable bookkeeping comes from the stored object.
    next.metadata = {
      ...next.metadata,
      name: current.metadata.name,
      uid: current.metadata.uid,
      creationTimestamp: current.metadata.creationTimestamp,
      resourceVersion: current.metadata.resourceVersion,
      generation: current.metadata.generation,
    };
    if (r.namespaced) next.metadata.namespace = current.metadata.namespace;
    else delete next.metadata.namespace;
    if (options.keepStatus) {
      if (current.status === undefined) delete next.status;
      else next.status = structuredClone(current.status);
    }
    // Deletion is requested and immutable; the object goes once its finalizers are gone (and a pod's grace ran out).
    if (current.metadata.deletionTimestamp) {
      next.metadata.deletionTimestamp = current.metadata.deletionTimestamp;
      if (current.metadata.deletionGracePeriodSeconds !== undefined) next.metadata.deletionGracePeriodSeconds = current.metadata.deletionGracePeriodSeconds;
      else delete next.metadata.deletionGracePeriodSeconds;
      if (!next.metadata.finalizers?.length && next.metadata.deletionGracePeriodSeconds === undefined) {
        return this.delete(r, next.metadata.namespace, next.metadata.name);
      }
    }
    if (sameContent(current, next)) return structuredClone(current);
    if (JSON.stringify(current.spec) !== JSON.stringify(next.spec)) next.metadata.generation = (current.metadata.generation ?? 1) + 1;
    next.metadata.resourceVersion = String(++this.rv);
    this.bucket(r).set(objectKey(next.metadata.namespace, next.metadata.name), next);
    this.record(r, 'MODIFIED', next);
    return structuredClone(next);
  }

  /** Read-modify-write for the simulated controllers (no version check: they own the state they write). */
  mutate(r: ResourceDef, namespace: string | undefined, name: string, change: (o: K8sObject) => void): K8sObject | null {
    const current = this.get(r, namespace, name);
    if (!current) return null;
    change(current);
    return this.update(r, current);
  }

  /**
   * A DELETE as the API server takes it: an object with finalizers (or a pod with a grace
   * period, `graceSeconds` > 0) gets a deletionTimestamp and stays; anything else goes now.
   */
  requestDelete(r: ResourceDef, namespace: string | undefined, name: string, at: number, graceSeconds?: number): K8sObject {
    const current = this.require(r, namespace, name);
    const finalizers = current.metadata.finalizers ?? [];
    if (!finalizers.length && !(graceSeconds && graceSeconds > 0)) return this.delete(r, namespace, name);
    if (current.metadata.deletionTimestamp) return current;
    const key = objectKey(r.namespaced ? namespace : undefined, name);
    const next = structuredClone(current);
    next.metadata.deletionTimestamp = new Date(at).toISOString();
    if (graceSeconds && graceSeconds > 0) next.metadata.deletionGracePeriodSeconds = graceSeconds;
    next.metadata.resourceVersion = String(++this.rv);
    this.bucket(r).set(key, next);
    this.record(r, 'MODIFIED', next);
    return structuredClone(next);
  }

  delete(r: ResourceDef, namespace: string | undefined, name: string): K8sObject {
    const key = objectKey(r.namespaced ? namespace : undefined, name);
    const current = this.bucket(r).get(key);
    if (!current) throw this.notFound(r, name);
    this.bucket(r).delete(key);
    const gone = structuredClone(current);
    gone.metadata.resourceVersion = String(++this.rv);
    this.record(r, 'DELETED', gone);
    return structuredClone(gone);
  }

  /** Changes of `r` after `sinceRv`, or null when that version has been compacted away (410 Gone). */
  eventsSince(r: ResourceDef, sinceRv: number): StoreEvent[] | null {
    if (sinceRv < this.compactedRv) return null;
    return this.history.filter((e) => e.resource === r && e.rv > sinceRv);
  }

  /** Forgets the history up to now, so that any watch resuming from an older version gets 410 Gone. */
  compact(): void {
    this.history = [];
    this.compactedRv = this.rv;
  }

  notFound(r: ResourceDef, name: string): StoreError {
    return new StoreError(404, 'NotFound', `${resourceKey(r)} "${name}" not found`);
  }

  private bucket(r: ResourceDef): Map<string, K8sObject> {
    return this.objects.get(resourceKey(r))!;
  }

  private record(r: ResourceDef, type: WatchEventType, object: K8sObject): void {
    const event: StoreEvent = { rv: this.rv, resource: r, type, object: structuredClone(object) };
    this.history.push(event);
    if (this.history.length > this.historyLimit) {
      const dropped = this.history.splice(0, this.history.length - this.historyLimit);
      this.compactedRv = dropped[dropped.length - 1]!.rv;
    }
    for (const fn of [...this.subscribers]) fn(event);
  }
}
