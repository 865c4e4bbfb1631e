/**
 * The campaign's checker reads steps as the store does (issue 16 point 1): a step the plan
 * already SKIPPED lives in the stored plan until its run writes a row; a kill before that leaves
 * it there alone, and the checker must not call its admission's SHARD_SKIPPED event orphaned
 * (fake crash campaign, seed 1 round 17, a kill just after a drain's admission).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { findViolations, readDatabase } from '../../campaign/invariants.ts';
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
