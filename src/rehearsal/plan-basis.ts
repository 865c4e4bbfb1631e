/**
 * The gateway's side of "when a rehearsal is stale" (issue 33, docs/rehearsal.md): fills the
 * domain's PlanBasis from the rollout's plan and the cluster as the rollout sees it. The
 * comparison itself is `planChanges` in src/domain/rehearsal/plan-changes.ts, its one home.
 */
import type { PlanBasis, PlanBasisNode, PlanBasisShard, PlanBasisVm } from '../domain/rehearsal/plan-changes.ts';
import { outOfService, type RolloutNodeView } from '../domain/rollouts.ts';
import type { StepRecord } from '../domain/operations.ts';
import type { VmPlanEntry } from '../domain/vm/types.ts';
import type { RolloutInput, RolloutPlanView } from '../operations/rollouts/engine.ts';

/**
 * What `plan` rests on. `cluster` is every node (the rollout's and the others: they count for
 * the budget and quorum, rollout:O2, rollout:O5). Pods carry no PodDisruptionBudget here: no
 * backend-neutral read of PDBs exists outside the plugins' snapshots, so `pdb` is null and a
 * PDB change shows only where it changes a pod's verdict or a node's refusal.
 */
export function planBasisOf(input: RolloutInput, plan: RolloutPlanView, cluster: readonly RolloutNodeView[]): PlanBasis {
  const planned = new Map(plan.nodes.map((n) => [n.nodeId, n]));
  const nodes = cluster.map((n): PlanBasisNode => {
    const node: PlanBasisNode = {
      nodeId: n.id,
      zone: n.zone,
      roles: n.roles,
      labels: n.labels,
      availability: n.availability,
      cordoned: n.cordoned,
      outOfService: outOfService(n),
    };
    const p = planned.get(n.id);
    if (!p) return node;
    const m = p.maintenance;
    const refusals = [...(m?.refusals.map((r) => r.code) ?? []), ...[m?.shardRefusal, p.drain?.refusal].flatMap((e) => (e ? [refusalCode(e)] : []))];
    return {
      ...node,
      refusals,
      ...(m && {
        vms: m.vms.map(vmOf),
        pods: (m.pods?.pods ?? []).map((pod) => ({
          id: `${pod.namespace}/${pod.name}`,
          verdict: pod.verdict.action === 'ERROR' ? `ERROR:${pod.verdict.cause}` : pod.verdict.action,
          pdb: null,
        })),
      }),
      shards: [...(m?.shards ?? []), ...(p.drain?.steps ?? [])].map(shardOf),
    };
  });
  return { settings: plan.settings, selector: input.selector ?? null, order: plan.order, waves: plan.waves, nodes };
}

const vmOf = (vm: VmPlanEntry): PlanBasisVm => ({
  id: vm.vmId,
  strategy: vm.strategy,
  nonMigratable: vm.nonMigratable.map((r) => r.code),
  evictionStrategy: vm.evictionStrategy,
  action: vm.action.kind,
  ...(vm.action.kind === 'STOP' && { restart: vm.action.restart }),
});

const shardOf = (s: StepRecord): PlanBasisShard => ({ id: s.workloadId, state: s.state, reason: s.reason });

/** A typed refusal's reason or code (PreconditionFailedError's reason says which rule); its words otherwise. */
const refusalCode = (e: Error): string => {
  const { reason, code } = e as { reason?: unknown; code?: unknown };
  return typeof reason === 'string' ? reason : typeof code === 'string' ? code : e.message;
};
