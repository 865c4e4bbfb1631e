import type { Clock } from '../../cluster/clock.ts';
import { isBackendError } from '../../cluster/errors.ts';
import type { PodDrainBackend, PodRef } from '../../cluster/pod-drain.ts';
import {
  afterEviction,
  candidateSelector,
  EVICTION_RETRY_DELAY_MS,
  evictionGracePeriod,
  planPodDrain,
  POD_DELETE_POLL_MS,
  podDrainRefusalMessage,
  type EvictionAnswer,
  type PodDrainOptions,
} from '../../domain/pods/drain.ts';
import type { PodLeftReason } from '../../domain/remaining.ts';
import type { Logger } from '../../logger.ts';

export interface PodDrainHost {
  backend: PodDrainBackend;
  clock: Clock;
  log: Logger;
  nodeId: string;
  deadlineAt: number;
  options: PodDrainOptions;
  halted(): boolean;
  /** What the drain waits on changed: show it. */
  progress(): void;
  event(type: string, payload: object): void;
}

type PodState =
  | { state: 'EVICTING' }
  | { state: 'BLOCKED'; message: string; budget: string | null; tries: number }
  | { state: 'DELETING' }
  | { state: 'DONE' }
  | { state: 'FAILED'; message: string };

export type PodDrainOutcome =
  | { kind: 'DONE' }
  | { kind: 'HALTED' }
  /** k8s:K3 at run time: a pod with an error verdict appeared after validation. */
  | { kind: 'REFUSED'; message: string }
  /** k8s:K6: evictions answered with neither success nor 429 (e.g. 500 for two PDBs), aggregated. */
  | { kind: 'FAILED'; message: string }
  /** k8s:K8 / vm:M5: the deadline came with pods left. */
  | { kind: 'DEADLINE'; message: string };

const idOf = (p: PodRef) => `${p.namespace}/${p.name}`;

/** A message an operator can act on: the pod, the PDB or the webhook's words, the last answer. */
function describe(id: string, s: PodState): string {
  switch (s.state) {
    case 'EVICTING':
      return `${id}: evicting`;
    case 'BLOCKED':
      return `${id}: ${s.budget ? `blocked by PodDisruptionBudget ${s.budget}` : 'eviction refused (429)'} (${s.message}); tried ${s.tries} time(s), again every ${EVICTION_RETRY_DELAY_MS / 1000} s`;
    case 'DELETING':
      return `${id}: terminating`;
    case 'DONE':
      return `${id}: gone`;
    case 'FAILED':
      return `${id}: eviction failed: ${s.message}`;
  }
}

/**
 * k8s:K5–K8: after the VMs (k8s:K9), every selected pod of the node is evicted at once;
 * 429s are tried again 5 s apart (naming the PDB or the webhook's message), other refusals
 * fail that pod and are aggregated, evicted pods are polled every 1 s until gone (404 or a
 * new UID), and the maintenance deadline ends it with the pods left named.
 */
export class PodDrainPhase {
  private readonly pods = new Map<string, PodState>();

  constructor(private readonly host: PodDrainHost) {}

  /** What the drain waits on, for waitingOn; empty when nothing. */
  waiting(): { description: string; podIds: string[] } | null {
    const left = [...this.pods].filter(([, s]) => s.state !== 'DONE' && s.state !== 'FAILED');
    if (!left.length) return null;
    return {
      description: `${left.length} pod(s) left on node ${this.host.nodeId}: ${left.map(([id, s]) => describe(id, s)).join('; ')}`,
      podIds: left.map(([id]) => id),
    };
  }

  /** Why each pod the drain did not get off the node is still there, by its last state (domain/remaining.ts). */
  leftBecause(): Map<string, PodLeftReason> {
    const out = new Map<string, PodLeftReason>();
    for (const [id, s] of this.pods) {
      if (s.state === 'DONE') continue;
      out.set(
        id,
        s.state === 'BLOCKED'
          ? s.budget
            ? 'PDB_BLOCKED'
            : 'EVICTION_REFUSED'
          : s.state === 'FAILED'
            ? 'EVICTION_FAILED'
            : s.state === 'DELETING'
              ? 'POD_TERMINATING'
              : 'NOT_EVICTED',
      );
    }
    return out;
  }

  async run(): Promise<PodDrainOutcome> {
    const { host } = this;
    const listed = await host.backend.listNodePods(host.nodeId, candidateSelector(host.options));
    const plan = planPodDrain(listed, host.options, host.clock.now());
    if (plan.blockers.length) return { kind: 'REFUSED', message: podDrainRefusalMessage(host.nodeId, plan) };
    for (const w of plan.warnings) host.log.warn({ node: host.nodeId }, `pod drain: ${w}`);
    const toEvict = listed.filter((p) => plan.pods.find((e) => e.uid === p.uid)?.verdict.action === 'EVICT');
    for (const p of toEvict) this.pods.set(idOf(p), { state: 'EVICTING' });
    host.progress();
    await Promise.all(toEvict.map((p) => this.evictOne(p)));
    if (host.halted()) return { kind: 'HALTED' };
    const failed = [...this.pods].filter(([, s]) => s.state === 'FAILED');
    const left = this.waiting();
    if (left) return { kind: 'DEADLINE', message: `pods still on the node: ${left.description}` };
    if (failed.length) return { kind: 'FAILED', message: failed.map(([id, s]) => describe(id, s)).join('; ') };
    return { kind: 'DONE' };
  }

  private set(id: string, state: PodState): void {
    this.pods.set(id, state);
    this.host.progress();
  }

  private expired(): boolean {
    return this.host.clock.now() >= this.host.deadlineAt;
  }

  /** Sleeps `ms`, but never past the deadline. */
  private pause(ms: number): Promise<void> {
    return this.host.clock.sleep(Math.max(0, Math.min(ms, this.host.deadlineAt - this.host.clock.now())));
  }

  private async evictOne(pod: PodRef & { uid: string; deletionTimestamp: number | null }): Promise<void> {
    const { host } = this;
    const id = idOf(pod);
    let tries = 0;
    for (;;) {
      if (host.halted() || this.expired()) return;
      let answer: EvictionAnswer;
      try {
        answer = await host.backend.evictPod(pod, evictionGracePeriod(host.options));
      } catch (e) {
        // The API cannot be used right now: like a 429, look again later (the deadline still rules).
        if (!isBackendError(e) || !e.retryable) throw e;
        answer = { kind: 'BLOCKED', message: e.message, budget: null };
      }
      tries++;
      const next = afterEviction(answer, pod.deletionTimestamp !== null);
      if (next === 'DONE') return this.done(pod, 'already gone');
      if (next === 'FAIL') {
        const message = answer.kind === 'FAILED' ? `HTTP ${answer.status ?? 'none'}: ${answer.message}` : answer.kind;
        host.log.warn({ node: host.nodeId, pod: id }, `eviction of pod ${id} failed: ${message}`);
        host.event('POD_EVICTION_FAILED', { pod: id, message });
        return this.set(id, { state: 'FAILED', message });
      }
      if (next === 'RETRY') {
        const message = answer.kind === 'BLOCKED' || answer.kind === 'NAMESPACE_TERMINATING' ? answer.message : answer.kind;
        const budget = answer.kind === 'BLOCKED' ? answer.budget : null;
        this.set(id, { state: 'BLOCKED', message, budget, tries });
        await this.pause(EVICTION_RETRY_DELAY_MS);
        continue;
      }
      host.event('POD_EVICTED', { pod: id, gracePeriodSeconds: evictionGracePeriod(host.options) });
      this.set(id, { state: 'DELETING' });
      return this.waitGone(pod);
    }
  }

  /** k8s:K8: 404, or the name back with another UID; polled every 1 s. */
  private async waitGone(pod: PodRef & { uid: string }): Promise<void> {
    for (;;) {
      if (this.host.halted() || this.expired()) return;
      let gone = false;
      try {
        gone = await this.host.backend.podGone(pod);
      } catch (e) {
        if (!isBackendError(e) || !e.retryable) throw e;
      }
      if (gone) {
        // With POD_EVICTED, when the pod was gone: a rehearsal's history of pod evictions (src/rehearsal/history-read.ts).
        this.host.event('POD_GONE', { pod: idOf(pod) });
        return this.done(pod, 'gone');
      }
      await this.pause(POD_DELETE_POLL_MS);
    }
  }

  private done(pod: PodRef, how: string): void {
    this.host.log.info({ node: this.host.nodeId, pod: idOf(pod) }, `pod ${idOf(pod)} ${how}`);
    this.set(idOf(pod), { state: 'DONE' });
  }
}
