import { describe, expect, it } from 'vitest';
import { flushMicrotasks, VirtualClock } from '../support/virtual-clock.ts';
import { newOperation, type OperationOutcome, type OperationSnapshot, type StepRecord } from '../../src/domain/operations.ts';
import { createLogger } from '../../src/logger.ts';
import type { JournalWriter } from '../../src/operations/core/journal.ts';
import { LiveRuns } from '../../src/operations/core/live-runs.ts';
import type { OperationObserver } from '../../src/operations/core/observer.ts';
import { StepRun, type FinishedStepState, type StepRunHost } from '../../src/operations/core/step-run.ts';
import type { LoggedEvent } from '../../src/store/event-log.ts';

/** A kind made of the shared scaffolding alone: it moves its steps one by one when nudged, as a new kind would. */
class ToyRun extends StepRun<ToyRun> {
  entered = false;

  constructor(
    host: StepRunHost<ToyRun>,
    snapshot: OperationSnapshot,
    private readonly steps: StepRecord[],
  ) {
    super(host, snapshot);
  }

  protected async run(): Promise<void> {
    this.entered = true;
    for (const step of this.steps) {
      const woken = this.nextWakeUp();
      this.setWaiting({ kind: 'NUDGE', description: `waiting to move ${step.workloadId}`, nodeId: this.nodeId, workloadIds: [step.workloadId], since: 0 });
      await this.waitAtMost(woken, 1000);
      if (this.halted) return;
      this.startStep(step);
      this.finishStep(step, 'MOVED', null, null);
    }
    await this.end('SUCCEEDED', null);
  }

  /** What the run waits on now, said again with another `since`. */
  repeatWaiting(since: number): void {
    this.setWaiting({ ...this.snapshot.waitingOn!, since });
  }

  protected stepEvent(step: StepRecord, state: FinishedStepState) {
    return { type: `TOY_${state}`, payload: { id: step.workloadId } };
  }
}

function step(id: string, seq: number): StepRecord {
  return {
    workloadKind: 'shard',
    workloadId: id,
    action: 'TOY',
    state: 'PLANNED',
    reason: null,
    error: null,
    fromNodeId: '1',
    toNodeId: null,
    seq,
    startedAt: null,
    finishedAt: null,
  };
}

function toy(stepIds: string[]) {
  const clock = new VirtualClock();
  const written = { steps: [] as StepRecord[], operations: 0, events: [] as LoggedEvent[] };
  const journal: JournalWriter = {
    step: (_, s) => written.steps.push({ ...s }),
    operation: () => written.operations++,
    event: (e) => written.events.push(e),
  };
  const observer: OperationObserver = {
    operationStarted() {},
    operationFinished() {},
    stepFinished() {},
    movesInFlight() {},
    stepStalled() {},
    stepAbandoned() {},
    policyChanged() {},
  };
  const ends: { outcome: OperationOutcome; failure: string | null }[] = [];
  const steps = stepIds.map(step);
  const snapshot = newOperation({ id: 'op', kind: 'DRAIN', nodeId: '1', meta: { actor: 'test', reason: null }, steps, now: clock.now() });
  const host: StepRunHost<ToyRun> = {
    clock,
    journal,
    observer,
    log: createLogger('silent'),
    finish: async (_, outcome, failure) => {
      ends.push({ outcome, failure });
    },
  };
  return { clock, written, ends, snapshot, run: new ToyRun(host, snapshot, steps) };
}

describe('StepRun (the scaffolding every kind shares)', () => {
  it('starts only when told, moves steps with counts, ETA and journal in step, and hands the end to its engine', async () => {
    const t = toy(['a', 'b']);
    await flushMicrotasks();
    expect(t.run.entered).toBe(false);
    void t.run.start();
    await flushMicrotasks();
    expect(t.run.entered).toBe(true);
    expect(t.snapshot.waitingOn?.workloadIds).toEqual(['a']);

    await t.clock.advance(100);
    t.run.nudge();
    await flushMicrotasks();
    expect(t.snapshot.counts).toMatchObject({ planned: 1, moved: 1 });
    expect(t.written.events).toEqual([expect.objectContaining({ type: 'TOY_MOVED', operationId: 'op', nodeId: '1', payload: { id: 'a' } })]);
    expect(t.written.steps.map((s) => `${s.workloadId}:${s.state}`)).toEqual(['a:MOVING', 'a:MOVED']);

    // No nudge: the run looks again when its wait runs out.
    await t.clock.advance(1000);
    await t.run.done;
    expect(t.snapshot.counts).toMatchObject({ planned: 0, moved: 2 });
    expect(t.snapshot.etaAt).toBe(t.clock.now());
    expect(t.ends).toEqual([{ outcome: 'SUCCEEDED', failure: null }]);
  });

  it('writes a waiting-on only when it says something new', async () => {
    const t = toy(['a']);
    void t.run.start();
    await flushMicrotasks();
    const before = t.written.operations;
    t.run.repeatWaiting(99);
    expect(t.written.operations).toBe(before);
  });

  it('after halt it records nothing and does not end the operation', async () => {
    const t = toy(['a', 'b']);
    void t.run.start();
    await flushMicrotasks();
    const written = t.written.steps.length;
    t.run.halt();
    await t.run.done;
    expect(t.written.steps).toHaveLength(written);
    expect(t.ends).toEqual([]);
  });
});

describe('LiveRuns', () => {
  const run = (id: string, kind: OperationSnapshot['kind'], nodeId: string) => {
    const snapshot = newOperation({ id, kind, nodeId, meta: { actor: 'test', reason: null }, steps: [], now: 0 });
    return { snapshot, done: Promise.resolve(), start: () => Promise.resolve(), halt() {}, nudge() {} };
  };

  it('answers by id, by node and kind, and counts a part as holding its node for its kind', () => {
    const live = new LiveRuns();
    const drain = run('d', 'DRAIN', '1');
    const maintenance = run('m', 'MAINTENANCE', '2');
    live.add(drain);
    live.add(maintenance);
    live.addPart('2', 'DRAIN', maintenance.snapshot);
    expect(live.get('m')).toBe(maintenance);
    expect(live.on('2', ['DRAIN', 'FILL'])).toBeUndefined();
    expect(live.holder('2', ['DRAIN', 'FILL'])).toBe(maintenance.snapshot);
    expect(live.heldNodes(['DRAIN', 'FILL'])).toEqual(['1', '2']);
    expect(live.all(['MAINTENANCE'])).toEqual([maintenance]);
    live.removePart('2');
    live.remove(drain);
    expect(live.heldNodes(['DRAIN', 'FILL'])).toEqual([]);
    expect(live.holder('2')).toBe(maintenance.snapshot);
  });
});
