import type { Clock } from '../../cluster/clock.ts';
import { isBackendError } from '../../cluster/errors.ts';
import type { PodDrainBackend } from '../../cluster/pod-drain.ts';
import { afterEviction, EVICTION_RETRY_DELAY_MS } from '../../domain/pods/drain.ts';

interface VmEvictionHost {
  backend: PodDrainBackend;
  clock: Clock;
  deadlineAt: number;
  halted(): boolean;
  /** k8s:K4/K7 for the launcher pod too. */
  grace: number;
}

/**
 * k8s:E5: eviction strategy None: the VM's launcher pod is evicted like any pod (k8s:K5,
 * k8s:K6: 429 tried again 5 s apart until the deadline); the VM's run strategy then decides
 * whether it starts elsewhere. Resolves null once the eviction was accepted (or the pod is
 * gone), else the failure; `note` says what it waits on (null: nothing).
 */
export async function evictVm(host: VmEvictionHost, vmId: string, note: (text: string | null) => void): Promise<string | null> {
  for (let tries = 1; ; tries++) {
    if (host.halted() || host.clock.now() >= host.deadlineAt) return null;
    let answer;
    try {
      answer = await host.backend.evictVmPod(vmId, host.grace >= 0 ? host.grace : null);
    } catch (e) {
      if (!isBackendError(e) || !e.retryable) throw e;
      answer = { kind: 'BLOCKED' as const, message: e.message, budget: null };
    }
    const next = afterEviction(answer, false);
    if (next === 'DONE' || next === 'WAIT_FOR_DELETE') {
      note(null);
      return null;
    }
    if (next === 'FAIL')
      return answer.kind === 'FAILED' ? `eviction of the launcher pod failed (HTTP ${answer.status ?? 'none'}): ${answer.message}` : answer.kind;
    const message = 'message' in answer ? answer.message : answer.kind;
    note(`eviction of its launcher pod refused (${message}); tried ${tries} time(s), again every ${EVICTION_RETRY_DELAY_MS / 1000} s`);
    await host.clock.sleep(Math.max(0, Math.min(EVICTION_RETRY_DELAY_MS, host.deadlineAt - host.clock.now())));
  }
}
