import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubevirtController, type ControllerDelays } from './kubevirt-controller.ts';
import { ApiServer, type PolicyRule, type RecordedCall } from './server.ts';
import { ObjectStore, type K8sObject, type ResourceDef } from './store.ts';

export { ObjectStore, type K8sObject, type ResourceDef } from './store.ts';
export type { PolicyRule, RecordedCall, Verb } from './server.ts';

const core = (plural: string, kind: string, namespaced: boolean): ResourceDef => ({
  group: '',
  version: 'v1',
  plural,
  kind,
  namespaced,
  statusSubresource: false,
  strategicMerge: true,
});
const crd = (group: string, version: string, plural: string, kind: string): ResourceDef => ({
  group,
  version,
  plural,
  kind,
  namespaced: true,
  statusSubresource: true,
  strategicMerge: false,
});

const LONGHORN_REPLICAS = crd('longhorn.io', 'v1beta2', 'replicas', 'Replica');

export interface K8sSimOptions {
  /** Whether Longhorn's CRDs are installed (replicas.longhorn.io); without, its paths are 404. Default true. */
  longhorn?: boolean;
  delays?: Partial<ControllerDelays>;
  bookmarkIntervalMs?: number;
  /** Watch history kept for resumes; older versions answer 410 Gone. */
  historyLimit?: number;
}

export interface VmInput {
  namespace?: string;
  name: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  runStrategy?: string;
  /** Where its VMI runs now (created at once, Running); null: not running. */
  nodeName?: string | null;
  nodeSelector?: Record<string, string>;
  affinity?: unknown;
  /** Claim names of its disks (PVC volumes named `<claim>`). */
  claims?: string[];
  /** Gives it a GPU: KubeVirt then reports LiveMigratable=False HostDeviceNotLiveMigratable. */
  gpu?: boolean;
}

export const SIM_USER = 'system:serviceaccount:lockkeeper:lockkeeper';

/**
 * A Kubernetes API server with KubeVirt (and optionally Longhorn) for tests: real HTTP on
 * loopback, spoken to by the real `@kubernetes/client-node` through `kubeconfig`.
 */
export class K8sSim {
  readonly store: ObjectStore;
  readonly api: ApiServer;
  readonly controller: KubevirtController;
  url = '';
  readonly token = 'sim-token';
  private dir: string | null = null;

  private constructor(options: K8sSimOptions) {
    const resources: ResourceDef[] = [
      core('nodes', 'Node', false),
      core('persistentvolumeclaims', 'PersistentVolumeClaim', true),
      crd('kubevirt.io', 'v1', 'virtualmachines', 'VirtualMachine'),
      crd('kubevirt.io', 'v1', 'virtualmachineinstances', 'VirtualMachineInstance'),
      crd('kubevirt.io', 'v1', 'virtualmachineinstancemigrations', 'VirtualMachineInstanceMigration'),
    ];
    if (options.longhorn !== false) resources.push(LONGHORN_REPLICAS);
    this.store = new ObjectStore(resources, options.historyLimit);
    this.api = new ApiServer(this.store, { token: this.token, user: SIM_USER, bookmarkIntervalMs: options.bookmarkIntervalMs ?? 500 });
    this.controller = new KubevirtController(this.store, { startMs: 30, stopMs: 20, migrateMs: 40, ...options.delays });
  }

  static async start(options: K8sSimOptions = {}): Promise<K8sSim> {
    const sim = new K8sSim(options);
    sim.url = await sim.api.listen();
    return sim;
  }

  /** A kubeconfig (JSON is YAML) whose current context talks to this server with a bearer token. */
  kubeconfig(context = 'sim'): string {
    return JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      // Plain HTTP on loopback: the client only allows it with TLS verification off.
      clusters: [{ name: 'sim', cluster: { server: this.url, 'insecure-skip-tls-verify': true } }],
      users: [{ name: 'sim-user', user: { token: this.token } }],
      contexts: [{ name: context, context: { cluster: 'sim', user: 'sim-user' } }],
      'current-context': context,
    });
  }

  /** Writes the kubeconfig to a temporary file and returns its path. */
  kubeconfigFile(context = 'sim'): string {
    this.dir ??= mkdtempSync(join(tmpdir(), 'k8s-sim-'));
    const file = join(this.dir, 'kubeconfig');
    writeFileSync(file, this.kubeconfig(context));
    return file;
  }

  get calls(): RecordedCall[] {
    return this.api.calls;
  }

  /** Restricts requests to these RBAC rules (null: allow everything). */
  setRules(rules: PolicyRule[] | null): void {
    this.api.rules = rules;
  }

  def(plural: string, group = ''): ResourceDef {
    return this.store.def(plural, group);
  }

  addNode(
    name: string,
    options: { zone?: string; roles?: string[]; labels?: Record<string, string>; ready?: boolean; unschedulable?: boolean } = {},
  ): K8sObject {
    const labels: Record<string, string> = { 'kubernetes.io/hostname': name, ...options.labels };
    if (options.zone) labels['topology.kubernetes.io/zone'] = options.zone;
    for (const role of options.roles ?? []) labels[`node-role.kubernetes.io/${role}`] = 'true';
    return this.store.create(this.def('nodes'), {
      metadata: { name, labels },
      spec: options.unschedulable ? { unschedulable: true } : {},
      status: { conditions: [{ type: 'Ready', status: options.ready === false ? 'False' : 'True', reason: 'KubeletReady' }] },
    });
  }

  /**
   * The node's Ready condition, as the node lifecycle controller sets it: True, or (not ready)
   * `Unknown` when the kubelet stopped posting status (the default) or `False` when it reports
   * itself not ready. `lastTransitionTime` moves only when the status changes.
   */
  setNodeReady(name: string, ready: boolean, notReadyStatus: 'Unknown' | 'False' = 'Unknown'): void {
    this.store.mutate(this.def('nodes'), undefined, name, (n) => {
      const status = ready ? 'True' : notReadyStatus;
      const before = (n.status.conditions ?? []).find((c: { type: string }) => c.type === 'Ready');
      const now = new Date().toISOString();
      const reason = ready ? 'KubeletReady' : status === 'Unknown' ? 'NodeStatusUnknown' : 'KubeletNotReady';
      n.status.conditions = [
        { type: 'Ready', status, reason, lastHeartbeatTime: now, lastTransitionTime: before?.status === status ? before.lastTransitionTime : now },
      ];
    });
  }

  /** The kubelet posts its status: only `lastHeartbeatTime` of the Ready condition moves. */
  heartbeat(name: string): void {
    this.store.mutate(this.def('nodes'), undefined, name, (n) => {
      for (const c of n.status.conditions ?? []) if (c.type === 'Ready') c.lastHeartbeatTime = new Date(Date.now() + 1).toISOString();
    });
  }

  /** The API server unreachable (connections refused) or reachable again, on the same address. */
  setReachable(reachable: boolean): Promise<void> {
    return this.api.setReachable(reachable);
  }

  deleteNode(name: string): void {
    this.store.delete(this.def('nodes'), undefined, name);
  }

  /** Installs (true) or removes (false) Longhorn's `replicas.longhorn.io` CRD; removing drops its replicas. */
  setLonghornInstalled(installed: boolean): void {
    if (installed) this.store.addResource(LONGHORN_REPLICAS);
    else this.store.removeResource(LONGHORN_REPLICAS.group, LONGHORN_REPLICAS.plural);
  }

  addPvc(namespace: string, name: string, options: { volumeName?: string; accessModes?: string[] } = {}): K8sObject {
    return this.store.create(this.def('persistentvolumeclaims'), {
      metadata: { name, namespace },
      spec: { accessModes: options.accessModes ?? ['ReadWriteMany'], volumeName: options.volumeName ?? `pvc-${name}` },
      status: { phase: 'Bound' },
    });
  }

  addReplica(volumeName: string, nodeID: string, started: boolean, name = `${volumeName}-r-${nodeID}`): K8sObject {
    return this.store.create(this.def('replicas', 'longhorn.io'), {
      metadata: { name, namespace: 'longhorn-system', labels: { longhornvolume: volumeName } },
      spec: { volumeName, nodeID, failedAt: started ? '' : '2026-01-01T00:00:00Z' },
      status: { started, currentState: started ? 'running' : 'stopped' },
    });
  }

  /** A VM (and, with `nodeName`, its running VMI). */
  addVm(input: VmInput): K8sObject {
    const namespace = input.namespace ?? 'default';
    const running = input.nodeName != null;
    const runStrategy = input.runStrategy ?? (running ? 'Always' : 'Halted');
    const templateSpec: Record<string, unknown> = {
      domain: {
        devices: {
          disks: (input.claims ?? []).map((c) => ({ name: c, disk: { bus: 'virtio' } })),
          ...(input.gpu && { gpus: [{ name: 'gpu1', deviceName: 'nvidia.com/A100' }] }),
        },
      },
      volumes: (input.claims ?? []).map((c) => ({ name: c, persistentVolumeClaim: { claimName: c } })),
      ...(input.nodeSelector && { nodeSelector: input.nodeSelector }),
      ...(input.affinity !== undefined && { affinity: input.affinity }),
    };
    // Created with the status a settled controller would have given it, so no start is simulated.
    const vm = this.store.create(this.def('virtualmachines', 'kubevirt.io'), {
      metadata: { name: input.name, namespace, labels: input.labels ?? {}, annotations: input.annotations ?? {} },
      spec: { runStrategy, template: { metadata: { labels: { 'kubevirt.io/domain': input.name } }, spec: templateSpec } },
      status: running ? { printableStatus: 'Running', ready: true, created: true } : { printableStatus: 'Stopped', ready: false, created: false },
    });
    if (running) {
      this.controller.createVmi(vm, input.nodeName!);
    }
    return vm;
  }

  vm(namespace: string, name: string): K8sObject | null {
    return this.store.get(this.def('virtualmachines', 'kubevirt.io'), namespace, name);
  }

  vmi(namespace: string, name: string): K8sObject | null {
    return this.store.get(this.def('virtualmachineinstances', 'kubevirt.io'), namespace, name);
  }

  node(name: string): K8sObject | null {
    return this.store.get(this.def('nodes'), undefined, name);
  }

  migrations(namespace?: string): K8sObject[] {
    return this.store.list(this.def('virtualmachineinstancemigrations', 'kubevirt.io'), namespace);
  }

  async close(): Promise<void> {
    this.controller.close();
    await this.api.close();
  }
}
