import type { Clock } from '../../src/cluster/clock.ts';
import { BackendError, notFound } from '../../src/cluster/errors.ts';
import type { PluginContext } from '../../src/cluster/plugin.ts';
import { nodeSubject, type KubeApi } from './api.ts';
import type { ClusterCache } from './cache.ts';
import { call, mergePatch, RESOURCES, type Resource } from './kube.ts';
import { CONDITION_ANNOTATION, CONDITION_MESSAGE_ANNOTATION, DRAIN_TAINT, type KObject } from './mapping.ts';
import type { KubevirtOptions } from './options.ts';

const OUT_OF_SERVICE_TAINT = 'node.kubernetes.io/out-of-service';
/** Ours: a person confirmed the node is really down (k8s:U7 Decision); on the node, so a restart keeps it. */
const NODE_DOWN_CONFIRMED = 'lockkeeper.io/node-down-confirmed';
const DRAINED = 'Drained';
/** Harvester's `HarvesterNodeDrainedCondMsg`, used for both stages. */
const DRAINED_MESSAGE = 'Node is draining due to kubelet/node not ready.';

interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
  lastHeartbeatTime?: string;
}
interface Taint {
  key: string;
  value?: string;
  effect: string;
  timeAdded?: string;
}

const conditionOf = (node: KObject, type: string): Condition | undefined => ((node.status?.conditions ?? []) as Condition[]).find((c) => c.type === type);
const hasTaint = (node: KObject, key: string) => ((node.spec?.taints ?? []) as Taint[]).some((t) => t.key === key);
const UPGRADE_DONE = ['Succeeded', 'Failed'];

/**
 * k8s:U1–U8, Harvester's node-down handling (`node_down_controller.go`) as an option:
 * Ready `Unknown` for `period` → the drain taint and `Drained=False` (KubeVirt then migrates
 * what it can, k8s:E3); then, once `confirmNodeDown` said the node is really down and
 * `vmMigrationTimeout` has passed since `Drained` turned False → out-of-service and
 * `Drained=True` with Harvester's condition annotations; Ready again → all removed. Times
 * come from the conditions' `lastTransitionTime`, so a restart resumes where it was.
 */
export class NodeDownController {
  private readonly timers = new Map<string, () => void>();
  private readonly queued = new Set<string>();
  private running = 0;
  private stopped = false;
  private readonly mayAct: () => boolean;
  private unwatchLeadership: () => void = () => {};

  constructor(
    private readonly api: KubeApi,
    private readonly cache: ClusterCache,
    private readonly options: KubevirtOptions['nodeDown'],
    private readonly clock: Clock,
    private readonly log: PluginContext['log'],
    private readonly leadership: Pick<PluginContext, 'mayAct' | 'onLeaderChange'> = {},
  ) {
    this.mayAct = leadership.mayAct ?? (() => true);
    // Raw node changes, also those that map to nothing (taints, conditions).
    cache.onNodeTouched = (key) => this.queue(key);
  }

  start(): void {
    // ha:L8: a new leader looks at every node again: one that went down before it led sends no change to wake it.
    this.unwatchLeadership = this.leadership.onLeaderChange?.((leads) => leads && this.queueAll()) ?? (() => {});
    this.queueAll();
  }

  private queueAll(): void {
    for (const [key] of this.cache.cached(this.cache.nodeInformers)) this.queue(key);
  }

  stop(): void {
    this.stopped = true;
    this.unwatchLeadership();
    this.cache.onNodeTouched = null;
    for (const cancel of this.timers.values()) cancel();
    this.timers.clear();
  }

  /** k8s:U7 Decision: stage 2 needs a person's word that the node is down, not partitioned. */
  async confirm(nodeId: string): Promise<void> {
    const node = await this.api.readNode(nodeId);
    if (!node) throw notFound('node', nodeId);
    if (conditionOf(node, 'Ready')?.status !== 'Unknown')
      throw new BackendError(
        'Rejected',
        `node ${nodeId} is not down: its Ready condition is ${conditionOf(node, 'Ready')?.status ?? 'missing'}, not Unknown`,
        nodeSubject(nodeId),
      );
    if (node.metadata?.annotations?.[NODE_DOWN_CONFIRMED]) return;
    await call(
      'patch',
      RESOURCES.nodes,
      () =>
        this.api.k.core.patchNode(
          { name: nodeId, body: { metadata: { annotations: { [NODE_DOWN_CONFIRMED]: new Date(this.clock.now()).toISOString() } } } },
          mergePatch,
        ),
      nodeSubject(nodeId),
    );
    this.log.info({ node: nodeId }, `kubevirt: node ${nodeId} confirmed down; out-of-service follows vmMigrationTimeout after Drained=False`);
  }

  /**
   * Reconciles queued or running. 0 once every node change the cache reported and every
   * timer that fired has been acted on (its writes answered): with the informers caught up
   * and the clock standing still, nothing more will be written until time moves or the
   * cluster changes — the definite signal for tests that check nothing was written.
   */
  get busy(): number {
    return this.queued.size + this.running;
  }

  private queue(nodeId: string): void {
    if (this.stopped || this.queued.has(nodeId)) return;
    this.queued.add(nodeId);
    queueMicrotask(() => {
      this.queued.delete(nodeId);
      this.running++;
      this.reconcile(nodeId)
        .catch((e: unknown) => this.log.warn({ err: e, node: nodeId }, `kubevirt: node-down handling of ${nodeId} failed; trying again on its next change`))
        .finally(() => this.running--);
    });
  }

  private wakeAt(nodeId: string, at: number): void {
    this.timers.get(nodeId)?.();
    const cancel = this.clock.setTimer(Math.max(0, at - this.clock.now()), () => {
      this.timers.delete(nodeId);
      this.queue(nodeId);
    });
    this.timers.set(nodeId, cancel);
  }

  /**
   * k8s:U2: any Harvester upgrade not Succeeded/Failed pauses everything, clean-up included:
   * the in-tree controller's `Upgrade` objects (label `harvesterhci.io/upgradeState`) and
   * upgrade-toolkit's cluster-scoped `UpgradePlan`s (`status.currentPhase`, empty = just
   * created), as `isOnUpgradeV1` and `isOnUpgradeV2` read them. A kind that is not installed
   * counts as no upgrade.
   */
  private async upgradeRunning(): Promise<boolean> {
    const running = async (r: Resource, namespace: string | undefined, phase: (o: KObject) => string | undefined) => {
      try {
        return (await this.api.listRaw(r, namespace)).items.some((o) => !UPGRADE_DONE.includes(phase(o) ?? ''));
      } catch (e) {
        if (e instanceof BackendError && e.code === 'NotFound') return false;
        throw e;
      }
    };
    return (
      (await running(RESOURCES.upgrades, 'harvester-system', (u) => u.metadata?.labels?.['harvesterhci.io/upgradeState'])) ||
      (await running(RESOURCES.upgradePlans, undefined, (p) => p.status?.currentPhase))
    );
  }

  private async reconcile(nodeId: string): Promise<void> {
    // ha:L8: node-down handling only on the leader (a stand-by's writes would be refused anyway: it does not try).
    if (this.stopped || !this.mayAct()) return;
    const node = this.cache.rawNode(nodeId);
    if (!node) return;
    const ready = conditionOf(node, 'Ready');
    const drained = conditionOf(node, DRAINED);
    const touched = drained || hasTaint(node, DRAIN_TAINT) || hasTaint(node, OUT_OF_SERVICE_TAINT);
    // k8s:U2: only Unknown triggers; False does nothing (Harvester's branch is empty).
    if (ready?.status !== 'Unknown' && !(ready?.status === 'True' && touched)) return;
    // Paused, not forgotten: nothing else wakes an Unknown node (it sends no heartbeats), so look again after `period`.
    if (await this.upgradeRunning()) return this.wakeAt(nodeId, this.clock.now() + this.options.period * 1000);
    const now = this.clock.now();
    if (ready.status === 'True') return this.recover(nodeId, node);
    if (!hasTaint(node, DRAIN_TAINT)) {
      // Stage 1 (k8s:U3), counted from Ready's lastTransitionTime (k8s:U6).
      const due = Date.parse(ready.lastTransitionTime ?? new Date(now).toISOString()) + this.options.period * 1000;
      if (now < due) return this.wakeAt(nodeId, due);
      await this.addTaint(nodeId, { key: DRAIN_TAINT, effect: 'NoSchedule' });
      // k8s:U8: the condition in the same step as the taint.
      await this.setDrained(nodeId, 'False', 'HarvesterNodeIsDraining');
      this.log.warn({ node: nodeId }, `kubevirt: node ${nodeId} not reporting for ${this.options.period} s: tainted ${DRAIN_TAINT}, Drained=False`);
      return;
    }
    if (!drained) {
      // k8s:U8: a drain taint without the condition (an upgrade's, a person's): our stage-2 clock starts now.
      await this.setDrained(nodeId, 'False', 'HarvesterNodeIsDraining');
      return;
    }
    if (hasTaint(node, OUT_OF_SERVICE_TAINT)) {
      // Harvester's "both taints" branch: a stage 2 cut short (a restart between its writes) is finished, not left half-done (k8s:U7).
      if (drained.status !== 'True' || node.metadata?.annotations?.[CONDITION_ANNOTATION] !== DRAINED) await this.markDrained(nodeId);
      return;
    }
    // Stage 2 (k8s:U4), only after confirmation (k8s:U7 Decision).
    const due = Date.parse(drained.lastTransitionTime ?? new Date(now).toISOString()) + this.options.vmMigrationTimeout * 1000;
    if (now < due) return this.wakeAt(nodeId, due);
    if (!node.metadata?.annotations?.[NODE_DOWN_CONFIRMED]) {
      this.log.warn({ node: nodeId }, `kubevirt: node ${nodeId} is down past vmMigrationTimeout; out-of-service waits for confirmNodeDown`);
      return;
    }
    await this.addTaint(nodeId, { key: OUT_OF_SERVICE_TAINT, effect: 'NoExecute' });
    await this.markDrained(nodeId);
    this.log.warn({ node: nodeId }, `kubevirt: node ${nodeId} tainted ${OUT_OF_SERVICE_TAINT}: its pods are deleted and its VMs restart elsewhere`);
  }

  /** k8s:U4: `Drained=True` and the condition annotations Harvester's condition controller derives from it. */
  private async markDrained(nodeId: string): Promise<void> {
    await this.setDrained(nodeId, 'True', 'HarvesterNodeIsDrained');
    await this.annotate(nodeId, { [CONDITION_ANNOTATION]: DRAINED, [CONDITION_MESSAGE_ANNOTATION]: DRAINED_MESSAGE });
  }

  /** k8s:U5: Ready again: both taints by key, the Drained condition and its annotations go. */
  private async recover(nodeId: string, node: KObject): Promise<void> {
    const taints = ((node.spec?.taints ?? []) as Taint[]).filter((t) => t.key !== DRAIN_TAINT && t.key !== OUT_OF_SERVICE_TAINT);
    await call(
      'patch',
      RESOURCES.nodes,
      () =>
        this.api.k.core.patchNode(
          {
            name: nodeId,
            body: {
              metadata: {
                resourceVersion: node.metadata?.resourceVersion,
                annotations: { [CONDITION_ANNOTATION]: null, [CONDITION_MESSAGE_ANNOTATION]: null, [NODE_DOWN_CONFIRMED]: null },
              },
              spec: { taints: taints.length ? taints : null },
            },
          },
          mergePatch,
        ),
      nodeSubject(nodeId),
    );
    if (conditionOf(node, DRAINED)) await this.writeConditions(nodeId, (list) => list.filter((c) => c.type !== DRAINED));
    this.log.info({ node: nodeId }, `kubevirt: node ${nodeId} Ready again: node-down taints and the Drained condition removed`);
  }

  private async addTaint(nodeId: string, taint: Taint): Promise<void> {
    const node = await this.api.readNode(nodeId);
    if (!node || hasTaint(node, taint.key)) return;
    const taints = [...((node.spec?.taints ?? []) as Taint[]), { ...taint, timeAdded: new Date(this.clock.now()).toISOString() }];
    await call(
      'patch',
      RESOURCES.nodes,
      () => this.api.k.core.patchNode({ name: nodeId, body: { metadata: { resourceVersion: node.metadata?.resourceVersion }, spec: { taints } } }, mergePatch),
      nodeSubject(nodeId),
    );
  }

  private async annotate(nodeId: string, annotations: Record<string, string | null>): Promise<void> {
    await call(
      'patch',
      RESOURCES.nodes,
      () => this.api.k.core.patchNode({ name: nodeId, body: { metadata: { annotations } } }, mergePatch),
      nodeSubject(nodeId),
    );
  }

  /** `SetNodeStatusCondition`: lastTransitionTime moves only when the status changes. */
  private setDrained(nodeId: string, status: 'True' | 'False', reason: string): Promise<void> {
    const now = new Date(this.clock.now()).toISOString();
    return this.writeConditions(nodeId, (list) => {
      const before = list.find((c) => c.type === DRAINED);
      const next: Condition = {
        type: DRAINED,
        status,
        reason,
        message: DRAINED_MESSAGE,
        lastHeartbeatTime: now,
        lastTransitionTime: before?.status === status ? (before.lastTransitionTime ?? now) : now,
      };
      return [...list.filter((c) => c.type !== DRAINED), next];
    });
  }

  /** nodes/status: the whole conditions list with the node's resourceVersion (a merge patch replaces lists). */
  private async writeConditions(nodeId: string, change: (list: Condition[]) => Condition[]): Promise<void> {
    const node = await this.api.readNode(nodeId);
    if (!node) return;
    const conditions = change([...((node.status?.conditions ?? []) as Condition[])]);
    await call(
      'patch',
      RESOURCES.nodeStatus,
      () =>
        this.api.k.core.patchNodeStatus(
          { name: nodeId, body: { metadata: { resourceVersion: node.metadata?.resourceVersion }, status: { conditions } } },
          mergePatch,
        ),
      nodeSubject(nodeId),
    );
  }
}
