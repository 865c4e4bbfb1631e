import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ClusterNode } from '../../src/cluster/types.ts';
import { startSecuredServer, type SecuredServer } from '../support/secured-server.ts';
import { untilSubscribed } from '../support/subscribers.ts';

/**
 * Issue 29 point 3: an event is resolved once per distinct subscription (document,
 * variables, token), whatever the number of subscribers; subscribers with another token
 * get their own result (scope checks depend on it).
 */
let s: SecuredServer | undefined;
afterEach(async () => {
  await s?.stop();
  s = undefined;
});

const QUERY = 'subscription { nodeChanged { id schedulingPolicy } }';

describe('shared subscription results', () => {
  it('five viewers with one token: schedulingPolicy resolved once per change; an operator: once more; every subscriber gets it', async () => {
    s = await startSecuredServer();
    const srv = s;
    const policyOf = vi.spyOn(srv.t.app.storage, 'policyOf');
    const received: string[][] = [];
    const subscribe = (token: string) => {
      const mine: string[] = [];
      received.push(mine);
      srv
        .ws(token)
        .subscribe<{ nodeChanged: { id: string; schedulingPolicy: string } }>(
          { query: QUERY },
          { next: (r) => mine.push(`${r.data?.nodeChanged.id}:${r.data?.nodeChanged.schedulingPolicy}`), error: () => {}, complete: () => {} },
        );
    };
    for (let i = 0; i < 5; i++) subscribe(srv.tokens.viewer);
    subscribe(srv.tokens.operator);
    await untilSubscribed(srv.t.app.bus, 'nodeChanged', 6);
    const [node] = await srv.t.cluster.listNodes();
    policyOf.mockClear();
    srv.t.app.bus.publish('nodeChanged', node as ClusterNode);
    await vi.waitFor(() => expect(received.every((r) => r.length === 1)).toBe(true));
    expect(received.map((r) => r[0])).toEqual(Array(6).fill(`${node!.id}:ACTIVE`));
    expect(policyOf).toHaveBeenCalledTimes(2);
  });
});
