import { BackendError } from '../../src/cluster/errors.ts';
import type { CancelledMigration } from '../../src/cluster/node-maintenance.ts';
import type { Clock } from '../../src/cluster/clock.ts';
import type { PluginContext } from '../../src/cluster/plugin.ts';
import { HOSTNAME_LABEL } from '../../src/domain/labels.ts';
import { matchesPlacement } from '../../src/domain/placement.ts';
import { vmSubject, type KubeApi } from './api.ts';
import type { ClusterCache } from './cache.ts';
import { call, RESOURCES } from './kube.ts';
import { boundOf, completionBoundMs, memoryGiB, migrationSettings, PENDING_BOUND_MS } from './migration-bound.ts';
import { MANAGED_BY, MANAGED_BY_LABEL, toClusterNode, type KObject } from './mapping.ts';
import type { KubevirtOptions } from './options.ts';
import type { VmReads } from './vms.ts';

const FINAL = ['Succeeded', 'Failed'];
/** KubeVirt's mutating webhook labels every migration with its VMI (k8s:C5). */
const VMI_NAME_LABEL = 'kubevirt.io/vmi-name';

class MigrationTimeout extends BackendError {}
/** The wait's span ends and the limit is looked at again (KubeVirt started the migration). */
const RESPAN = { failed: 'respan' } as const;
/** One span of the wait ended; the limit is looked at again. */
class SpanOver extends BackendError {}

const isOurs = (m: KObject) => m.metadata?.labels?.[MANAGED_BY_LABEL] === MANAGED_BY;
const isFinal = (m: KObject | undefined) => !!m && FINAL.includes(m.status?.phase);
const keyOf = (m: KObject) => `${m.metadata?.namespace}/${m.metadata?.name}`;

/**
 * Live migrations: Lockkeeper's own VirtualMachineInstanceMigrations (labelled
 * `app.kubernetes.io/managed-by=lockkeeper`), created, followed, and cancelled by deleting
 * them (k8s:C1, k8s:C9) — never another's.
 */
export class Migrations {
  constructor(
    private readonly api: KubeApi,
    private readonly cache: ClusterCache,
    private readonly reads: VmReads,
    private readonly options: KubevirtOptions,
    private readonly clock: Clock,
    private readonly log: PluginContext['log'],
  ) {}

  /**
   * When Lockkeeper gives up on migration `key` (issue 26 point 5): KubeVirt's bound plus the
   * backstop, counted from KubeVirt's start (first seen by this process) once it started,
   * from when this process created or joined it before (KubeVirt's pending bound then).
   */
  private limitAt(key: string, vmId: string, gib: number, since: { joinedAt: number; startedAt: number | null }): number {
    const m = this.cache.migration(key);
    const state = m?.status?.migrationState;
    if (since.startedAt === null && (state?.startTimestamp || m?.status?.phase === 'Running')) since.startedAt = this.clock.now();
    if (since.startedAt === null) return since.joinedAt + PENDING_BOUND_MS + this.options.migrationBackstopMs;
    const vmiState = this.cache.vmi(vmId)?.status?.migrationState;
    const own = vmiState?.migrationUid === m?.metadata?.uid ? vmiState?.migrationConfiguration : state?.migrationConfiguration;
    return since.startedAt + completionBoundMs(migrationSettings(own, this.cache.clusterMigrations), gib) + this.options.migrationBackstopMs;
  }

  async migrateVm(id: string, options: { fromNodeId: string; toNodeId?: string }): Promise<void> {
    const { fromNodeId, toNodeId } = options;
    const { vm, vmi } = await this.reads.requireVm(id);
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
    // k8s:C5: join the migration in flight for this VMI (by KubeVirt's label, final ones ignored) rather than start a second one.
    const inFlight = this.cache
      .migrations()
      .find((m) => m.metadata?.namespace === namespace && (m.metadata?.labels?.[VMI_NAME_LABEL] ?? m.spec?.vmiName) === vm.name && !isFinal(m));
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
    const gib = memoryGiB(vmi?.spec);
    const since = { joinedAt: this.clock.now(), startedAt: null as number | null };
    let seen = false;
    const check = (): { failed: string | null } | undefined => {
      if (!this.cache.vm(id)) throw new BackendError('Transient', `${what}: VM ${id} was deleted during the migration`, vmSubject(id));
      const m = this.cache.migration(key);
      if (m) seen = true;
      // Deleted before it ended: cancelled (by Lockkeeper's disable, k8s:C9, or by someone else).
      else if (seen) throw new BackendError('Transient', `${what}: migration ${key} was deleted before it ended`, vmSubject(id));
      if (m?.status?.phase === 'Failed')
        return { failed: String(m.status?.migrationState?.failureReason ?? this.cache.vmi(id)?.status?.migrationState?.failureReason ?? 'unknown reason') };
      if (m?.status?.phase === 'Succeeded') return { failed: null };
      // Noted as soon as the watch shows it: the limit is counted from KubeVirt's start, and this span ends for the new limit.
      const before = since.startedAt;
      this.limitAt(key, id, gib, since);
      return before === null && since.startedAt !== null ? RESPAN : undefined;
    };
    let outcome: { failed: string | null } | typeof RESPAN | undefined;
    try {
      // Waited in spans up to the limit as it stands; the limit moves when KubeVirt starts the migration.
      while (outcome === undefined || outcome === RESPAN) {
        const limit = this.limitAt(key, id, gib, since);
        const span = limit - this.clock.now();
        if (span <= 0)
          throw new MigrationTimeout('Transient', `${what}: not done ${this.options.migrationBackstopMs} ms past KubeVirt's own bound`, vmSubject(id));
        outcome = await this.cache
          .waitFor(
            what,
            span,
            check,
            vmSubject(id),
            // The migration goes on in the cluster without us: its wait outlives an outage and
            // resumes from the watch, so a migration is not failed by one.
            true,
            () => new SpanOver('Transient', what, vmSubject(id)),
          )
          .catch((e: unknown) => {
            if (e instanceof SpanOver) return undefined;
            throw e;
          });
      }
    } catch (e) {
      if (!(e instanceof MigrationTimeout)) throw e;
      // k8s:C9 (b): ours is cancelled (deleted) and where the VM ended up is read (k8s:C3); another's is left alone (k8s:C9 c).
      const m = this.cache.migration(key);
      if (!m || !isOurs(m)) throw new BackendError('Transient', `${e.message}; migration ${key} is not Lockkeeper's and is left in place`, vmSubject(id));
      const [cancelled] = await this.cancel([m]);
      throw new BackendError(
        'Transient',
        `${e.message}: migration ${key} cancelled (deleted); VM ${id} is on ${cancelled?.nodeId ? `node ${cancelled.nodeId}` : 'no node'}`,
        vmSubject(id),
      );
    }
    if (outcome.failed !== null) {
      const code = /NotLiveMigratable/.test(outcome.failed) ? 'Rejected' : 'Transient';
      const bound = boundOf(outcome.failed);
      throw new BackendError(code, `${what}: migration ${key} failed: ${outcome.failed}${bound ? ` (ended by ${bound})` : ''}`, vmSubject(id));
    }
    await this.cache.waitVm(id, what, this.options.vmActionTimeoutMs, (v) => v.status === 'Running' && v.nodeId !== fromNodeId, 'transient', true);
  }

  /** k8s:C9 (a): Lockkeeper's own migrations of VMs on the node that have not ended are cancelled. */
  cancelMigrations(nodeId: string): Promise<CancelledMigration[]> {
    const onNode = (m: KObject) => {
      const vmi = this.cache.vmi(`${m.metadata?.namespace}/${m.spec?.vmiName}`);
      return vmi?.status?.nodeName === nodeId || vmi?.status?.migrationState?.sourceNode === nodeId;
    };
    return this.cancel(this.cache.migrations().filter((m) => isOurs(m) && !isFinal(m) && onNode(m)));
  }

  /**
   * k8s:C1–C3: a cancel is a DELETE; KubeVirt's finalizer keeps the object until the
   * migration is final, so this waits until each is gone (or final without finalizers), then
   * reads where its VM is: an abort may lose the race and the VM end on the target.
   */
  private async cancel(migrations: KObject[]): Promise<CancelledMigration[]> {
    if (!migrations.length) return [];
    await Promise.all(migrations.map((m) => this.deleteOne(m)));
    const settled = () =>
      migrations.every((m) => {
        const now = this.cache.migration(keyOf(m));
        return !now || (isFinal(now) && !(now.metadata?.['finalizers'] as string[] | undefined)?.length);
      });
    await this.cache.waitFor(
      `cancel migration(s) ${migrations.map(keyOf).join(', ')}`,
      this.options.vmActionTimeoutMs,
      () => (settled() ? true : undefined),
      undefined,
      true,
    );
    // Where each VM is now, read from the API server: the VMI's watch may still trail the migrations' (k8s:C3).
    return Promise.all(
      migrations.map(async (m) => {
        const vmId = `${m.metadata?.namespace}/${m.spec?.vmiName}`;
        const vmi = await this.api.getCustom(RESOURCES.vmis, m.metadata!.namespace!, String(m.spec?.vmiName), vmSubject(vmId));
        return { vmId, migration: keyOf(m), nodeId: vmi && !FINAL.includes(vmi.status?.phase) ? (vmi.status?.nodeName ?? null) : null };
      }),
    );
  }

  private async deleteOne(m: KObject): Promise<void> {
    try {
      await call('delete', RESOURCES.migrations, () =>
        this.api.k.custom.deleteNamespacedCustomObject({
          group: RESOURCES.migrations.group,
          version: RESOURCES.migrations.version,
          plural: RESOURCES.migrations.plural,
          namespace: m.metadata!.namespace!,
          name: m.metadata!.name!,
        }),
      );
      this.log.info({ migration: keyOf(m) }, `kubevirt: deleted VirtualMachineInstanceMigration ${keyOf(m)} (cancel)`);
    } catch (e) {
      if (!(e instanceof BackendError && e.code === 'NotFound')) throw e;
    }
  }
}
