import type { Clock } from '../../src/cluster/clock.ts';
import { BackendError, notFound } from '../../src/cluster/errors.ts';
import type { PluginContext } from '../../src/cluster/plugin.ts';
import { retry } from '../../src/cluster/retry.ts';
import type { ClusterVm, RunStrategy, VmMaintenanceTracking } from '../../src/cluster/types.ts';
import { HOSTNAME_LABEL, MAINTENANCE_STRATEGY_LABEL } from '../../src/domain/labels.ts';
import { vmSubject, type KubeApi } from './api.ts';
import type { ClusterCache } from './cache.ts';
import { RESOURCES } from './kube.ts';
import { START_PREFERENCE_KEY, parseVmId, toClusterNode, trackingAnnotations, trackingOf, type KObject } from './mapping.ts';
import type { KubevirtOptions } from './options.ts';
import type { VmReads } from './vms.ts';

const json = (v: unknown) => JSON.stringify(v);

/** Stop, start, label and tracking writes of VMs; each resolves when the watches show it done. */
export class VmActions {
  constructor(
    private readonly api: KubeApi,
    private readonly cache: ClusterCache,
    private readonly reads: VmReads,
    private readonly options: KubevirtOptions,
    private readonly clock: Clock,
    private readonly log: PluginContext['log'],
  ) {}

  /**
   * Read-modify-write of a VM with optimistic concurrency: the merge patch carries the
   * resourceVersion it was computed from; a 409 Conflict re-reads and tries again.
   */
  async updateVm(id: string, change: (vm: KObject) => Record<string, unknown> | null): Promise<void> {
    const { namespace, name } = parseVmId(id)!;
    await retry(
      async () => {
        const vm = await this.api.getCustom(RESOURCES.vms, namespace, name, vmSubject(id));
        if (!vm) throw notFound('vm', id);
        const patch = change(vm);
        if (!patch) return;
        const metadata = { ...((patch['metadata'] as object | undefined) ?? {}), resourceVersion: vm.metadata?.resourceVersion };
        await this.api.patchCustom(RESOURCES.vms, namespace, name, { ...patch, metadata }, vmSubject(id));
      },
      {
        clock: this.clock,
        maxAttempts: this.options.conflictRetries + 1,
        // The re-read is the remedy: nothing to wait for.
        delayMs: () => 0,
        // Only the patch can meet 409: a read never does.
        retryable: (e) => e instanceof BackendError && e.code === 'Conflict',
        onRetry: (_e, { attempt }) => this.log.info({ vm: id, attempt: attempt - 1 }, `kubevirt: VM ${id} changed under us (409); retrying`),
      },
    );
  }

  async stopVm(id: string): Promise<void> {
    const { vm } = await this.reads.requireVm(id);
    if (vm.runStrategy === 'Halted' && vm.status === 'Stopped') return;
    if (vm.nodeId) await this.reads.requireOnline(vm.nodeId, `stop VM ${id}`, vmSubject(id));
    if (vm.runStrategy !== 'Halted') {
      await this.updateVm(id, (raw) => ({ spec: runStrategyPatch(raw, 'Halted') }));
    }
    await this.cache.waitVm(id, `stop VM ${id}`, this.options.vmActionTimeoutMs, (v) => v.runStrategy === 'Halted' && v.status === 'Stopped', 'resolve');
  }

  async startVm(id: string, options: { runStrategy: RunStrategy; nodeId?: string }): Promise<void> {
    const { runStrategy } = options;
    if (runStrategy === 'Halted') throw new BackendError('Rejected', `startVm: run strategy Halted does not start VM ${id}`, vmSubject(id));
    const { vm } = await this.reads.requireVm(id);
    const running = (v: ClusterVm) => v.runStrategy === runStrategy && v.status === 'Running' && v.nodeId !== null;
    const timeout = this.options.vmActionTimeoutMs;
    if (vm.runStrategy !== 'Halted') {
      // Already running (or starting): only the run strategy may need to change.
      if (vm.runStrategy !== runStrategy)
        await this.updateVm(id, (raw) => (raw.spec?.runStrategy === runStrategy ? null : { spec: runStrategyPatch(raw, runStrategy) }));
      if (!running(vm)) await this.cache.waitVm(id, `start VM ${id}`, timeout, running);
      return;
    }
    if (vm.status !== 'Stopped') await this.cache.waitVm(id, `start VM ${id} (waiting for its stop)`, timeout, (v) => v.status === 'Stopped');
    // KubeVirt has no "start on node X": a preferred node-affinity term steers the scheduler for this start.
    let preferHost: string | null = null;
    if (options.nodeId) {
      const node = await this.api.readNode(options.nodeId);
      if (node && toClusterNode(node).availability === 'ACTIVE' && !toClusterNode(node).cordoned)
        preferHost = node.metadata?.labels?.[HOSTNAME_LABEL] ?? options.nodeId;
    }
    await this.updateVm(id, (raw) => ({
      ...(preferHost && { metadata: { annotations: { [START_PREFERENCE_KEY]: preferHost } } }),
      spec: { ...runStrategyPatch(raw, runStrategy), ...(preferHost && { template: { spec: { affinity: withPreference(raw, preferHost) } } }) },
    }));
    try {
      await this.cache.waitVm(id, `start VM ${id}`, timeout, running);
    } finally {
      if (preferHost)
        await this.dropStartPreference(id).catch((e: unknown) =>
          this.log.warn({ err: e, vm: id }, `kubevirt: removing the start preference of VM ${id} failed`),
        );
    }
  }

  private async dropStartPreference(id: string): Promise<void> {
    await this.updateVm(id, (raw) => {
      const host = raw.metadata?.annotations?.[START_PREFERENCE_KEY];
      if (!host) return null;
      return { metadata: { annotations: { [START_PREFERENCE_KEY]: null } }, spec: { template: { spec: { affinity: withoutPreference(raw, host) } } } };
    });
  }

  async setVmMaintenanceStrategyLabel(id: string, value: string | null): Promise<void> {
    const { vm } = await this.reads.requireVm(id);
    if (vm.maintenanceStrategyLabel === value) return;
    const { namespace, name } = parseVmId(id)!;
    await this.api.patchCustom(RESOURCES.vms, namespace, name, { metadata: { labels: { [MAINTENANCE_STRATEGY_LABEL]: value } } }, vmSubject(id));
    await this.cache.waitVm(id, `label VM ${id}`, this.options.vmActionTimeoutMs, (v) => v.maintenanceStrategyLabel === value);
  }

  async setVmTracking(id: string, tracking: VmMaintenanceTracking | null): Promise<void> {
    const { raw } = await this.reads.requireVm(id);
    const wanted = json(tracking && { nodeName: tracking.nodeName, strategy: tracking.strategy, savedRunStrategy: tracking.savedRunStrategy });
    if (json(trackingOf(raw)) === wanted) return;
    const { namespace, name } = parseVmId(id)!;
    await this.api.patchCustom(RESOURCES.vms, namespace, name, { metadata: { annotations: trackingAnnotations(tracking) } }, vmSubject(id));
    // Waits through an outage: the write is done, and tracking is recorded as part of a stop, not retried on its own.
    await this.cache.waitVm(id, `record tracking on VM ${id}`, this.options.vmActionTimeoutMs, (v) => json(v.tracking) === wanted, 'notFound', true);
  }
}

/** The run-strategy part of a patch (the deprecated `spec.running` is dropped: they exclude each other). */
function runStrategyPatch(vm: KObject, runStrategy: RunStrategy): Record<string, unknown> {
  return { runStrategy, ...(vm.spec?.running !== undefined && { running: null }) };
}

const PREFERRED = 'preferredDuringSchedulingIgnoredDuringExecution';

function preferenceTerm(host: string) {
  return { weight: 100, preference: { matchExpressions: [{ key: HOSTNAME_LABEL, operator: 'In', values: [host] }] } };
}

/** The VM template's affinity with a preferred term for `host` added (merge-patch value). */
function withPreference(vm: KObject, host: string): unknown {
  const list: unknown[] = vm.spec?.template?.spec?.affinity?.nodeAffinity?.[PREFERRED] ?? [];
  const term = preferenceTerm(host);
  const rest = list.filter((t) => json(t) !== json(term));
  return { nodeAffinity: { [PREFERRED]: [...rest, term] } };
}

/** The merge-patch value that removes the term again, and any affinity left empty by it. */
function withoutPreference(vm: KObject, host: string): unknown {
  const affinity = vm.spec?.template?.spec?.affinity ?? {};
  const list: unknown[] = affinity.nodeAffinity?.[PREFERRED] ?? [];
  const rest = list.filter((t) => json(t) !== json(preferenceTerm(host)));
  const nodeAffinityKeys = Object.keys(affinity.nodeAffinity ?? {}).filter((k) => k !== PREFERRED);
  const otherAffinity = Object.keys(affinity).filter((k) => k !== 'nodeAffinity');
  if (rest.length === 0 && nodeAffinityKeys.length === 0 && otherAffinity.length === 0) return null;
  if (rest.length === 0 && nodeAffinityKeys.length === 0) return { nodeAffinity: null };
  return { nodeAffinity: { [PREFERRED]: rest.length ? rest : null } };
}
