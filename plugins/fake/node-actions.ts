import { BackendError } from '../../src/cluster/errors.ts';
import type { ClusterNode } from '../../src/cluster/types.ts';
import { moveKey, nodeChanged, type Runtime } from './runtime.ts';

/** What a (un)cordon does once its latency has run (also after a reload, see moves-after-crash.ts). */
export function finishCordon(rt: Runtime, node: ClusterNode, cordoned: boolean): void {
  node.cordoned = cordoned;
  nodeChanged(rt, node);
}

export async function setCordoned(rt: Runtime, id: string, cordoned: boolean): Promise<void> {
  const node = rt.state.node(id);
  const key = moveKey('node', id);
  const inFlight = rt.moves.get(key);
  if (inFlight) {
    if (inFlight.goal === String(cordoned)) return inFlight.promise;
    throw new BackendError('Conflict', `node ${id} is busy: a ${cordoned ? 'uncordon' : 'cordon'} is in progress`, { kind: 'node', id });
  }
  if (node.cordoned === cordoned) return;
  rt.state.requireOnline(id);
  rt.faults.maybeFail('cordon', { kind: 'node', id });
  return rt.moves.start(key, {
    kind: 'cordon',
    latencyMs: rt.latencies.cordon,
    goal: String(cordoned),
    result: { kind: 'cordon', nodeId: id, cordoned },
    complete: () => finishCordon(rt, node, cordoned),
  });
}
