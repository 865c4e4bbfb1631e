/**
 * ha:DB3, ha:DB4: every repository and every hot-path statement, the journal included, on
 * both dialects — a real SQLite file and a real PostgreSQL server, the same assertions.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { newOperation, type StepRecord } from '../../src/domain/operations.ts';
import { Journal } from '../../src/operations/core/journal.ts';
import { AuditLog } from '../../src/store/audit-log.ts';
import { createRepositories, type Repositories } from '../../src/store/repositories.ts';
import type { Database } from '../../src/store/database.ts';
import { DIALECTS, openTestDatabase, postgresSkipReason } from '../support/test-database.ts';

const START = Date.UTC(2026, 0, 1, 12, 0, 0, 123);

function step(id: string, seq: number, change: Partial<StepRecord> = {}): StepRecord {
  return {
    workloadKind: 'shard',
    workloadId: id,
    action: 'CUT_OVER',
    state: 'PLANNED',
    reason: null,
    error: null,
    fromNodeId: '1',
    toNodeId: '2',
    seq,
    startedAt: null,
    finishedAt: null,
    ...change,
  };
}

const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const db of opened.splice(0)) await db.close();
});

describe.each(DIALECTS)('repositories on %s', (dialect) => {
  const skip = dialect === 'postgresql' ? postgresSkipReason() : null;

  async function repositories(): Promise<{ store: Repositories; audit: AuditLog; reopen: () => Repositories; db: Database }> {
    const db = await openTestDatabase({ dialect });
    opened.push(db);
    expect(db.dialect).toBe(dialect);
    const reopen = () => createRepositories(db.prisma, db.hotPath);
    return { store: reopen(), audit: new AuditLog(db.prisma), reopen, db };
  }

  it.skipIf(skip)('operations: create with a compact plan, upsert steps (hot path), progress, finish, interrupted', async () => {
    const { store } = await repositories();
    const plan = [step('t/0', 0), step('t/1', 1), step('t/2', 2, { state: 'SKIPPED', reason: 'NO_SECONDARY', toNodeId: null })];
    const op = newOperation({ id: 'op-1', kind: 'DRAIN', nodeId: '1', meta: { actor: 'alice', reason: 'kernel' }, steps: plan, now: START });
    await store.commit([store.operations.create(op, { settings: { maxConcurrentMoves: 4 } }, plan)]);

    // Planned steps come from the stored plan; recorded ones overlay them.
    expect((await store.operations.steps('op-1')).map((s) => [s.workloadId, s.state])).toEqual([
      ['t/0', 'PLANNED'],
      ['t/1', 'PLANNED'],
      ['t/2', 'SKIPPED'],
    ]);
    await store.commit(
      store.operations.writeSteps([
        { operationId: 'op-1', step: step('t/0', 0, { state: 'MOVING', startedAt: START + 1 }) },
        { operationId: 'op-1', step: step('t/1', 1, { state: 'FAILED', error: 'it\'s "quoted"', startedAt: START + 1, finishedAt: START + 2 }) },
      ]),
    );
    // The same key again: an update, not a second row.
    await store.commit(
      store.operations.writeSteps([{ operationId: 'op-1', step: step('t/0', 0, { state: 'MOVED', startedAt: START + 1, finishedAt: START + 5 }) }]),
    );
    const steps = await store.operations.steps('op-1');
    expect(steps.map((s) => [s.workloadId, s.state, s.startedAt, s.finishedAt, s.error])).toEqual([
      ['t/0', 'MOVED', START + 1, START + 5, null],
      ['t/1', 'FAILED', START + 1, START + 2, 'it\'s "quoted"'],
      ['t/2', 'SKIPPED', null, START, null],
    ]);

    await store.commitJournal({ steps: [], operations: [{ ...op, counts: { ...op.counts, moved: 1 }, waitingOn: null, finishedAt: null }], events: [] });
    expect((await store.operations.find('op-1'))?.counts.moved).toBe(1);
    expect(await store.operations.params('op-1')).toEqual({ settings: { maxConcurrentMoves: 4 } });

    const interrupted = await store.operations.interrupted(['DRAIN']);
    expect(interrupted.map((i) => [i.snapshot.id, i.snapshot.createdAt, i.steps.length])).toEqual([['op-1', START, 3]]);

    await store.commit([store.operations.finish({ ...op, state: 'SUCCEEDED', finishedAt: START + 9 })]);
    expect(await store.operations.interrupted(['DRAIN'])).toEqual([]);
    expect((await store.operations.list({ nodeId: '1', states: ['SUCCEEDED'] })).map((o) => [o.id, o.finishedAt])).toEqual([['op-1', START + 9]]);
  });

  it.skipIf(skip)('a thousand steps in one statement, and more events than one statement holds', async () => {
    const { store } = await repositories();
    const plan = Array.from({ length: 1000 }, (_, i) => step(`t/${i}`, i));
    const op = newOperation({ id: 'big', kind: 'DRAIN', nodeId: '1', meta: { actor: 'a', reason: null }, steps: plan, now: START });
    await store.commit([store.operations.create(op, {}, plan)]);
    const writes = store.operations.writeSteps(plan.map((s) => ({ operationId: 'big', step: { ...s, state: 'MOVED' as const, finishedAt: START + s.seq } })));
    expect(writes).toHaveLength(1);
    await store.commit(writes);
    expect((await store.operations.steps('big')).filter((s) => s.state === 'MOVED')).toHaveLength(1000);

    const events = Array.from({ length: 2500 }, (_, i) => ({
      type: 'SHARD_MOVED',
      nodeId: '1',
      operationId: 'big',
      payload: { shard: `t/${i}`, note: i % 2 ? 'ünïcødé' : null },
      at: START + i,
    }));
    await store.commitJournal({ steps: [], operations: [], events });
    expect(await store.events.latestSeq()).toBe(2500);
    const page = await store.events.read({ after: 2490 }, 100);
    expect(page.map((e) => e.seq)).toEqual([2491, 2492, 2493, 2494, 2495, 2496, 2497, 2498, 2499, 2500]);
    expect(JSON.parse(page[0]!.payload)).toEqual({ shard: 't/2490', note: null });
    expect(page[1]!.at.getTime()).toBe(START + 2491);
    expect(JSON.parse((await store.events.read({ after: 1, types: ['SHARD_MOVED'] }, 1))[0]!.payload).note).toBe('ünïcødé');
  });

  it.skipIf(skip)('the journal commits steps, progress and events together', async () => {
    const { store } = await repositories();
    const plan = [step('a', 0), step('b', 1)];
    const op = newOperation({ id: 'j', kind: 'FILL', nodeId: '2', meta: { actor: 'a', reason: null }, steps: plan, now: START });
    await store.commit([store.operations.create(op, {}, plan)]);
    const flushed: string[][] = [];
    const journal = new Journal(store, (_ops, steps) => flushed.push(steps.map((s) => s.step.workloadId)));
    journal.step('j', { ...plan[0]!, state: 'MOVED', finishedAt: START + 1 });
    journal.operation({ ...op, counts: { ...op.counts, planned: 1, moved: 1 } });
    journal.event({ type: 'SHARD_MOVED', nodeId: '2', operationId: 'j', payload: { shard: 'a' }, at: START + 1 });
    await journal.flush();
    expect(flushed).toEqual([['a']]);
    expect((await store.operations.steps('j')).map((s) => s.state)).toEqual(['MOVED', 'PLANNED']);
    expect((await store.operations.find('j'))?.counts).toMatchObject({ planned: 1, moved: 1 });
    expect((await store.events.read({ operationId: 'j' }, 10)).map((e) => e.type)).toEqual(['SHARD_MOVED']);
  });

  it.skipIf(skip)('the journal writes a step the plan did not (an insert), beside steps already written (an update)', async () => {
    const { store } = await repositories();
    const plan = [step('a', 0)];
    const op = newOperation({ id: 'k', kind: 'FILL', nodeId: '2', meta: { actor: 'a', reason: null }, steps: plan, now: START });
    await store.commit([store.operations.create(op, {}, plan)]);
    const journal = new Journal(store, () => {});
    journal.step('k', { ...plan[0]!, state: 'MOVING', startedAt: START });
    await journal.flush();
    journal.step('k', { ...plan[0]!, state: 'MOVED', startedAt: START, finishedAt: START + 1 });
    journal.step('k', { ...step('late', 1), state: 'MOVING', startedAt: START + 2 });
    await journal.flush();
    expect((await store.operations.steps('k')).map((s) => [s.workloadId, s.state])).toEqual([
      ['a', 'MOVED'],
      ['late', 'MOVING'],
    ]);
  });

  it.skipIf(skip)('a journal batch behind a fence goes through the fence in the same transaction, and a refusal writes nothing (ha:L3)', async () => {
    const { db } = await repositories();
    let refuse = false;
    const failed: unknown[] = [];
    const fence = {
      // A real statement of the transaction, failing it when told to (as lockkeeper_fence does).
      statements: () => [
        refuse ? db.prisma.$executeRawUnsafe('UPDATE "NoSuchTable" SET x = 1') : db.prisma.$executeRawUnsafe('UPDATE "Operation" SET "id" = "id" WHERE 1 = 0'),
      ],
      failed: (e: unknown) => (failed.push(e), false),
    };
    let commits = 0;
    const store = createRepositories(db.prisma, db.hotPath, fence, () => commits++);
    const plan = [step('a', 0), step('b', 1)];
    const op = newOperation({ id: 'f', kind: 'FILL', nodeId: '2', meta: { actor: 'a', reason: null }, steps: plan, now: START });
    await store.commit([store.operations.create(op, {}, plan)]);
    const events = Array.from({ length: 3 }, (_, i) => ({ type: 'SHARD_MOVED', nodeId: '2', operationId: 'f', payload: { i }, at: START + i }));
    const batch = {
      steps: [{ operationId: 'f', step: { ...plan[1]!, state: 'MOVED' as const, startedAt: START + 1, finishedAt: START + 2 } }],
      operations: [{ ...op, counts: { ...op.counts, moved: 1 } }],
      events,
    };

    refuse = true;
    await expect(store.commitJournal(batch)).rejects.toThrow();
    expect(failed).toHaveLength(1);
    expect((await store.operations.steps('f')).map((s) => s.state)).toEqual(['PLANNED', 'PLANNED']);
    expect(await store.events.latestSeq()).toBe(0);

    refuse = false;
    const before = commits;
    await store.commitJournal(batch);
    expect(commits).toBe(before + 1);
    expect((await store.operations.steps('f')).map((s) => [s.state, s.finishedAt])).toEqual([
      ['PLANNED', null],
      ['MOVED', START + 2],
    ]);
    expect((await store.operations.find('f'))?.counts.moved).toBe(1);
    expect((await store.events.read({ operationId: 'f' }, 10)).map((e) => [e.seq, JSON.parse(e.payload).i, e.at.getTime()])).toEqual([
      [1, 0, START],
      [2, 1, START + 1],
      [3, 2, START + 2],
    ]);
  });

  it.skipIf(skip)('policies and maintenance states: persisted with their events, cached after commit, reloaded', async () => {
    const { store, reopen } = await repositories();
    await store.policies.load();
    expect(store.policies.get('1')).toBe('ACTIVE');
    expect(await store.policies.transition('1', { type: 'configure', policy: 'PAUSE' }, null, START)).toEqual({ from: 'ACTIVE', to: 'PAUSE' });
    await store.maintenanceStates.load();
    const state = { phase: 'DRAINING' as const, deadline: START + 60_000, force: true, reason: 'bios' };
    await store.commit(store.maintenanceStates.writes('1', state, { at: START, operationId: null, payload: { cause: 'validated' } }));
    store.maintenanceStates.applied('1', state);

    const fresh = reopen();
    await fresh.policies.load();
    await fresh.maintenanceStates.load();
    expect(fresh.policies.get('1')).toBe('PAUSE');
    expect(fresh.maintenanceStates.get('1')).toEqual(state);
    expect((await store.events.read({ nodeId: '1' }, 10)).map((e) => e.type)).toEqual(['NODE_POLICY_CHANGED', 'MAINTENANCE_PHASE_CHANGED']);
  });

  it.skipIf(skip)('VM tracking and the audit log', async () => {
    const { store, audit } = await repositories();
    await store.vmTracking.record('ns/a', { nodeName: 'node-1', strategy: 'ShutdownAndRestartAfterDisable', savedRunStrategy: 'Always' }, START);
    await store.vmTracking.record('ns/a', { nodeName: 'node-2', strategy: 'Shutdown', savedRunStrategy: null }, START);
    expect([...(await store.vmTracking.all())]).toEqual([['ns/a', { nodeName: 'node-2', strategy: 'Shutdown', savedRunStrategy: null }]]);
    await store.vmTracking.clear('ns/a');
    expect((await store.vmTracking.all()).size).toBe(0);

    for (let i = 0; i < 5; i++) {
      await audit.record({
        actor: i % 2 ? 'bob' : 'alice',
        action: 'startNodeDrain',
        arguments: { i },
        reason: null,
        outcome: 'OK',
        nodeId: '1',
        at: new Date(START),
      });
    }
    const first = await audit.page({ actor: 'alice' }, 2, null);
    expect(first).toMatchObject({ hasNextPage: true, totalCount: 3 });
    const last = first.rows.at(-1)!;
    const second = await audit.page({ actor: 'alice' }, 2, { at: last.at, id: last.id });
    expect([...first.rows, ...second.rows].map((r) => JSON.parse(r.arguments).i)).toEqual([4, 2, 0]);
    expect(second.hasNextPage).toBe(false);
  });
});
