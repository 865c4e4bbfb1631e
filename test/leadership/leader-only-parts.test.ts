import { describe, expect, it } from 'vitest';
import type { ClusterBackend } from '../../src/cluster/backend.ts';
import { BackendError } from '../../src/cluster/errors.ts';
import { leaderOnlyBackend } from '../../src/leadership/leader-only-backend.ts';

/** ha:L2 for the Neon-parity parts of the contract: a stand-by may read them, not act through them. */
describe('the leader-only backend gates failover, placement and registry too', () => {
  it('actions are refused on a stand-by and pass on the leader; describe, registration and tombstones are reads', async () => {
    let leading = false;
    const calls: string[] = [];
    const backend = {
      name: 'x',
      failover: { failOverShard: async () => void calls.push('failOverShard'), setNodeAvailability: async () => void calls.push('setNodeAvailability') },
      placement: { placeShard: async () => void calls.push('placeShard'), describeShard: async () => (calls.push('describeShard'), null) },
      registry: {
        register: async () => (calls.push('register'), 'created'),
        registration: () => (calls.push('registration'), null),
        tombstones: async () => [],
      },
    } as unknown as ClusterBackend;
    const gated = leaderOnlyBackend(backend, () => leading);
    await expect(gated.failover!.failOverShard('s', { fromNodeId: '1', toNodeId: '2' })).rejects.toBeInstanceOf(BackendError);
    await expect(gated.placement!.placeShard('s', { attachedNodeId: '2', secondaryNodeIds: [] })).rejects.toThrow(/not the leader/);
    await expect(gated.registry!.register({} as never)).rejects.toThrow(/not the leader/);
    expect(await gated.placement!.describeShard('s')).toBeNull();
    expect(gated.registry!.registration('1')).toBeNull();
    leading = true;
    await gated.failover!.setNodeAvailability('1', 'OFFLINE');
    expect(calls).toEqual(['describeShard', 'registration', 'setNodeAvailability']);
  });
});
