/**
 * Issue 27, point 1, the edges: SQLite made unavailable by fault injection in the store, as in
 * database-outage.test.ts. A token verified before the outage works from the cache only for
 * `auth.outageGraceMs` after it was verified (the wall clock is injected); the simulated
 * cluster's controls, audited like every mutation, are not done while the database cannot
 * record them, and answer their typed UNAVAILABLE naming it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startSecuredServer, type SecuredServer } from '../support/secured-server.ts';

const topology = { nodes: [{ id: '1' }, { id: '2' }, { id: '3' }], shards: [] };

let s: SecuredServer | undefined;
afterEach(async () => {
  await s?.stop();
  s = undefined;
});

describe('SQLite unavailable (fault injection in the store)', () => {
  it('ha:DB5: a token verified before the outage keeps working for auth.outageGraceMs after it was verified, then gets 503 like an unknown one', async () => {
    let now = Date.UTC(2026, 0, 1);
    s = await startSecuredServer({ topology, dialect: 'sqlite', security: { auth: { outageGraceMs: 60_000 }, now: () => now } });
    const { t, tokens } = s;
    const query = (token: string) =>
      fetch(s!.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ query: '{ nodes { totalCount } }' }),
      });
    // Verified by the database at `now`.
    expect(((await (await query(tokens.operator)).json()) as { data: unknown }).data).toEqual({ nodes: { totalCount: 3 } });

    t.db.faults!.unavailable(true);
    now += 59_999;
    const kept = await query(tokens.operator);
    expect(kept.status).toBe(200);
    expect(((await kept.json()) as { data: unknown }).data).toEqual({ nodes: { totalCount: 3 } });
    // A use from the cache does not extend the window: it counts from the database's word.
    now += 2;
    const expired = await query(tokens.operator);
    expect(expired.status).toBe(503);
    expect(expired.headers.get('retry-after')).toBe('5');
    const body = (await expired.json()) as { data?: unknown; errors: { message: string; extensions: { code: string } }[] };
    expect(body.data).toBeUndefined();
    expect(body.errors[0]!.extensions.code).toBe('UNAVAILABLE');
    expect(body.errors[0]!.message).toMatch(/^database unavailable: .*lockkeeper\.db/);

    // The database back: verified again, and the window starts over.
    t.db.faults!.unavailable(false);
    expect(await t.app.database.check()).toBe('up');
    expect((await query(tokens.operator)).status).toBe(200);
  });

  it('ha:DB5: simulation controls during the outage answer their typed UnavailableError naming the database and change nothing', async () => {
    s = await startSecuredServer({ topology, dialect: 'sqlite' });
    const { t, tokens } = s;
    const file = t.db.file;
    const admin = tokens.admin;
    const latencies = async () => (await s!.gql('{ simulation { latencies { migrate } } }', { token: admin })).body.data.simulation.latencies.migrate;
    const before = await latencies();

    t.db.faults!.unavailable(true);
    const typed = { __typename: 'UnavailableError', code: 'UNAVAILABLE', database: file };
    const restart = await s.gql('mutation { simulation { restartNode(nodeId: "3") { __typename ... on UnavailableError { code database } } } }', {
      token: admin,
    });
    expect(restart.status).toBe(200);
    expect(restart.body.data.simulation.restartNode).toEqual(typed);
    const offline = await s.gql(
      'mutation { simulation { setNodeOnline(nodeId: "3", online: false) { __typename ... on UnavailableError { code database } } } }',
      { token: admin },
    );
    expect(offline.body.data.simulation.setNodeOnline).toEqual(typed);
    const slower = await s.gql(
      `mutation { simulation { setLatencies(input: { migrate: ${before + 1000} }) { __typename ... on UnavailableError { code database } } } }`,
      {
        token: admin,
      },
    );
    expect(slower.body.data.simulation.setLatencies).toEqual(typed);
    // A control without a result union (clearFaults) answers a GraphQL error with the same code, naming the database.
    const clear = await s.gql('mutation { simulation { clearFaults { __typename } } }', { token: admin });
    expect(clear.status).toBe(200);
    expect(clear.body.errors![0]!.extensions).toEqual({ code: 'UNAVAILABLE', database: file });

    t.db.faults!.unavailable(false);
    expect(await t.app.database.check()).toBe('up');
    // Nothing was done: node 3 heartbeats as before, the latency is what it was, and no audit entry claims otherwise.
    const node = await s.gql('{ node(id: "3") { ... on ClusterNode { availability } } }', { token: admin });
    expect(node.body.data.node.availability).toBe('ACTIVE');
    expect(await latencies()).toBe(before);
    const audit = await t.db.prisma.auditEntry.findMany({ where: { action: { startsWith: 'simulation.' } } });
    expect(audit).toEqual([]);
  });
});
