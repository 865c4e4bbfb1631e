import { describe, expect, it } from 'vitest';
import type { ClusterBackend } from '../../src/cluster/backend.ts';
import { leaderOnlyBackend } from '../../src/leadership/leader-only-backend.ts';

describe('ha:L2 gate over the Kubernetes capabilities (k8s:K5, k8s:H3, k8s:C9)', () => {
  it('a stand-by may read pods and the delegate, but not evict, mark, clear or cancel', async () => {
    const calls: string[] = [];
    const act = (name: string) => async () => void calls.push(name);
    const backend = {
      name: 'k',
      podDrain: { listNodePods: act('list'), podGone: act('gone'), evictPod: act('evict'), evictVmPod: act('evictVm') },
      nodeMaintenance: { markMaintenance: act('mark'), clearMaintenance: act('clear'), cancelMigrations: act('cancel'), delegate: null },
      confirmNodeDown: act('confirm'),
    } as unknown as ClusterBackend;
    const gated = leaderOnlyBackend(backend, () => false);
    await gated.podDrain!.listNodePods('n', '');
    await gated.podDrain!.podGone({ namespace: 'a', name: 'b', uid: 'u' });
    expect(gated.nodeMaintenance!.delegate).toBeNull();
    for (const call of [
      () => gated.podDrain!.evictPod({ namespace: 'a', name: 'b' }, 0),
      () => gated.podDrain!.evictVmPod('a/b', 0),
      () => gated.nodeMaintenance!.markMaintenance('n', 'REQUESTED', { forced: false }),
      () => gated.nodeMaintenance!.clearMaintenance('n'),
      () => gated.nodeMaintenance!.cancelMigrations('n'),
      () => gated.confirmNodeDown!('n'),
    ])
      await expect(call()).rejects.toThrow(/not the leader/);
    expect(calls).toEqual(['list', 'gone']);
  });
});
