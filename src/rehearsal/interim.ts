/**
 * Interim: the plan basis a rehearsal stores and the comparison startRollout(rehearsal:) makes
 * (issue 33), from the rollout plan alone. `src/domain/rehearsal/plan-changes.ts` (PlanBasis,
 * planChanges) is the richer comparison that also reads the snapshot (PDB names, nodes outside
 * the rollout); until the gateway builds its basis from the snapshot, this one is used.
 */
import type { RolloutPlanView } from '../operations/rollouts/engine.ts';
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
