import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSecuredServer, type SecuredServer } from '../support/secured-server.ts';
import { MUTATIONS, queryOf, SIMULATION_MUTATIONS } from './scope-table.ts';

let s: SecuredServer;
beforeAll(async () => {
  s = await startSecuredServer();
});
afterAll(async () => {
  await s?.stop();
});

const rowsFor = (action: string) => s.t.db.prisma.auditEntry.findMany({ where: { action } });

describe('audit rows for every state-changing call, with the token name', () => {
  const calls: [string, string][] = [
    ...Object.entries(MUTATIONS)
      .filter(([name]) => name !== 'simulation')
      .map(([name, entry]) => [name, queryOf(entry)] as [string, string]),
    ...Object.entries(SIMULATION_MUTATIONS).map(([name, query]) => [`simulation.${name}`, query] as [string, string]),
  ];
  for (const [action, query] of calls) {
    it(action, async () => {
      const before = (await rowsFor(action)).length;
      const res = await s.gql(query, { token: s.tokens.admin });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      const rows = await rowsFor(action);
      expect(rows.length).toBe(before + 1);
      const row = rows.at(-1)!;
      expect(row.actor).toBe('test-admin');
      expect(row.at).toBeInstanceOf(Date);
      expect(row.outcome).toMatch(/^(OK|[A-Z_]+)$/);
      expect(JSON.parse(row.arguments)).toBeTypeOf('object');
    });
  }

  it('records arguments, reason and outcome; the operation shows who started it and why', async () => {
    const res = await s.gql('mutation { startNodeDrain(nodeId: "1", reason: "kernel update") { __typename ... on Operation { id startedBy reason } } }', {
      token: s.tokens.operator,
    });
    const op = res.body.data.startNodeDrain;
    expect(op).toMatchObject({ __typename: 'Operation', startedBy: 'test-operator', reason: 'kernel update' });
    const again = await s.gql(`{ operation(id: "${op.id}") { ... on Operation { startedBy reason } } }`, { token: s.tokens.viewer });
    expect(again.body.data.operation).toEqual({ startedBy: 'test-operator', reason: 'kernel update' });
    const conflict = await s.gql('mutation { startNodeDrain(nodeId: "1", reason: "twice") { __typename } }', { token: s.tokens.operator });
    expect(conflict.body.data.startNodeDrain.__typename).not.toBe('Operation');

    const log = await s.gql(
      '{ auditLog(first: 10, nodeId: "1", actor: "test-operator") { totalCount edges { node { actor action arguments reason outcome nodeId at } } } }',
      { token: s.tokens.viewer },
    );
    const entries = log.body.data.auditLog.edges.map((e: { node: any }) => e.node);
    expect(log.body.data.auditLog.totalCount).toBe(2);
    // Newest first.
    expect(entries[0]).toMatchObject({ actor: 'test-operator', action: 'startNodeDrain', reason: 'twice', nodeId: '1' });
    expect(entries[0].outcome).not.toBe('OK');
    expect(entries[1]).toMatchObject({ action: 'startNodeDrain', reason: 'kernel update', outcome: 'OK' });
    expect(JSON.parse(entries[1].arguments)).toMatchObject({ nodeId: '1', reason: 'kernel update' });
  });
});

describe('auditLog', () => {
  it('pages forward with cursors and filters by actor, action, node and time range', async () => {
    const all = await s.gql('{ auditLog(first: 1000) { totalCount edges { cursor node { id at actor } } } }', { token: s.tokens.viewer });
    const total = all.body.data.auditLog.totalCount;
    expect(total).toBeGreaterThan(10);
    const ids: string[] = [];
    let after: string | null = null;
    for (;;) {
      const page: any = await s.gql(
        'query($after: String) { auditLog(first: 4, after: $after) { edges { node { id } } pageInfo { hasNextPage endCursor } } }',
        {
          token: s.tokens.viewer,
          variables: { after },
        },
      );
      const conn = page.body.data.auditLog;
      ids.push(...conn.edges.map((e: { node: { id: string } }) => e.node.id));
      if (!conn.pageInfo.hasNextPage) break;
      after = conn.pageInfo.endCursor;
    }
    expect(ids).toEqual(all.body.data.auditLog.edges.map((e: { node: { id: string } }) => e.node.id));
    expect(new Set(ids).size).toBe(total);

    const byAction = await s.gql('{ auditLog(action: "configureNode") { totalCount edges { node { action } } } }', { token: s.tokens.viewer });
    expect(byAction.body.data.auditLog.totalCount).toBeGreaterThan(0);
    expect(byAction.body.data.auditLog.edges.every((e: any) => e.node.action === 'configureNode')).toBe(true);
    const byActor = await s.gql('{ auditLog(actor: "nobody") { totalCount } }', { token: s.tokens.viewer });
    expect(byActor.body.data.auditLog.totalCount).toBe(0);

    const times = all.body.data.auditLog.edges.map((e: any) => e.node.at as string);
    const future = await s.gql(`{ auditLog(from: "2999-01-01T00:00:00Z") { totalCount } }`, { token: s.tokens.viewer });
    expect(future.body.data.auditLog.totalCount).toBe(0);
    const window = await s.gql(`{ auditLog(from: "${times.at(-1)}", to: "2999-01-01T00:00:00Z") { totalCount } }`, { token: s.tokens.viewer });
    expect(window.body.data.auditLog.totalCount).toBe(total);
    const before = await s.gql(`{ auditLog(to: "${times.at(-1)}") { totalCount } }`, { token: s.tokens.viewer });
    expect(before.body.data.auditLog.totalCount).toBe(0);

    const bad = await s.gql('{ auditLog(after: "garbage") { totalCount } }', { token: s.tokens.viewer });
    expect(bad.body.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  });
});
