/**
 * Interim parts of the rehearsal (issue 33) that other parts own once merged: the plan basis
 * and its comparison (reh-domain's `src/domain/rehearsal/plan-changes.ts`: `PlanBasis`,
 * `planChanges`) and the conversion of finished steps to history (its
 * `src/domain/rehearsal/history.ts`: `historyFromSteps`). The lead swaps these for those in
 * src/server.ts; the service takes them as functions and does not care which.
 */
import type { HistoryRecord, RehearsedAction } from '../domain/rehearsal/types.ts';
import type { RolloutPlanView } from '../operations/rollouts/engine.ts';
import type { PrismaClient } from '../store/index.ts';
import type { PlanChange } from './service.ts';

/** What the plan rests on: the settings, the nodes in order and their waves, and per node what its operation would do. */
interface InterimBasis {
  settings: Record<string, unknown>;
  order: string[];
  waves: string[][];
  /** Node id → sorted "workload action" entries and refusals. */
  nodes: Record<string, { work: string[]; refusals: string[] }>;
}

export function interimPlanBasis(plan: RolloutPlanView): InterimBasis {
  const nodes: InterimBasis['nodes'] = {};
  for (const n of plan.nodes) {
    const m = n.maintenance;
    const work = [
      ...(m?.vms.map((v) => `VM ${v.vmId}: ${v.action.kind}${v.action.kind === 'STOP' ? `, restart ${v.action.restart}` : ''}`) ?? []),
      ...(m?.shards.map((s) => `shard ${s.workloadId}: ${s.action}`) ?? []),
      ...(m?.pods?.pods.map((p) => `pod ${p.namespace}/${p.name}: ${p.verdict.action}`) ?? []),
      ...(n.drain?.steps.map((s) => `shard ${s.workloadId}: ${s.action}`) ?? []),
    ].sort();
    const refusals = [...(m?.refusals.map((r) => r.message) ?? []), ...(n.drain?.refusal ? [n.drain.refusal.message] : [])].sort();
    nodes[n.nodeId] = { work, refusals };
  }
  return { settings: { ...plan.settings }, order: plan.order, waves: plan.waves, nodes };
}

const diff = (before: string[], after: string[]) => ({ gone: before.filter((x) => !after.includes(x)), added: after.filter((x) => !before.includes(x)) });

/** The changes that change the plan, the most telling first (the settings, the nodes, the waves, then each node's work). */
export function interimPlanChanges(beforeValue: unknown, afterValue: unknown): PlanChange[] {
  const before = beforeValue as InterimBasis;
  const after = afterValue as InterimBasis;
  const changes: PlanChange[] = [];
  for (const key of Object.keys({ ...before.settings, ...after.settings }).sort()) {
    if (JSON.stringify(before.settings[key]) !== JSON.stringify(after.settings[key]))
      changes.push({ code: 'SETTINGS_CHANGED', message: `${key} is ${JSON.stringify(after.settings[key])}, was ${JSON.stringify(before.settings[key])}` });
  }
  const nodes = diff(before.order, after.order);
  for (const id of nodes.gone) changes.push({ code: 'NODE_LEFT', message: `node ${id} is no longer in the rollout` });
  for (const id of nodes.added) changes.push({ code: 'NODE_JOINED', message: `node ${id} joined the rollout` });
  if (!nodes.gone.length && !nodes.added.length && JSON.stringify(before.waves) !== JSON.stringify(after.waves))
    changes.push({ code: 'WAVES_CHANGED', message: `the waves are ${JSON.stringify(after.waves)}, were ${JSON.stringify(before.waves)}` });
  for (const id of after.order.filter((n) => before.nodes[n])) {
    const was = before.nodes[id]!;
    const now = after.nodes[id]!;
    const refusals = diff(was.refusals, now.refusals);
    for (const r of refusals.added) changes.push({ code: 'NODE_REFUSED', message: `node ${id}: ${r}` });
    for (const r of refusals.gone) changes.push({ code: 'NODE_NO_LONGER_REFUSED', message: `node ${id}: no longer refused (${r})` });
    const work = diff(was.work, now.work);
    for (const w of work.added) changes.push({ code: 'WORK_CHANGED', message: `node ${id}: now ${w}` });
    for (const w of work.gone) changes.push({ code: 'WORK_CHANGED', message: `node ${id}: no longer ${w}` });
  }
  return changes;
}

const ACTIONS: Readonly<Record<string, RehearsedAction>> = {
  'vm:MIGRATE': 'VM_MIGRATE',
  'vm:STOP': 'VM_STOP',
  'vm:RESTART': 'VM_STOP',
  'shard:CUT_OVER': 'SHARD_CUT_OVER',
};

/** How many finished steps the history reads at most (the newest): bounds the request the worker gets. */
const HISTORY_LIMIT = 50_000;

/** The finished steps of earlier operations, newest first (the database read; the conversion is `interimHistoryFromSteps`'s). */
export async function readFinishedSteps(prisma: PrismaClient) {
  return prisma.operationStep.findMany({
    where: { state: 'MOVED', startedAt: { not: null }, finishedAt: { not: null } },
    select: { workloadKind: true, workloadId: true, action: true, fromNodeId: true, startedAt: true, finishedAt: true },
    orderBy: { finishedAt: 'desc' },
    take: HISTORY_LIMIT,
  });
}

export function interimHistoryFromSteps(rows: Awaited<ReturnType<typeof readFinishedSteps>>): HistoryRecord[] {
  return rows.flatMap((r) => {
    const action = ACTIONS[`${r.workloadKind}:${r.action}`];
    if (!action || !r.startedAt || !r.finishedAt) return [];
    return [{ action, workloadId: r.workloadId, nodeId: r.fromNodeId, durationMs: r.finishedAt.getTime() - r.startedAt.getTime(), at: r.finishedAt.getTime() }];
  });
}

/**
 * Stands for reh-domain's `aggregateSamples(samples, waves)` until it is merged: a rehearsal
 * that gets here fails with this message, rather than storing a report nobody checked.
 */
export function interimAggregate(): never {
  throw new Error('the rehearsal report (aggregateSamples, src/domain/rehearsal/report.ts) is not part of this build yet');
}
