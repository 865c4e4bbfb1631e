import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ClusterNode } from '../../src/cluster/types.ts';
import { startSecuredServer, type SecuredServer } from '../support/secured-server.ts';
import { untilSubscribed } from '../support/subscribers.ts';

/**
 * Issue 29 point 3: a published event is executed once per distinct subscription
 * (document, variables, token), whatever the number of subscribers, and what is shared is
 * never stale: the same payload object published again after a change is executed again;
 * arguments and selections are never mixed up; a revoked token's subscriber is not served.
 */
let s: SecuredServer | undefined;
afterEach(async () => {
  await s?.stop();
  s = undefined;
});

type Change = { nodeChanged: { id: string; name?: string; schedulingPolicy?: string } };

/** Subscribes over graphql-ws; every delivered change as `id:name:policy` (absent fields empty), errors as `error:<code>`. */
function follow(srv: SecuredServer, token: string, query: string, variables?: Record<string, unknown>, onClosed?: (e: { code: number }) => void): string[] {
  const seen: string[] = [];
  srv.ws(token, { onClosed }).subscribe<Change>(
    { query, variables },
    {
      next: (r) => {
        if (r.errors) seen.push(`error:${String(r.errors[0]!.extensions?.code)}`);
        else seen.push([r.data!.nodeChanged.id, r.data!.nodeChanged.name ?? '', r.data!.nodeChanged.schedulingPolicy ?? ''].join(':'));
      },
      error: () => {},
      complete: () => {},
    },
  );
  return seen;
}

const ALL = 'subscription { nodeChanged { id name schedulingPolicy } }';
const ONE = 'subscription ($id: ID) { nodeChanged(nodeId: $id) { id name schedulingPolicy } }';
const NAMES = 'subscription { nodeChanged { id name } }';

describe('shared subscription results', () => {
  it('five viewers with one token: schedulingPolicy resolved once per change; an operator: once more; every subscriber gets it', async () => {
    s = await startSecuredServer();
    const srv = s;
    const policyOf = vi.spyOn(srv.t.app.storage, 'policyOf');
    const received = [...Array(5)].map(() => follow(srv, srv.tokens.viewer, ALL));
    received.push(follow(srv, srv.tokens.operator, ALL));
    await untilSubscribed(srv.t.app.bus, 'nodeChanged', 6);
    const [node] = await srv.t.cluster.listNodes();
    policyOf.mockClear();
    srv.t.app.bus.publish('nodeChanged', node as ClusterNode);
    await vi.waitFor(() => expect(received.every((r) => r.length === 1)).toBe(true));
    expect(received.map((r) => r[0])).toEqual(Array(6).fill(`${node!.id}:${node!.name}:ACTIVE`));
    expect(policyOf).toHaveBeenCalledTimes(2);
  });

  it('the same payload object published twice, changed in between: every subscriber sees both states, per its own arguments and selection', async () => {
    s = await startSecuredServer();
    const srv = s;
    const [first, second] = await srv.t.cluster.listNodes();
    const payload = { ...first! } as ClusterNode;
    const all = [follow(srv, srv.tokens.viewer, ALL), follow(srv, srv.tokens.viewer, ALL)];
    const mine = follow(srv, srv.tokens.viewer, ONE, { id: payload.id });
    const other = follow(srv, srv.tokens.viewer, ONE, { id: second!.id });
    const names = follow(srv, srv.tokens.viewer, NAMES);
    await untilSubscribed(srv.t.app.bus, 'nodeChanged', 5);

    srv.t.app.bus.publish('nodeChanged', payload);
    await vi.waitFor(() => expect([...all, mine, names].every((r) => r.length === 1)).toBe(true));
    payload.name = 'renamed';
    srv.t.app.bus.publish('nodeChanged', payload);
    srv.t.app.bus.publish('nodeChanged', second!);
    await vi.waitFor(() => expect([other, mine, ...all, names].map((r) => r.length)).toEqual([1, 2, 3, 3, 3]));

    const [id, name] = [payload.id, first!.name];
    const tail = `${second!.id}:${second!.name}:ACTIVE`;
    for (const r of all) expect(r).toEqual([`${id}:${name}:ACTIVE`, `${id}:renamed:ACTIVE`, tail]);
    expect(mine).toEqual([`${id}:${name}:ACTIVE`, `${id}:renamed:ACTIVE`]);
    expect(names).toEqual([`${id}:${name}:`, `${id}:renamed:`, `${second!.id}:${second!.name}:`]);
    expect(other).toEqual([tail]);
  });

  it('policy changes through the API: every subscriber sees PAUSE then ACTIVE, in order', async () => {
    s = await startSecuredServer();
    const srv = s;
    const [node] = await srv.t.cluster.listNodes();
    const watchers = [follow(srv, srv.tokens.viewer, ALL), follow(srv, srv.tokens.viewer, ALL)];
    await untilSubscribed(srv.t.app.bus, 'nodeChanged', 2);
    const configure = async (policy: string) => {
      const r = await srv.gql(`mutation { configureNode(nodeId: "${node!.id}", policy: ${policy}) { __typename } }`, { token: srv.tokens.admin });
      expect(r.body.errors).toBeUndefined();
    };
    await configure('PAUSE');
    await vi.waitFor(() => expect(watchers.every((w) => w.length === 1)).toBe(true));
    await configure('ACTIVE');
    await vi.waitFor(() => expect(watchers.every((w) => w.length === 2)).toBe(true));
    for (const w of watchers) expect(w).toEqual([`${node!.id}:${node!.name}:PAUSE`, `${node!.id}:${node!.name}:ACTIVE`]);
  });

  it("a revoked token's subscriber is not served; another subscriber of the same document and scope is", async () => {
    s = await startSecuredServer();
    const srv = s;
    const { token: doomed } = await srv.t.app.auth.createToken({ name: 'doomed-viewer', scope: 'viewer', createdBy: 'test' });
    const closes: number[] = [];
    const revoked = follow(srv, doomed, ALL, undefined, (e) => closes.push(e.code));
    const kept = follow(srv, srv.tokens.viewer, ALL);
    await untilSubscribed(srv.t.app.bus, 'nodeChanged', 2);
    const [node] = await srv.t.cluster.listNodes();
    srv.t.app.bus.publish('nodeChanged', node as ClusterNode);
    await vi.waitFor(() => expect(revoked.length + kept.length).toBe(2));

    await srv.t.app.auth.revokeToken('doomed-viewer', 'test');
    await vi.waitFor(() => expect(closes).toEqual([4403]));
    srv.t.app.bus.publish('nodeChanged', node as ClusterNode);
    await vi.waitFor(() => expect(kept.length).toBe(2));
    expect(revoked).toEqual([`${node!.id}:${node!.name}:ACTIVE`]);
    expect(kept).toEqual(Array(2).fill(`${node!.id}:${node!.name}:ACTIVE`));
  });
});
