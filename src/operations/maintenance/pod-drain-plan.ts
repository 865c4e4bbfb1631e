import type { ClusterBackend } from '../../cluster/backend.ts';
import type { OperationSettings } from '../../config/schema.ts';
import { PreconditionFailedError } from '../../domain/errors.ts';
import { candidateSelector, planPodDrain, POD_BLOCK_CAUSES, podDrainRefusalMessage, type PodDrainOptions, type PodDrainPlan } from '../../domain/pods/drain.ts';

/** k8s:K4: the configured options with a request's overrides. */
export function podDrainOptionsOf(settings: OperationSettings, overrides: Partial<PodDrainOptions> | undefined): PodDrainOptions {
  const defined = Object.fromEntries(Object.entries(overrides ?? {}).filter(([, v]) => v !== undefined && v !== null));
  return { ...settings.podDrain, ...defined };
}

/** k8s:K1–K3: the node's candidate pods, classified now. */
export async function podDrainPlanOf(backend: ClusterBackend, nodeId: string, options: PodDrainOptions, now: number): Promise<PodDrainPlan | null> {
  if (!backend.podDrain) return null;
  return planPodDrain(await backend.podDrain.listNodePods(nodeId, candidateSelector(options)), options, now);
}

/** k8s:K3: one typed refusal naming every blocking pod with its cause and the option that overrides it. */
export function podDrainRefusal(nodeId: string, plan: PodDrainPlan): PreconditionFailedError {
  const blockers = plan.blockers.flatMap((b) => b.pods.map((id) => ({ id, reasons: [`${POD_BLOCK_CAUSES[b.cause].text}: use ${b.override}: true`] })));
  return new PreconditionFailedError('POD_DRAIN_BLOCKED', podDrainRefusalMessage(nodeId, plan), null, blockers);
}
