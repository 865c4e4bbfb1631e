import { BackendError } from '../../src/cluster/errors.ts';
import { moveKey, nodeChanged, type Runtime } from './runtime.ts';

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
    complete() {
      node.cordoned = cordoned;
      nodeChanged(rt, node);
    },
  });
}
