/**
 * The campaign's checker reads steps as the store does (issue 16 point 1): a step the plan
 * already SKIPPED lives in the stored plan until its run writes a row; a kill before that leaves
 * it there alone, and the checker must not call its admission's SHARD_SKIPPED event orphaned
 * (fake crash campaign, seed 1 round 17, a kill just after a drain's admission).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { findViolations, readDatabase } from '../../campaign/invariants.ts';
import { findBudgetViolations, findCutOverOrderViolations, MARKS } from '../../campaign/order-invariants.ts';
import { RequestLog, type LoggedRequest } from '../../simulators/common/request-log.ts';
import { newOperation, type StepRecord } from '../../src/domain/operations.ts';
import type { Database } from '../../src/store/database-handle.ts';
import { OperationRepository } from '../../src/store/operation-repository.ts';
import { openTestDatabase } from '../support/test-database.ts';

let db: Database | undefined;
afterEach(async () => {
  await db?.close();
  db = undefined;
});

const step = (workloadId: string, state: StepRecord['state'], reason: string | null, seq: number): StepRecord => ({
  workloadKind: 'shard',
  workloadId,
  action: 'CUT_OVER',
  state,
  reason,
  error: null,
  fromNodeId: '1',
  toNodeId: state === 'SKIPPED' ? null : '2',
  seq,
  startedAt: null,
  finishedAt: null,
  detail: null,
});

describe('campaign invariants, read from the database', () => {
  it('a plan-skipped step without a row is read from the stored plan, so its admission event has its step; a recorded row wins over the plan', async () => {
    db = await openTestDatabase();
    const operations = new OperationRepository(db.prisma, db.hotPath);
    const planned = [step('s-moved', 'PLANNED', null, 0), step('s-skipped', 'SKIPPED', 'NO_SCHEDULABLE_SECONDARY', 1)];
    const snapshot = {
      ...newOperation({ id: 'op', kind: 'DRAIN', nodeId: '1', meta: { actor: 't', reason: null }, steps: planned, now: 0 }),
      state: 'SUCCEEDED' as const,
    };
    await db.prisma.$transaction([
      operations.create(snapshot, {}, planned),
      ...operations.writeSteps([{ operationId: 'op', step: { ...planned[0]!, state: 'MOVED', finishedAt: 1 } }]),
    ]);
    for (const [seq, shard, type] of [
      [1, 's-skipped', 'SHARD_SKIPPED'],
      [2, 's-moved', 'SHARD_MOVED'],
    ] as const)
      await db.prisma.event.create({ data: { seq, at: new Date(seq), type, nodeId: '1', operationId: 'op', payload: JSON.stringify({ shard }) } });
    const read = readDatabase(db.file);
    expect(read.steps.map((s) => `${s.workloadId} ${s.state}`).sort()).toEqual(['s-moved MOVED', 's-skipped SKIPPED']);
    const view = { nodes: new Map(), vms: new Map(), shards: new Map() };
    const ledger = { initialRunStrategy: new Map(), startedOperations: new Set(['op']), namedFailures: new Set<string>() };
    expect(findViolations(view, read, ledger).filter((v) => v.includes('step') || v.includes('terminal'))).toEqual([]);
  });
});

/**
 * The order and budget checkers (issue 27 point 6) get one violation of each kind they check,
 * and the cases they must let pass, as a request log and an event log built by hand.
 */
describe('campaign order invariants (neon:C6–C9, rollout:O5)', () => {
  const SHARD = `${'a'.repeat(32)}-0104`;
  const TENANT = 'a'.repeat(32);
  const BASELINE = [{ timeline_id: 'tl', last_record_lsn: '0/200' }];

  /** A request log with the answers in the order written. */
  function logOf(build: (l: ReturnType<typeof builder>) => void): LoggedRequest[] {
    const b = builder();
    build(b);
    return b.log.entries;
  }
  function builder() {
    const log = new RequestLog();
    const request = (source: string, method: string, path: string, body: unknown = null) => log.record({ source, method, path, query: {}, body, at: 0 });
    const call = (source: string, method: string, path: string, body: unknown, status: number, response?: unknown) => {
      const e = request(source, method, path, body);
      log.answered(e, status, response);
      return e;
    };
    const put = (node: number, mode: string, generation: number | null) =>
      call(`node ${node}`, 'PUT', `/v1/tenant/${SHARD}/location_config`, { mode, generation }, 200);
    return {
      log,
      request,
      put,
      stale: () => put(1, 'AttachedStale', 1),
      baseline: () => call('node 1', 'GET', `/v1/tenant/${SHARD}/timeline`, null, 200, BASELINE),
      multi: () => put(2, 'AttachedMulti', 2),
      waitLsn: (status: number) => call('node 2', 'POST', `/v1/tenant/${SHARD}/wait_lsn`, { tl: '0/200' }, status),
      timelinesOnDest: (lsn: string) => call('node 2', 'GET', `/v1/tenant/${SHARD}/timeline`, null, 200, [{ timeline_id: 'tl', last_record_lsn: lsn }]),
      notify: (node: number, status: number) =>
        call('hook', 'PUT', '/notify-attach', { tenant_id: TENANT, shards: [{ node_id: node, shard_number: 1 }] }, status),
      originRead: (status: number, response: unknown) => call('node 1', 'GET', `/v1/location_config/${SHARD}`, null, status, response),
      originSecondary: () => put(1, 'Secondary', null),
      single: () => put(2, 'AttachedSingle', 2),
      mark: (what: string) => log.mark('campaign', what, 0),
    };
  }
  /** neon:C1–C9 in order, as the live migration sends them. */
  const cutOver = (b: ReturnType<typeof builder>) => {
    b.stale();
    b.baseline();
    b.multi();
    b.waitLsn(200);
    b.notify(2, 200);
    b.originSecondary();
    b.single();
  };

  it('a cut-over in the rule’s order is clean, by wait_lsn or by a timeline list that caught up', () => {
    expect(findCutOverOrderViolations(logOf(cutOver))).toEqual([]);
    const polled = logOf((b) => {
      b.stale();
      b.baseline();
      b.multi();
      b.waitLsn(202);
      b.timelinesOnDest('0/100');
      b.timelinesOnDest('0/200');
      b.notify(2, 200);
      b.originSecondary();
      b.single();
    });
    expect(findCutOverOrderViolations(polled)).toEqual([]);
  });

  it('neon:C6: AttachedSingle before the catch-up completed is flagged (no wait_lsn; a wait_lsn 202; a timeline list still behind)', () => {
    const expected = [`shard ${SHARD}: cut-over from node 1 to node 2 (generation 2): AttachedSingle on node 2 before its catch-up completed (neon:C6)`];
    const withoutWait = logOf((b) => {
      b.stale();
      b.baseline();
      b.multi();
      b.notify(2, 200);
      b.originSecondary();
      b.single();
    });
    expect(findCutOverOrderViolations(withoutWait)).toEqual(expected);
    const behind = logOf((b) => {
      b.stale();
      b.baseline();
      b.multi();
      b.waitLsn(202);
      b.timelinesOnDest('0/100');
      b.notify(2, 200);
      b.originSecondary();
      b.single();
    });
    expect(findCutOverOrderViolations(behind)).toEqual(expected);
    // The wait_lsn was sent in time but answered only after the AttachedSingle.
    const answeredLate = logOf((b) => {
      b.stale();
      b.baseline();
      b.multi();
      const wait = b.request('node 2', 'POST', `/v1/tenant/${SHARD}/wait_lsn`, {});
      b.notify(2, 200);
      b.originSecondary();
      b.single();
      b.log.answered(wait, 200);
    });
    expect(findCutOverOrderViolations(answeredLate)).toEqual(expected);
  });

  it('neon:C7/C8: the origin set Secondary before the computes were told the destination is flagged', () => {
    const early = logOf((b) => {
      b.notify(1, 200);
      b.stale();
      b.baseline();
      b.multi();
      b.waitLsn(200);
      b.originSecondary();
      b.notify(2, 200);
      b.single();
    });
    expect(findCutOverOrderViolations(early)).toEqual([
      `shard ${SHARD}: cut-over from node 1 to node 2 (generation 2): node 1 set Secondary while the computes were last told node 1 (neon:C7, neon:C8)`,
    ]);
    // A notification that failed is no notification.
    const failed = logOf((b) => {
      b.stale();
      b.baseline();
      b.multi();
      b.waitLsn(200);
      b.notify(2, 503);
      b.originSecondary();
      b.single();
    });
    expect(findCutOverOrderViolations(failed)).toEqual([
      `shard ${SHARD}: cut-over from node 1 to node 2 (generation 2): node 1 set Secondary while the computes were last told nothing (neon:C7, neon:C8)`,
    ]);
  });

  it('exempt: neon:C7’s carry-on (a failed notification, the origin no longer attached or restarted), a cut-over a kill cut off, a direct attach', () => {
    const carryOn = (origin: (b: ReturnType<typeof builder>) => void) =>
      logOf((b) => {
        b.stale();
        b.baseline();
        b.multi();
        b.waitLsn(200);
        b.notify(2, 503);
        origin(b);
        b.originSecondary();
        b.single();
      });
    expect(findCutOverOrderViolations(carryOn((b) => b.originRead(404, { msg: 'not found' })))).toEqual([]);
    expect(findCutOverOrderViolations(carryOn((b) => b.originRead(200, { mode: 'Secondary' })))).toEqual([]);
    expect(findCutOverOrderViolations(carryOn((b) => b.mark(MARKS.restarted('1'))))).toEqual([]);
    // The origin still attached: no carry-on.
    expect(findCutOverOrderViolations(carryOn((b) => b.originRead(200, { mode: 'AttachedStale' })))).toHaveLength(1);
    const killed = logOf((b) => {
      b.stale();
      b.baseline();
      b.multi();
      b.mark(MARKS.gatewayKilled);
      b.put(2, 'AttachedSingle', 2);
    });
    expect(findCutOverOrderViolations(killed)).toEqual([]);
    const direct = logOf((b) => {
      b.put(2, 'AttachedMulti', 3);
      b.put(2, 'AttachedSingle', 3);
    });
    expect(findCutOverOrderViolations(direct)).toEqual([]);
  });

  it('only cut-overs from `since` on are checked (one round’s)', () => {
    const b = builder();
    b.stale();
    b.baseline();
    b.multi();
    b.single();
    expect(findCutOverOrderViolations(b.log.entries, 0)).toHaveLength(1);
    expect(findCutOverOrderViolations(b.log.entries, b.log.position)).toEqual([]);
  });

  it('rollout:O5: a node step started while the nodes out are at the budget is flagged, whatever took them out', () => {
    /** A rollout with budget 1 starts node 1's step after `before` (events on other nodes). */
    const log = (before: [type: string, nodeId: string, payload: object][]) =>
      [
        ['OPERATION_STARTED', null, { kind: 'ROLLOUT', settings: { maxUnavailable: 1 } }, 'r'],
        ...before.map(([type, nodeId, payload]) => [type, nodeId, payload, null]),
        ['ROLLOUT_NODE_STARTED', '1', { node: '1' }, 'r'],
        ['NODE_POLICY_CHANGED', '1', { from: 'ACTIVE', to: 'DRAINING' }, 'd1'],
      ].map(([type, nodeId, payload, operationId], i) => ({
        seq: i + 1,
        type: type as string,
        nodeId: nodeId as string | null,
        operationId: operationId as string | null,
        payload: JSON.stringify(payload),
      }));
    expect(findBudgetViolations(log([]))).toEqual([]);
    for (const [why, out] of [
      ['another drain', ['NODE_POLICY_CHANGED', '3', { from: 'ACTIVE', to: 'DRAINING' }]],
      ['a maintenance', ['MAINTENANCE_PHASE_CHANGED', '3', { from: null, to: 'DRAINING' }]],
      ['a node down', ['NODE_STATE_CHANGED', '3', { availability: 'OFFLINE', cordoned: false }]],
      ['a cordon', ['NODE_STATE_CHANGED', '3', { availability: 'ACTIVE', cordoned: true }]],
    ] as const) {
      expect(findBudgetViolations(log([[...out]])), why).toEqual([`rollout r started node 1's step (event 3) with 1 node(s) out (3), budget 1 (rollout:O5)`]);
    }
    // Back in service before the step: clean.
    const back = log([
      ['NODE_POLICY_CHANGED', '3', { from: 'ACTIVE', to: 'DRAINING' }],
      ['NODE_POLICY_CHANGED', '3', { from: 'DRAINING', to: 'ACTIVE' }],
    ]);
    expect(findBudgetViolations(back)).toEqual([]);
  });
});

/** The crash invariants (campaign/invariants.ts), fed one violation of each kind they check on top of a clean run. */
describe('campaign crash invariants flag each kind of violation', () => {
  type View = Parameters<typeof findViolations>[0];
  type Db = Parameters<typeof findViolations>[1];
  const clean = () => {
    const view: View = {
      nodes: new Map([
        ['1', { id: '1', name: 'node-1', phase: null, cordoned: false, schedulingPolicy: 'ACTIVE' }],
        ['2', { id: '2', name: 'node-2', phase: null, cordoned: false, schedulingPolicy: 'ACTIVE' }],
      ]),
      vms: new Map([
        ['prod/a', { id: 'prod/a', status: 'RUNNING', runStrategy: 'ALWAYS', nodeId: '2', strategy: 'MIGRATE', tracking: null }],
        ['prod/b', { id: 'prod/b', status: 'STOPPED', runStrategy: 'HALTED', nodeId: null, strategy: 'SHUTDOWN', tracking: null }],
      ]),
      shards: new Map([['s1', { id: 's1', attachedNodeId: '2', secondaryNodeIds: ['1'] }]]),
    };
    const db: Db = {
      operations: [{ id: 'op', kind: 'DRAIN', nodeId: '1', state: 'SUCCEEDED', error: null }],
      steps: [{ operationId: 'op', workloadKind: 'shard', workloadId: 's1', state: 'MOVED', reason: null, error: null }],
      events: [
        { seq: 1, type: 'OPERATION_STARTED', nodeId: '1', operationId: 'op', payload: '{}' },
        { seq: 2, type: 'SHARD_MOVED', nodeId: '1', operationId: 'op', payload: JSON.stringify({ shard: 's1' }) },
      ],
      tracking: new Map(),
    };
    const ledger = {
      initialRunStrategy: new Map([
        ['prod/a', 'ALWAYS'],
        ['prod/b', 'ALWAYS'],
      ]),
      startedOperations: new Set(['op']),
      namedFailures: new Set<string>(),
    };
    return { view, db, ledger };
  };

  it('a clean run has none', () => {
    const { view, db, ledger } = clean();
    expect(findViolations(view, db, ledger)).toEqual([]);
  });

  const cases: [string, (c: ReturnType<typeof clean>) => void, string][] = [
    ['an answered operation lost', (c) => c.ledger.startedOperations.add('gone'), 'operation gone was answered to a start and is lost'],
    ['an operation not ended', (c) => (c.db.operations[0]!.state = 'RUNNING'), 'did not end: RUNNING'],
    ['a FAILED operation without why', (c) => Object.assign(c.db.operations[0]!, { state: 'FAILED', error: null }), 'FAILED without naming why'],
    ['two steps for one workload', (c) => c.db.steps.push({ ...c.db.steps[0]! }), 'operation op has two steps for s1'],
    ['a finished step without its terminal event', (c) => c.db.events.pop(), 'step s1 of operation op is MOVED with 0 terminal events'],
    [
      'a terminal event without a step',
      (c) => c.db.events.push({ seq: 3, type: 'SHARD_MOVED', nodeId: '1', operationId: 'op', payload: JSON.stringify({ shard: 's9' }) }),
      'terminal event without a step: op s9',
    ],
    ['a gap in the event log', (c) => (c.db.events[1]!.seq = 3), 'event log: seq 3 where 2 was due (a gap)'],
    ['a shard on an unknown node', (c) => (c.view.shards.get('s1')!.attachedNodeId = '9'), 'shard s1 is attached to unknown node 9'],
    ['a shard attached and secondary on one node', (c) => (c.view.shards.get('s1')!.secondaryNodeIds = ['2']), 'shard s1 is attached and secondary on node 2'],
    ['a secondary listed twice', (c) => (c.view.shards.get('s1')!.secondaryNodeIds = ['1', '1']), 'shard s1 lists a secondary twice'],
    ['a VM between states', (c) => (c.view.vms.get('prod/a')!.status = 'MIGRATING'), 'VM prod/a is MIGRATING after the run quiesced'],
    ['a VM running on a COMPLETED node', (c) => (c.view.nodes.get('2')!.phase = 'COMPLETED'), 'VM prod/a runs on node 2, which is in maintenance (COMPLETED)'],
    [
      'a VM running with another run strategy',
      (c) => (c.view.vms.get('prod/a')!.runStrategy = 'HALTED'),
      'VM prod/a runs with run strategy HALTED, not its own ALWAYS',
    ],
    [
      'tracking on the VM differing from the database',
      (c) => c.db.tracking.set('prod/a', { nodeName: 'node-1', strategy: 'ShutdownAndRestartAfterEnable', savedRunStrategy: 'Always' }),
      'VM prod/a: tracking null on the VM but',
    ],
    [
      'a VM off that nothing will restart',
      (c) => Object.assign(c.view.vms.get('prod/a')!, { status: 'STOPPED', strategy: 'SHUTDOWN_AND_RESTART_AFTER_DISABLE' }),
      'VM prod/a (SHUTDOWN_AND_RESTART_AFTER_DISABLE) is off and nothing will restart it (no tracking)',
    ],
  ];
  for (const [kind, breakIt, flagged] of cases) {
    it(`flags ${kind}`, () => {
      const c = clean();
      breakIt(c);
      const found = findViolations(c.view, c.db, c.ledger);
      expect(
        found.some((v) => v.includes(flagged)),
        JSON.stringify(found),
      ).toBe(true);
    });
  }
});
