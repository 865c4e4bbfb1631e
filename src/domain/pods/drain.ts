/**
 * Draining a node of its other pods the way `kubectl drain` does (k8s:K1–K8, k8s:K10), with
 * Harvester's defaults (k8s:K4). Pure: the pods come in as data, verdicts go out.
 */

/** A pod as the drain rules see it. */
export interface DrainPod {
  namespace: string;
  name: string;
  uid: string;
  phase: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  /** The owner reference with `controller: true`, if any. */
  controller: { apiVersion: string; kind: string; name: string } | null;
  /** For a DaemonSet controller: whether that DaemonSet exists; null otherwise. */
  controllerFound: boolean | null;
  hasEmptyDir: boolean;
  /** `metadata.deletionTimestamp` (ms), null when the pod is not being deleted. */
  deletionTimestamp: number | null;
  terminationGracePeriodSeconds: number | null;
}

export interface PodDrainOptions {
  ignoreDaemonSets: boolean;
  deleteEmptyDirData: boolean;
  /** Evict pods without a controller (kubectl `--force`). */
  force: boolean;
  /** −1: the pod's own; 0: at once; > 0: overrides the pod's own (k8s:K7). */
  gracePeriodSeconds: number;
  /** > 0: pods deleting for longer than this are skipped (k8s:K2a); 0: never. */
  skipWaitForDeleteTimeoutSeconds: number;
  /** Label selector narrowing the candidates (k8s:K1). */
  podSelector: string;
}

/** Harvester's `defaultSkipPodLabels` (k8s:K1). */
export const HARVESTER_SKIP_POD_SELECTOR = 'app!=csi-attacher,app!=csi-provisioner,kubevirt.io!=hotplug-disk';
/** Lockkeeper also leaves VM launcher pods out: VMs are handled per VM (k8s:K1, k8s:E5). */
export const LAUNCHER_POD_EXCLUSION = 'kubevirt.io!=virt-launcher';

/** k8s:K4, Lockkeeper's column: Harvester's `defaultDrainHelper` values. */
export const DEFAULT_POD_DRAIN_OPTIONS: PodDrainOptions = {
  ignoreDaemonSets: true,
  deleteEmptyDirData: true,
  force: true,
  gracePeriodSeconds: 180,
  skipWaitForDeleteTimeoutSeconds: 0,
  podSelector: HARVESTER_SKIP_POD_SELECTOR,
};

/** The selector the candidates are listed with: the option's, plus the launcher-pod exclusion (k8s:K1). */
export const candidateSelector = (options: PodDrainOptions): string => [options.podSelector, LAUNCHER_POD_EXCLUSION].filter(Boolean).join(',');

/** Why a pod blocks the drain; each names the option that overrides it (k8s:K3). */
export const POD_BLOCK_CAUSES = {
  DAEMONSET: { override: 'ignoreDaemonSets', text: 'DaemonSet-managed pods' },
  DAEMONSET_MISSING: { override: 'force', text: 'pods whose DaemonSet is missing' },
  EMPTY_DIR: { override: 'deleteEmptyDirData', text: 'pods with local storage (emptyDir)' },
  UNREPLICATED: { override: 'force', text: 'pods not managed by a controller' },
} as const;
type PodBlockCause = keyof typeof POD_BLOCK_CAUSES;

export type PodVerdict =
  | { action: 'EVICT'; warning: string | null }
  | { action: 'SKIP'; why: 'DELETING' | 'DAEMONSET' | 'MIRROR' | 'HARVESTER_SHUTDOWN_VM'; warning: string | null }
  | { action: 'ERROR'; cause: PodBlockCause };

export interface PodPlanEntry {
  namespace: string;
  name: string;
  uid: string;
  verdict: PodVerdict;
}

const MIRROR_ANNOTATION = 'kubernetes.io/config.mirror';
const HARVESTER_VM_NAME_LABEL = 'harvesterhci.io/vmName';
const SHUTDOWN_CLASS = ['Shutdown', 'ShutdownAndRestartAfterEnable', 'ShutdownAndRestartAfterDisable'];

const isTerminal = (pod: DrainPod) => pod.phase === 'Succeeded' || pod.phase === 'Failed';
const podId = (pod: { namespace: string; name: string }) => `${pod.namespace}/${pod.name}`;

/**
 * k8s:K2: kubectl's filters in `makeFilters` order; the first verdict that is not "evict"
 * ends the classification. Warnings of earlier filters are kept on an eviction.
 */
export function classifyPod(pod: DrainPod, options: PodDrainOptions, now: number): PodVerdict {
  const warnings: string[] = [];
  // (a) skipDeletedFilter
  if (
    options.skipWaitForDeleteTimeoutSeconds > 0 &&
    pod.deletionTimestamp !== null &&
    Math.floor((now - pod.deletionTimestamp) / 1000) > options.skipWaitForDeleteTimeoutSeconds
  ) {
    return { action: 'SKIP', why: 'DELETING', warning: null };
  }
  // (b) daemonSetFilter
  if (pod.controller?.kind === 'DaemonSet') {
    if (!isTerminal(pod)) {
      if (pod.controllerFound === false) {
        if (!options.force) return { action: 'ERROR', cause: 'DAEMONSET_MISSING' };
        warnings.push(`pod ${podId(pod)}: its DaemonSet ${pod.controller.name} is missing; evicting it (force)`);
      } else {
        if (!options.ignoreDaemonSets) return { action: 'ERROR', cause: 'DAEMONSET' };
        return { action: 'SKIP', why: 'DAEMONSET', warning: `ignoring DaemonSet-managed pod ${podId(pod)}` };
      }
    }
  }
  // (c) mirrorPodFilter: silent, no option overrides it
  if (Object.hasOwn(pod.annotations, MIRROR_ANNOTATION)) return { action: 'SKIP', why: 'MIRROR', warning: null };
  // (d) localStorageFilter
  if (pod.hasEmptyDir && !isTerminal(pod)) {
    if (!options.deleteEmptyDirData) return { action: 'ERROR', cause: 'EMPTY_DIR' };
    warnings.push(`deleting pod ${podId(pod)} with local storage (emptyDir)`);
  }
  // (e) unreplicatedFilter
  if (pod.controller === null && !isTerminal(pod)) {
    if (!options.force) return { action: 'ERROR', cause: 'UNREPLICATED' };
    warnings.push(`deleting pod ${podId(pod)}, which is not managed by a controller (force)`);
  }
  // (f) Harvester's extra filter (k8s:K10): a shutdown-class VM's pod is left to its VM's stop.
  if (pod.labels[HARVESTER_VM_NAME_LABEL] && SHUTDOWN_CLASS.includes(pod.labels['harvesterhci.io/maintain-mode-strategy'] ?? '')) {
    return { action: 'SKIP', why: 'HARVESTER_SHUTDOWN_VM', warning: null };
  }
  return { action: 'EVICT', warning: warnings.length ? warnings.join('; ') : null };
}

export interface PodDrainPlan {
  pods: PodPlanEntry[];
  /** Every warning of the pods' verdicts (k8s:K3: they do not block). */
  warnings: string[];
  /** Pods with an error verdict, grouped by cause; empty when the drain may go ahead (k8s:K3). */
  blockers: { cause: PodBlockCause; override: string; pods: string[] }[];
}

export function planPodDrain(pods: readonly DrainPod[], options: PodDrainOptions, now: number): PodDrainPlan {
  const entries = [...pods]
    .sort((a, b) => podId(a).localeCompare(podId(b)))
    .map((pod) => ({ namespace: pod.namespace, name: pod.name, uid: pod.uid, verdict: classifyPod(pod, options, now) }));
  const warnings = entries.flatMap((e) => (e.verdict.action !== 'ERROR' && e.verdict.warning ? [e.verdict.warning] : []));
  const byCause = new Map<PodBlockCause, string[]>();
  for (const e of entries) if (e.verdict.action === 'ERROR') byCause.set(e.verdict.cause, [...(byCause.get(e.verdict.cause) ?? []), podId(e)]);
  const blockers = [...byCause].map(([cause, list]) => ({ cause, override: POD_BLOCK_CAUSES[cause].override, pods: list }));
  return { pods: entries, warnings, blockers };
}

/** k8s:K3: one message naming every blocker, grouped by cause, with the option that overrides each. */
export function podDrainRefusalMessage(nodeId: string, plan: PodDrainPlan): string {
  const parts = plan.blockers.map((b) => `cannot delete ${POD_BLOCK_CAUSES[b.cause].text} (use ${b.override}: true): ${b.pods.join(', ')}`);
  return `the pods on node ${nodeId} cannot be drained: ${parts.join('; ')}`;
}

/** k8s:K7/K5: the `deleteOptions.gracePeriodSeconds` to send; null = leave it out (the pod's own applies). */
export const evictionGracePeriod = (options: PodDrainOptions): number | null => (options.gracePeriodSeconds >= 0 ? options.gracePeriodSeconds : null);

/** What the API answered to one eviction (k8s:K6). */
export type EvictionAnswer =
  | { kind: 'EVICTED' }
  | { kind: 'GONE' }
  /** 429: a PDB allows no disruption (or is stale), or a webhook denied with 429. */
  | { kind: 'BLOCKED'; message: string; budget: string | null }
  /** 403 with cause NamespaceTerminating. */
  | { kind: 'NAMESPACE_TERMINATING'; message: string }
  | { kind: 'FAILED'; status: number | null; message: string };

/** kubectl's pause before trying a 429-blocked eviction again (k8s:K6, `evictPods`). */
export const EVICTION_RETRY_DELAY_MS = 5_000;
/** kubectl's poll of evicted pods (k8s:K8, `waitForDelete`). */
export const POD_DELETE_POLL_MS = 1_000;

/**
 * k8s:K6: what to do after an answer. `deleting`: the pod already has a deletionTimestamp
 * (for NamespaceTerminating).
 */
export function afterEviction(answer: EvictionAnswer, deleting: boolean): 'WAIT_FOR_DELETE' | 'DONE' | 'RETRY' | 'FAIL' {
  switch (answer.kind) {
    case 'EVICTED':
      return 'WAIT_FOR_DELETE';
    case 'GONE':
      return 'DONE';
    case 'BLOCKED':
      return 'RETRY';
    case 'NAMESPACE_TERMINATING':
      return deleting ? 'WAIT_FOR_DELETE' : 'RETRY';
    case 'FAILED':
      return 'FAIL';
  }
}
