import { describe, expect, it } from 'vitest';
import {
  afterEviction,
  candidateSelector,
  classifyPod,
  DEFAULT_POD_DRAIN_OPTIONS,
  EVICTION_RETRY_DELAY_MS,
  evictionGracePeriod,
  HARVESTER_SKIP_POD_SELECTOR,
  LAUNCHER_POD_EXCLUSION,
  planPodDrain,
  POD_DELETE_POLL_MS,
  podDrainRefusalMessage,
  type DrainPod,
  type PodDrainOptions,
} from '../../src/domain/pods/drain.ts';

const NOW = Date.UTC(2026, 0, 1, 12);
const pod = (over: Partial<DrainPod> = {}): DrainPod => ({
  namespace: 'default',
  name: 'p',
  uid: 'u',
  phase: 'Running',
  labels: {},
  annotations: {},
  controller: { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'rs' },
  controllerFound: null,
  hasEmptyDir: false,
  deletionTimestamp: null,
  terminationGracePeriodSeconds: 30,
  ...over,
});
const OFF: PodDrainOptions = { ...DEFAULT_POD_DRAIN_OPTIONS, ignoreDaemonSets: false, deleteEmptyDirData: false, force: false };
const ds = { apiVersion: 'apps/v1', kind: 'DaemonSet', name: 'agent' };

describe('k8s:K1 candidates', () => {
  it("Harvester's skip selector, and launcher pods left out (VMs go per VM)", () => {
    expect(HARVESTER_SKIP_POD_SELECTOR).toBe('app!=csi-attacher,app!=csi-provisioner,kubevirt.io!=hotplug-disk');
    expect(LAUNCHER_POD_EXCLUSION).toBe('kubevirt.io!=virt-launcher');
    expect(candidateSelector(DEFAULT_POD_DRAIN_OPTIONS)).toBe('app!=csi-attacher,app!=csi-provisioner,kubevirt.io!=hotplug-disk,kubevirt.io!=virt-launcher');
    expect(candidateSelector({ ...DEFAULT_POD_DRAIN_OPTIONS, podSelector: '' })).toBe('kubevirt.io!=virt-launcher');
  });
});

describe('k8s:K2 classification, in kubectl order', () => {
  it('(a) deleting longer than skipWaitForDeleteTimeoutSeconds → skip, only when > 0', () => {
    const deleting = pod({ deletionTimestamp: NOW - 61_000 });
    expect(classifyPod(deleting, { ...OFF, skipWaitForDeleteTimeoutSeconds: 60 }, NOW)).toEqual({ action: 'SKIP', why: 'DELETING', warning: null });
    expect(classifyPod(pod({ deletionTimestamp: NOW - 60_000 }), { ...OFF, skipWaitForDeleteTimeoutSeconds: 60 }, NOW).action).toBe('EVICT');
    expect(classifyPod(deleting, { ...OFF, skipWaitForDeleteTimeoutSeconds: 0 }, NOW).action).toBe('EVICT');
  });

  it('(b) DaemonSet: error, skip with a warning under ignoreDaemonSets; terminal evicted; missing DaemonSet evicted with a warning under force, else error', () => {
    expect(classifyPod(pod({ controller: ds, controllerFound: true }), OFF, NOW)).toEqual({ action: 'ERROR', cause: 'DAEMONSET' });
    expect(classifyPod(pod({ controller: ds, controllerFound: true }), { ...OFF, ignoreDaemonSets: true }, NOW)).toEqual({
      action: 'SKIP',
      why: 'DAEMONSET',
      warning: 'ignoring DaemonSet-managed pod default/p',
    });
    expect(classifyPod(pod({ controller: ds, controllerFound: true, phase: 'Succeeded' }), OFF, NOW).action).toBe('EVICT');
    expect(classifyPod(pod({ controller: ds, controllerFound: false }), OFF, NOW)).toEqual({ action: 'ERROR', cause: 'DAEMONSET_MISSING' });
    const orphan = classifyPod(pod({ controller: ds, controllerFound: false }), { ...OFF, force: true }, NOW);
    expect(orphan).toEqual({ action: 'EVICT', warning: 'pod default/p: its DaemonSet agent is missing; evicting it (force)' });
  });

  it('(c) mirror pods are skipped silently; no option overrides it, and it comes before emptyDir and controller checks', () => {
    const mirror = pod({ annotations: { 'kubernetes.io/config.mirror': 'x' }, controller: null, hasEmptyDir: true });
    for (const o of [OFF, DEFAULT_POD_DRAIN_OPTIONS]) expect(classifyPod(mirror, o, NOW)).toEqual({ action: 'SKIP', why: 'MIRROR', warning: null });
  });

  it('(d) emptyDir: error, evicted with a warning under deleteEmptyDirData; terminal pods evicted', () => {
    expect(classifyPod(pod({ hasEmptyDir: true }), OFF, NOW)).toEqual({ action: 'ERROR', cause: 'EMPTY_DIR' });
    expect(classifyPod(pod({ hasEmptyDir: true }), { ...OFF, deleteEmptyDirData: true }, NOW)).toEqual({
      action: 'EVICT',
      warning: 'deleting pod default/p with local storage (emptyDir)',
    });
    expect(classifyPod(pod({ hasEmptyDir: true, phase: 'Failed' }), OFF, NOW)).toEqual({ action: 'EVICT', warning: null });
  });

  it('(e) no controller: error, evicted with a warning under force; terminal pods evicted', () => {
    expect(classifyPod(pod({ controller: null }), OFF, NOW)).toEqual({ action: 'ERROR', cause: 'UNREPLICATED' });
    expect(classifyPod(pod({ controller: null }), { ...OFF, force: true }, NOW).action).toBe('EVICT');
    expect(classifyPod(pod({ controller: null, phase: 'Succeeded' }), OFF, NOW)).toEqual({ action: 'EVICT', warning: null });
  });

  it('the first "do not evict" ends it: an emptyDir pod without a controller is an emptyDir error, not both', () => {
    expect(classifyPod(pod({ controller: null, hasEmptyDir: true }), OFF, NOW)).toEqual({ action: 'ERROR', cause: 'EMPTY_DIR' });
    // With both allowed, both warnings are kept (kubectl keeps only the last).
    const both = classifyPod(pod({ controller: null, hasEmptyDir: true }), DEFAULT_POD_DRAIN_OPTIONS, NOW);
    expect(both.action).toBe('EVICT');
    expect(both.action === 'EVICT' && both.warning).toBe(
      'deleting pod default/p with local storage (emptyDir); deleting pod default/p, which is not managed by a controller (force)',
    );
  });

  it('(f) k8s:K10: a pod of a shutdown-class Harvester VM is skipped; Migrate-labelled and unlabelled ones are evicted', () => {
    const vmPod = (strategy?: string) =>
      pod({ labels: { 'harvesterhci.io/vmName': 'vm', ...(strategy && { 'harvesterhci.io/maintain-mode-strategy': strategy }) } });
    for (const s of ['Shutdown', 'ShutdownAndRestartAfterEnable', 'ShutdownAndRestartAfterDisable'])
      expect(classifyPod(vmPod(s), DEFAULT_POD_DRAIN_OPTIONS, NOW)).toEqual({ action: 'SKIP', why: 'HARVESTER_SHUTDOWN_VM', warning: null });
    expect(classifyPod(vmPod('Migrate'), DEFAULT_POD_DRAIN_OPTIONS, NOW).action).toBe('EVICT');
    expect(classifyPod(vmPod(), DEFAULT_POD_DRAIN_OPTIONS, NOW).action).toBe('EVICT');
    // Only after a–e said evict: a DaemonSet error still wins.
    expect(classifyPod(pod({ ...vmPod('Shutdown'), controller: ds, controllerFound: true }), OFF, NOW).action).toBe('ERROR');
  });
});

describe('k8s:K3 refusal, k8s:K4 defaults', () => {
  it('groups the blockers by cause, names each override, and keeps warnings apart', () => {
    const plan = planPodDrain(
      [
        pod({ name: 'b', controller: ds, controllerFound: true }),
        pod({ name: 'a', controller: ds, controllerFound: true }),
        pod({ name: 'c', hasEmptyDir: true }),
        pod({ name: 'd', controller: null }),
      ],
      OFF,
      NOW,
    );
    expect(plan.blockers).toEqual([
      { cause: 'DAEMONSET', override: 'ignoreDaemonSets', pods: ['default/a', 'default/b'] },
      { cause: 'EMPTY_DIR', override: 'deleteEmptyDirData', pods: ['default/c'] },
      { cause: 'UNREPLICATED', override: 'force', pods: ['default/d'] },
    ]);
    expect(podDrainRefusalMessage('n1', plan)).toBe(
      'the pods on node n1 cannot be drained: cannot delete DaemonSet-managed pods (use ignoreDaemonSets: true): default/a, default/b; cannot delete pods with local storage (emptyDir) (use deleteEmptyDirData: true): default/c; cannot delete pods not managed by a controller (use force: true): default/d',
    );
    const defaults = planPodDrain(
      [pod({ name: 'a', controller: ds, controllerFound: true }), pod({ name: 'c', hasEmptyDir: true })],
      DEFAULT_POD_DRAIN_OPTIONS,
      NOW,
    );
    expect(defaults.blockers).toEqual([]);
    expect(defaults.warnings).toEqual(['ignoring DaemonSet-managed pod default/a', 'deleting pod default/c with local storage (emptyDir)']);
  });

  it("Lockkeeper's defaults are Harvester's defaultDrainHelper values", () => {
    expect(DEFAULT_POD_DRAIN_OPTIONS).toEqual({
      ignoreDaemonSets: true,
      deleteEmptyDirData: true,
      force: true,
      gracePeriodSeconds: 180,
      skipWaitForDeleteTimeoutSeconds: 0,
      podSelector: 'app!=csi-attacher,app!=csi-provisioner,kubevirt.io!=hotplug-disk',
    });
  });
});

describe('k8s:K6 answers, k8s:K7 grace, k8s:K8 polling', () => {
  it('success waits, 404 is done, 429 retries, NamespaceTerminating waits only for a deleting pod, anything else fails', () => {
    expect(afterEviction({ kind: 'EVICTED' }, false)).toBe('WAIT_FOR_DELETE');
    expect(afterEviction({ kind: 'GONE' }, false)).toBe('DONE');
    expect(afterEviction({ kind: 'BLOCKED', message: 'pdb', budget: 'x' }, false)).toBe('RETRY');
    expect(afterEviction({ kind: 'NAMESPACE_TERMINATING', message: 'ns' }, true)).toBe('WAIT_FOR_DELETE');
    expect(afterEviction({ kind: 'NAMESPACE_TERMINATING', message: 'ns' }, false)).toBe('RETRY');
    expect(afterEviction({ kind: 'FAILED', status: 500, message: 'two PDBs' }, false)).toBe('FAIL');
    expect(EVICTION_RETRY_DELAY_MS).toBe(5_000);
    expect(POD_DELETE_POLL_MS).toBe(1_000);
  });

  it('−1 leaves the pod its own grace (no deleteOptions), 0 and positive values are sent', () => {
    expect(evictionGracePeriod({ ...DEFAULT_POD_DRAIN_OPTIONS, gracePeriodSeconds: -1 })).toBeNull();
    expect(evictionGracePeriod({ ...DEFAULT_POD_DRAIN_OPTIONS, gracePeriodSeconds: 0 })).toBe(0);
    expect(evictionGracePeriod(DEFAULT_POD_DRAIN_OPTIONS)).toBe(180);
  });
});
