import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkAdmission, type AdmissionNode } from '../../src/domain/storage/admission.ts';
import {
  maySchedule,
  nextPolicy,
  PolicyTransitionError,
  SCHEDULING_POLICIES,
  type PolicyEvent,
  type SchedulingPolicy,
} from '../../src/domain/storage/policy.ts';

const policyArb = fc.constantFrom(...SCHEDULING_POLICIES);
const eventArb: fc.Arbitrary<PolicyEvent> = fc.oneof(
  fc.constantFrom<PolicyEvent>(
    { type: 'drainAccepted' },
    { type: 'drainFinished' },
    { type: 'drainCancelled' },
    { type: 'drainFailed' },
    { type: 'fillAccepted' },
    { type: 'fillFinished' },
    { type: 'fillCancelled' },
    { type: 'fillFailed' },
    { type: 'reattached' },
    { type: 'deleteAccepted' },
  ),
  policyArb.map((policy): PolicyEvent => ({ type: 'configure', policy })),
  policyArb.map((policy): PolicyEvent => ({ type: 'deleteCancelled', policy })),
);

/** The spec's table written out independently of the implementation's data. */
function specNext(from: SchedulingPolicy, e: PolicyEvent): SchedulingPolicy | 'refused' {
  switch (e.type) {
    case 'drainAccepted':
      return from === 'ACTIVE' ? 'DRAINING' : 'refused';
    case 'drainFinished':
      return from === 'DRAINING' ? 'PAUSE_FOR_RESTART' : 'refused';
    case 'drainCancelled':
    case 'drainFailed':
      return from === 'DRAINING' ? 'ACTIVE' : 'refused';
    case 'fillAccepted':
      return from === 'ACTIVE' ? 'FILLING' : 'refused';
    case 'fillFinished':
    case 'fillCancelled':
    case 'fillFailed':
      return from === 'FILLING' ? 'ACTIVE' : 'refused';
    case 'reattached':
      // neon:L3: an interrupted delete pauses the node.
      if (from === 'DELETING') return 'PAUSE';
      return from === 'PAUSE_FOR_RESTART' || from === 'DRAINING' || from === 'FILLING' ? 'ACTIVE' : from;
    case 'deleteAccepted':
      return from === 'ACTIVE' || from === 'PAUSE' ? 'DELETING' : 'refused';
    case 'deleteCancelled':
      return from === 'DELETING' ? e.policy : 'refused';
    case 'configure':
      return e.policy;
  }
}

describe('storage policy machine (storage-drain-fill.md §2)', () => {
  it('follows the table and refuses every other transition, over random event sequences', () => {
    fc.assert(
      fc.property(policyArb, fc.array(eventArb, { maxLength: 40 }), (start, events) => {
        let policy = start;
        for (const e of events) {
          const expected = specNext(policy, e);
          if (expected === 'refused') {
            expect(() => nextPolicy(policy, e)).toThrow(PolicyTransitionError);
          } else {
            policy = nextPolicy(policy, e);
            expect(policy).toBe(expected);
          }
        }
      }),
    );
  });

  it('keeps an operator PAUSE across a re-attach (neon #9907) and ends drains on re-attach (neon #8674)', () => {
    expect(nextPolicy('PAUSE', { type: 'reattached' })).toBe('PAUSE');
    expect(nextPolicy('DRAINING', { type: 'reattached' })).toBe('ACTIVE');
    expect(nextPolicy('PAUSE_FOR_RESTART', { type: 'reattached' })).toBe('ACTIVE');
  });

  it('maySchedule is true only for ACTIVE availability with ACTIVE or FILLING policy', () => {
    fc.assert(
      fc.property(policyArb, fc.constantFrom('ACTIVE', 'WARMING_UP', 'OFFLINE' as const), (policy, availability) => {
        const expected = availability === 'ACTIVE' && (policy === 'ACTIVE' || policy === 'FILLING');
        expect(maySchedule({ policy, availability })).toBe(expected);
      }),
    );
  });
});

function node(id: string, policy: SchedulingPolicy = 'ACTIVE', availability: AdmissionNode['availability'] = 'ACTIVE'): AdmissionNode {
  return { id, policy, availability };
}

describe('admission (storage:S3, storage:S4) in the spec order', () => {
  const two = [node('1'), node('2')];

  it('storage:S3: NotFound, Conflict, OperationLimitReached, Unavailable, no other schedulable, DRAINING, policy', () => {
    const base = { nodes: two, runningOperationNodeIds: [], operationLimit: 1 };
    expect(checkAdmission('DRAIN', '9', base)?.error).toBe('NotFound');
    expect(checkAdmission('DRAIN', '1', { ...base, runningOperationNodeIds: ['1'] })?.error).toBe('Conflict');
    expect(checkAdmission('DRAIN', '1', { ...base, runningOperationNodeIds: ['2'] })).toMatchObject({ error: 'OperationLimitReached', limit: 1 });
    expect(checkAdmission('DRAIN', '1', { ...base, operationLimit: 2, runningOperationNodeIds: ['2'] })).toBeNull();
    expect(checkAdmission('DRAIN', '1', { ...base, nodes: [node('1', 'ACTIVE', 'OFFLINE'), node('2')] })?.error).toBe('Unavailable');
    expect(checkAdmission('DRAIN', '1', { ...base, nodes: [node('1'), node('2', 'PAUSE')] })).toMatchObject({
      error: 'PreconditionFailed',
      message: 'no other schedulable nodes',
    });
    // A single-node cluster is refused too (Neon counts the node itself and would accept).
    expect(checkAdmission('DRAIN', '1', { ...base, nodes: [node('1')] })).toMatchObject({ reason: 'NO_OTHER_SCHEDULABLE_NODES' });
    expect(checkAdmission('DRAIN', '1', { ...base, nodes: [node('1', 'DRAINING'), node('2')] })?.error).toBe('Conflict');
    expect(checkAdmission('DRAIN', '1', { ...base, nodes: [node('1', 'PAUSE'), node('2')] })).toMatchObject({
      error: 'PreconditionFailed',
      reason: 'POLICY_PAUSE',
    });
    expect(checkAdmission('DRAIN', '1', base)).toBeNull();
  });

  it('storage:S3 order: the earlier check wins when several apply', () => {
    // Unknown node beats everything; an operation on the node beats the limit; the limit beats availability.
    const busy = { nodes: [node('1', 'DRAINING', 'OFFLINE'), node('2', 'PAUSE')], runningOperationNodeIds: ['1'], operationLimit: 1 };
    expect(checkAdmission('DRAIN', '1', busy)?.error).toBe('Conflict');
    expect(checkAdmission('DRAIN', '1', { ...busy, runningOperationNodeIds: ['3'] })?.error).toBe('OperationLimitReached');
    expect(checkAdmission('DRAIN', '1', { ...busy, runningOperationNodeIds: [] })?.error).toBe('Unavailable');
  });

  it('storage:S4: fewer than two nodes, FILLING conflict, PAUSE_FOR_RESTART not ready', () => {
    const base = { nodes: two, runningOperationNodeIds: [], operationLimit: 1 };
    expect(checkAdmission('FILL', '1', { ...base, nodes: [node('1')] })).toMatchObject({ message: 'no other nodes to fill from' });
    expect(checkAdmission('FILL', '1', { ...base, nodes: [node('1', 'FILLING'), node('2')] })?.error).toBe('Conflict');
    expect(checkAdmission('FILL', '1', { ...base, nodes: [node('1', 'PAUSE_FOR_RESTART'), node('2')] })).toMatchObject({
      error: 'PreconditionFailed',
      reason: 'POLICY_PAUSE_FOR_RESTART',
    });
    // A fill needs no other *schedulable* node: it takes shards from wherever they are.
    expect(checkAdmission('FILL', '1', { ...base, nodes: [node('1'), node('2', 'PAUSE')] })).toBeNull();
  });

  it('never admits a second operation on a node, over random request sequences', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ op: fc.constantFrom('start', 'finish'), node: fc.constantFrom('1', '2', '3'), kind: fc.constantFrom('DRAIN', 'FILL' as const) }), {
          maxLength: 60,
        }),
        fc.integer({ min: 1, max: 3 }),
        (requests, limit) => {
          const running: string[] = [];
          const nodes = [node('1'), node('2'), node('3')];
          for (const r of requests) {
            if (r.op === 'finish') {
              const i = running.indexOf(r.node);
              if (i >= 0) running.splice(i, 1);
              continue;
            }
            if (checkAdmission(r.kind, r.node, { nodes, runningOperationNodeIds: running, operationLimit: limit }) === null) running.push(r.node);
            expect(new Set(running).size).toBe(running.length);
            expect(running.length).toBeLessThanOrEqual(limit);
          }
        },
      ),
    );
  });
});
