import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import {
  ApiextensionsV1Api,
  ApiException,
  AppsV1Api,
  CoreV1Api,
  createConfiguration,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  ServerConfiguration,
  setHeaderOptions,
  Watch,
} from '@kubernetes/client-node';
import { BackendError } from '../../src/cluster/errors.ts';
import type { LeaseAuthority } from '../../src/cluster/authority.ts';
import { SENDER_HEADER, type PluginContext } from '../../src/cluster/plugin.ts';
import { gateConnections } from '../../src/cluster/send-gate.ts';
import type { KubevirtOptions } from './options.ts';

/** The API resources this plugin touches, as RBAC names them. */
export const RESOURCES = {
  nodes: { group: '', version: 'v1', plural: 'nodes' },
  nodeStatus: { group: '', version: 'v1', plural: 'nodes/status' },
  pvcs: { group: '', version: 'v1', plural: 'persistentvolumeclaims' },
  pods: { group: '', version: 'v1', plural: 'pods' },
  evictions: { group: '', version: 'v1', plural: 'pods/eviction' },
  daemonsets: { group: 'apps', version: 'v1', plural: 'daemonsets' },
  crds: { group: 'apiextensions.k8s.io', version: 'v1', plural: 'customresourcedefinitions' },
  kubevirts: { group: 'kubevirt.io', version: 'v1', plural: 'kubevirts' },
  upgrades: { group: 'harvesterhci.io', version: 'v1beta1', plural: 'upgrades' },
  upgradePlans: { group: 'management.harvesterhci.io', version: 'v1beta1', plural: 'upgradeplans' },
  vms: { group: 'kubevirt.io', version: 'v1', plural: 'virtualmachines' },
  vmis: { group: 'kubevirt.io', version: 'v1', plural: 'virtualmachineinstances' },
  migrations: { group: 'kubevirt.io', version: 'v1', plural: 'virtualmachineinstancemigrations' },
  replicas: { group: 'longhorn.io', version: 'v1beta2', plural: 'replicas' },
  // Read only by a rehearsal's snapshot (issue 33).
  pdbs: { group: 'policy', version: 'v1', plural: 'poddisruptionbudgets' },
  migrationPolicies: { group: 'migrations.kubevirt.io', version: 'v1alpha1', plural: 'migrationpolicies' },
  harvesterSettings: { group: 'harvesterhci.io', version: 'v1beta1', plural: 'settings' },
} as const;
export type Resource = (typeof RESOURCES)[keyof typeof RESOURCES];
export type Verb = 'get' | 'list' | 'watch' | 'create' | 'patch' | 'delete';

export const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/** Loads the kubeconfig the options ask for: a file, else the in-cluster service account, else ~/.kube/config. */
export function loadKubeConfig(options: Pick<KubevirtOptions, 'kubeconfigPath' | 'context'>, configDir: string): KubeConfig {
  const kc = new KubeConfig();
  if (options.kubeconfigPath) {
    kc.loadFromFile(isAbsolute(options.kubeconfigPath) ? options.kubeconfigPath : resolve(configDir, options.kubeconfigPath));
  } else if (process.env.KUBERNETES_SERVICE_HOST && existsSync('/var/run/secrets/kubernetes.io/serviceaccount/token')) {
    kc.loadFromCluster();
  } else if (process.env.KUBECONFIG) {
    kc.loadFromDefault();
  } else {
    const file = join(homedir(), '.kube', 'config');
    if (!existsSync(file)) throw new Error(`kubevirt plugin: no kubeconfigPath given, not running in a pod, and ${file} does not exist`);
    kc.loadFromFile(file);
  }
  if (options.context) {
    if (!kc.getContextObject(options.context)) throw new Error(`kubevirt plugin: the kubeconfig has no context "${options.context}"`);
    kc.setCurrentContext(options.context);
  }
  if (!kc.getCurrentCluster()) throw new Error('kubevirt plugin: the kubeconfig names no cluster for its current context');
  return kc;
}

export interface KubeClients {
  kc: KubeConfig;
  core: CoreV1Api;
  apps: AppsV1Api;
  extensions: ApiextensionsV1Api;
  custom: CustomObjectsApi;
  watch: Watch;
}

const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * The API clients, as `kc.makeApiClient` builds them plus one gate (ha:L2, ha:L3, ha:L8): a
 * request that changes the cluster is refused when it is built unless `mayAct()` — the
 * gateway's leadership — says this replica may act, however long ago the action began, and
 * checked again when its connection is up, just before its first byte is written
 * (src/cluster/send-gate.ts): a replica frozen in between sends nothing when it wakes.
 * ha:L9: every request, reads included, is sent under the authority of the call it serves
 * (`authority()`): refused once that epoch is over or its lease deadline passed, aborted by
 * its signal at step-down, and named by its tag (`holder@epoch/run-<id>`) in
 * `x-lockkeeper-sender`. (The informer's watches are long-lived and started at start: they
 * follow the replica, not a run, and are not gated.)
 */
export function makeClients(kc: KubeConfig, gate: Pick<PluginContext, 'mayAct' | 'authority'> = {}): KubeClients {
  const { mayAct = () => true, authority: authorityOf } = gate;
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('No active cluster!');
  const configuration = createConfiguration({
    baseServer: new ServerConfiguration(cluster.server, {}),
    authMethods: { default: kc },
    promiseMiddleware: [
      {
        pre: async (request) => {
          const what = () => `${request.getHttpMethod()} ${new URL(request.getUrl()).pathname}`;
          const authority = authorityOf?.();
          if (authority) {
            authority.assertValid();
            request.setHeaderParam(SENDER_HEADER, authority.tag());
            const own = request.getSignal();
            request.setSignal(own ? AbortSignal.any([own, authority.signal]) : authority.signal);
          }
          if (!WRITES.has(request.getHttpMethod())) return request;
          if (!mayAct() || authority?.leads === false) throw new BackendError('Unavailable', `${what()} refused: this replica is not the leader (ha:L2)`);
          // Each request has an agent of its own (KubeConfig.applySecurityAuthentication), so one connection.
          const agent = request.getAgent();
          if (agent) request.setAgent(gateConnections(agent, () => mayAct() && stillValid(authority), what));
          return request;
        },
        post: async (response) => response,
      },
    ],
  });
  return {
    kc,
    core: new CoreV1Api(configuration),
    apps: new AppsV1Api(configuration),
    extensions: new ApiextensionsV1Api(configuration),
    custom: new CustomObjectsApi(configuration),
    watch: new Watch(kc),
  };
}

/** The authority's checks (its deadline included) still pass: for the check made once the connection is up. */
function stillValid(authority: LeaseAuthority | undefined): boolean {
  try {
    authority?.assertValid();
    return true;
  } catch {
    return false;
  }
}

/** The HTTP status of a failed call, or null for a network failure. */
export function httpStatusOf(e: unknown): number | null {
  if (e instanceof ApiException) return e.code;
  const code = (e as { statusCode?: unknown; code?: unknown } | null)?.statusCode;
  return typeof code === 'number' ? code : null;
}

/** A failed call's `metav1.Status` body, when it has one. */
export interface StatusBody {
  message?: string;
  reason?: string;
  details?: { causes?: { reason?: string; type?: string; message?: string; field?: string }[] };
}

export function statusBodyOf(e: unknown): StatusBody | null {
  if (!(e instanceof ApiException)) return null;
  const body: unknown = e.body;
  try {
    const parsed = typeof body === 'string' ? JSON.parse(body) : body;
    return parsed && typeof parsed === 'object' ? (parsed as StatusBody) : null;
  } catch {
    // not JSON
    return null;
  }
}

/** The Kubernetes Status message in an error body, when there is one. */
function statusMessage(e: unknown): string | null {
  const message = statusBodyOf(e)?.message;
  return typeof message === 'string' ? message : null;
}

const resourceName = (r: Pick<Resource, 'group' | 'plural'>) => (r.group ? `${r.plural}.${r.group}` : r.plural);

/**
 * Translates a failed API call into the backend's closed error set (docs/architecture.md §2):
 * unreachable, 5xx and 429 → Unavailable (retryable); 403 → Rejected naming the missing
 * RBAC verb and resource; 404 → NotFound; 409 → Conflict; other 4xx → Rejected.
 */
export function toBackendError(e: unknown, verb: Verb, resource: Resource, subject?: { kind: 'node' | 'vm'; id: string }): BackendError {
  if (e instanceof BackendError) return e;
  const code = httpStatusOf(e);
  const detail = statusMessage(e) ?? (e instanceof Error ? e.message : String(e));
  const what = `${verb} ${resourceName(resource)}`;
  if (code === null) return new BackendError('Unavailable', `Kubernetes API server unreachable (${what}): ${detail}`, subject);
  if (code >= 500 || code === 429) return new BackendError('Unavailable', `Kubernetes API server unavailable (${what}: HTTP ${code}): ${detail}`, subject);
  if (code === 403) {
    return new BackendError(
      'Rejected',
      `forbidden: the service account lacks RBAC permission to ${verb} ${resource.plural} in API group "${resource.group}" (grant verb "${verb}" on resource "${resource.plural}"): ${detail}`,
      subject,
    );
  }
  if (code === 401) return new BackendError('Rejected', `unauthorized: the Kubernetes API server rejected the credentials (${what}): ${detail}`, subject);
  if (code === 404) return new BackendError('NotFound', `${what}: ${detail}`, subject);
  if (code === 409) return new BackendError('Conflict', `${what}: ${detail}`, subject);
  return new BackendError('Rejected', `${what} (HTTP ${code}): ${detail}`, subject);
}

/** Runs one API call, translating its failure; `onNotFound` turns a 404 into a value. */
export async function call<T>(verb: Verb, resource: Resource, fn: () => Promise<T>, subject?: { kind: 'node' | 'vm'; id: string }): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    throw toBackendError(e, verb, resource, subject);
  }
}
