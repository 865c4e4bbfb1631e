import { BackendError } from '../../src/cluster/errors.ts';
import type { PluginContext } from '../../src/cluster/plugin.ts';
import { HOSTNAME_LABEL } from '../../src/domain/labels.ts';
import { matchesPlacement } from '../../src/domain/placement.ts';
import { vmSubject, type KubeApi } from './api.ts';
import type { ClusterCache } from './cache.ts';
import { call, RESOURCES } from './kube.ts';
import { MANAGED_BY, MANAGED_BY_LABEL, toClusterNode, type KObject } from './mapping.ts';
import type { KubevirtOptions } from './options.ts';
import type { VmReads } from './vms.ts';

const FINAL = ['Succeeded', 'Failed'];

/** Live migrations: Lockkeeper's own VirtualMachineInstanceMigrations, created and followed. */
export class Migrations {
  constructor(
    private readonly api: KubeApi,
    private readonly cache: ClusterCache,
    private readonly reads: VmReads,
    private readonly options: KubevirtOptions,
    private readonly log: PluginContext['log'],
  ) {}

  async migrateVm(id: string, options: { fromNodeId: string; toNodeId?: string }): Promise<void> {
    const { fromNodeId, toNodeId } = options;
    const { vm } = await this.reads.requireVm(id);
    if (vm.nodeId !== fromNodeId || vm.status === 'Stopped') return;
    await this.reads.requireOnline(fromNodeId, `migrate VM ${id}`, vmSubject(id));
    if (!vm.liveMigratable) throw new BackendError('Rejected', `VM ${id} cannot be live-migrated: ${vm.liveMigratableReason}`, vmSubject(id));
    let addedNodeSelector: Record<string, string> | undefined;
    if (toNodeId !== undefined) {
      const target = await this.api.readNode(toNodeId);
      if (!target) throw new BackendError('Rejected', `migrate VM ${id}: target node ${toNodeId} does not exist`, vmSubject(id));
      const t = toClusterNode(target);
      if (t.availability === 'OFFLINE') throw new BackendError('Unavailable', `migrate VM ${id}: target node ${toNodeId} is not Ready`, vmSubject(id));
      if (t.cordoned) throw new BackendError('Conflict', `migrate VM ${id}: target node ${toNodeId} is cordoned`, vmSubject(id));
      if (!matchesPlacement(t.labels, vm))
        throw new BackendError('Rejected', `migrate VM ${id}: target node ${toNodeId} does not satisfy the VM's node selector/affinity`, vmSubject(id));
      addedNodeSelector = { [HOSTNAME_LABEL]: t.labels[HOSTNAME_LABEL] ?? toNodeId };
    }
    const namespace = vm.namespace;
    // Join a migration already in flight for this VMI rather than start a second one.
    const inFlight = this.cache
      .migrations()
      .find((m) => m.metadata?.namespace === namespace && m.spec?.vmiName === vm.name && !FINAL.includes(m.status?.phase));
    let migrationName = inFlight?.metadata?.name;
    if (!migrationName) {
      const body = {
        apiVersion: 'kubevirt.io/v1',
        kind: 'VirtualMachineInstanceMigration',
        metadata: { generateName: `${vm.name}-lockkeeper-`, namespace, labels: { [MANAGED_BY_LABEL]: MANAGED_BY } },
        spec: { vmiName: vm.name, ...(addedNodeSelector && { addedNodeSelector }) },
      };
      const created = (await call(
        'create',
        RESOURCES.migrations,
        () => this.api.k.custom.createNamespacedCustomObject({ group: 'kubevirt.io', version: 'v1', plural: RESOURCES.migrations.plural, namespace, body }),
        vmSubject(id),
      )) as KObject;
      migrationName = created.metadata!.name!;
      this.log.info(
        { vm: id, migration: migrationName, from: fromNodeId, to: toNodeId },
        `kubevirt: created VirtualMachineInstanceMigration ${namespace}/${migrationName}`,
      );
    }
    const key = `${namespace}/${migrationName}`;
    const what = `migrate VM ${id}`;
    const outcome = await this.cache.waitFor(
      what,
      this.options.migrationTimeoutMs,
      () => {
        if (!this.cache.vm(id)) throw new BackendError('Transient', `${what}: VM ${id} was deleted during the migration`, vmSubject(id));
        const m = this.cache.migration(key);
        if (m?.status?.phase === 'Failed')
          return { failed: String(m.status?.migrationState?.failureReason ?? this.cache.vmi(id)?.status?.migrationState?.failureReason ?? 'unknown reason') };
        if (m?.status?.phase === 'Succeeded') return { failed: null };
        return undefined;
      },
      vmSubject(id),
      // The migration goes on in the cluster without us: its wait outlives an outage (up to
      // migrationTimeoutMs) and resumes from the watch, so a migration is not failed by one.
      true,
    );
    if (outcome.failed !== null) {
      const code = /NotLiveMigratable/.test(outcome.failed) ? 'Rejected' : 'Transient';
      throw new BackendError(code, `${what}: migration ${key} failed: ${outcome.failed}`, vmSubject(id));
    }
    await this.cache.waitVm(id, what, this.options.migrationTimeoutMs, (v) => v.status === 'Running' && v.nodeId !== fromNodeId, 'transient', true);
  }
}
